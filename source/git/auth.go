package git

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// BasicAuth authenticates over HTTP(S) with a user name and password.
func BasicAuth(user, password string) transport.AuthMethod {
	return &githttp.BasicAuth{Username: user, Password: password}
}

// TokenAuth authenticates over HTTP(S) with an access token, sent as the
// password of HTTP basic authentication, which GitHub, GitLab and Gitea
// all accept. user may be empty ("git" is sent then).
func TokenAuth(user, token string) transport.AuthMethod {
	if user == "" {
		user = "git"
	}
	return &githttp.BasicAuth{Username: user, Password: token}
}

// SSHKeyAuth authenticates over SSH with the private key in keyFile
// (decrypted with passphrase when it is encrypted), checking the server's
// host key against knownHosts files (by default the user's and the
// system's, as ssh does). user is usually "git".
func SSHKeyAuth(user, keyFile, passphrase string, knownHosts ...string) (transport.AuthMethod, error) {
	if keyFile == "" {
		return nil, errors.New("git: no SSH key file")
	}
	if user == "" {
		user = "git"
	}
	auth, err := gitssh.NewPublicKeysFromFile(user, keyFile, passphrase)
	if err != nil {
		return nil, fmt.Errorf("git: SSH key %s: %w", keyFile, err)
	}
	cb, err := gitssh.NewKnownHostsCallback(knownHosts...)
	if err != nil {
		return nil, fmt.Errorf("git: known hosts: %w", err)
	}
	auth.HostKeyCallback = cb
	return auth, nil
}
