package kinds

import (
	"github.com/cup-dev/cup/internal/registry"
	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/scm/gitea"
)

func init() { registry.SCMs.Register("gitea", newGitea) }

func newGitea(c registry.SCMConfig) (scm.Provider, error) {
	owner, name, err := ownerRepo(c.Repository)
	if err != nil {
		return nil, err
	}
	return gitea.New(gitea.Config{BaseURL: c.BaseURL, Owner: owner, Repo: name, HTTPClient: c.HTTPClient})
}
