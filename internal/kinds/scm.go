package kinds

import (
	"fmt"
	"strings"
)

// ownerRepo splits the "owner/repo" of GitHub and Gitea.
func ownerRepo(repo string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("--scm-repository %q: want owner/repo", repo)
	}
	return owner, name, nil
}
