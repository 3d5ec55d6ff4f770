package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/internal/auth/certs"
	"github.com/cup-dev/cup/internal/auth/oidc"
	"github.com/cup-dev/cup/internal/auth/tokens"
	"github.com/cup-dev/cup/internal/rbac"
)

// Auth configures who may call cupd. The zero value leaves authentication
// and authorization off (the demo); a PolicyPath turns both on, and then at
// least one way to authenticate is required.
type Auth struct {
	// PolicyPath is a file or directory of Role, ClusterRole, RoleBinding
	// and ClusterRoleBinding files, read again when they change.
	PolicyPath string
	// TokensFile holds the SHA-256 hashes of static bearer tokens with their
	// users and groups, read again when it changes.
	TokensFile string
	// OIDC accepts JWTs from an OpenID Connect issuer when its IssuerURL is
	// set.
	OIDC oidc.Config
	// ClientCertificates accepts TLS client certificates the server
	// verified (user: common name, groups: organizations).
	ClientCertificates bool
	// ReloadInterval is how often the policy and tokens files are checked
	// for changes; zero checks every 5 seconds.
	ReloadInterval time.Duration
}

func (c Auth) enabled() bool { return c.PolicyPath != "" }

func (c Auth) authenticates() bool {
	return c.TokensFile != "" || c.OIDC.IssuerURL != "" || c.ClientCertificates
}

// access is the wired authentication and authorization, and what keeps
// their files fresh.
type access struct {
	authn  auth.Chain
	policy *rbac.File
	tokens *tokens.File
	oidc   *oidc.Authenticator
	every  time.Duration
	logger *slog.Logger
}

// oidcStartTimeout bounds the fetch of the OIDC issuer's keys at start.
const oidcStartTimeout = 10 * time.Second

// newAccess loads the policy and the tokens; it returns nil when c turns
// nothing on.
func newAccess(c Auth, logger *slog.Logger) (*access, error) {
	switch {
	case !c.enabled() && !c.authenticates():
		return nil, nil
	case !c.enabled():
		return nil, errors.New("--tokens-file, --oidc-issuer-url and --tls-client-ca-file need --policy, which says what each caller may do: without one every call would be refused")
	case !c.authenticates():
		return nil, errors.New("--policy needs a way to authenticate callers: --tokens-file, --oidc-issuer-url or --tls-client-ca-file")
	}
	a := &access{every: c.ReloadInterval, logger: logger}
	var err error
	if a.policy, err = rbac.LoadFile(c.PolicyPath, rbac.WithLogger(logger)); err != nil {
		return nil, fmt.Errorf("--policy: %w", err)
	}
	if c.TokensFile != "" {
		if a.tokens, err = tokens.Load(c.TokensFile, tokens.WithLogger(logger)); err != nil {
			return nil, fmt.Errorf("--tokens-file: %w", err)
		}
		a.authn = append(a.authn, a.tokens)
	}
	if c.OIDC.IssuerURL != "" {
		if a.oidc, err = oidc.New(c.OIDC); err != nil {
			return nil, fmt.Errorf("--oidc-*: %w", err)
		}
		a.authn = append(a.authn, a.oidc)
	}
	if c.ClientCertificates {
		a.authn = append(a.authn, certs.ClientCertificates{})
	}
	return a, nil
}

// run keeps the policy and tokens files fresh until ctx is done. Meanwhile
// it fetches the OIDC issuer's keys once, so that a misconfigured issuer
// shows in the log at start rather than at the first request; a failure is
// only logged, since the issuer may come up later (requests try again).
func (a *access) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { _ = a.policy.Run(ctx, a.every) })
	if a.tokens != nil {
		wg.Go(func() { _ = a.tokens.Run(ctx, a.every) })
	}
	if a.oidc != nil {
		rctx, cancel := context.WithTimeout(ctx, oidcStartTimeout)
		err := a.oidc.Refresh(rctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			a.logger.WarnContext(ctx, "could not fetch the OIDC issuer's keys; requests with its tokens will try again", "error", err)
		}
	}
}
