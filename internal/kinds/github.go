package kinds

import (
	"github.com/cup-dev/cup/internal/registry"
	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/scm/github"
)

func init() { registry.SCMs.Register("github", newGitHub) }

func newGitHub(c registry.SCMConfig) (scm.Provider, error) {
	owner, name, err := ownerRepo(c.Repository)
	if err != nil {
		return nil, err
	}
	return github.New(github.Config{BaseURL: c.BaseURL, Owner: owner, Repo: name, HTTPClient: c.HTTPClient})
}
