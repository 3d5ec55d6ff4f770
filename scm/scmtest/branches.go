package scmtest

import "github.com/cup-dev/cup/internal/gitrepo"

// HasBranch reports whether the bare Git repository at gitDir has a
// branch name; false when gitDir is "". Fakes use it for
// Fake.LinkRepository.
func HasBranch(gitDir, name string) bool {
	if gitDir == "" {
		return false
	}
	_, err := gitrepo.Resolve(gitDir, "refs/heads/"+name)
	return err == nil
}
