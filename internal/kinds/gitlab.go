package kinds

import (
	"github.com/cup-dev/cup/internal/registry"
	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/scm/gitlab"
)

func init() { registry.SCMs.Register("gitlab", newGitLab) }

func newGitLab(c registry.SCMConfig) (scm.Provider, error) {
	return gitlab.New(gitlab.Config{BaseURL: c.BaseURL, Project: c.Repository, HTTPClient: c.HTTPClient})
}
