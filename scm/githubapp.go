package scm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/bradleyfalzon/ghinstallation/v2"

	"github.com/cup-dev/cup/scm/internal/hostapi"
)

// GitHubApp identifies a GitHub App installation to authenticate as.
type GitHubApp struct {
	// BaseURL is the REST API's base URL, as for the GitHub adapter. The
	// default ("") is https://api.github.com/; GitHub Enterprise Server
	// serves its API at https://<host>/api/v3/.
	BaseURL string
	// AppID is the App's ID and InstallationID the ID of its installation
	// on the account owning the repositories. Both are required.
	AppID, InstallationID int64
	// PrivateKey is one of the App's private keys, PEM-encoded. Required.
	PrivateKey []byte
	// Transport fetches installation tokens; nil uses a clone of
	// http.DefaultTransport.
	Transport http.RoundTripper
}

// GitHubAppToken returns a TokenSource giving installation tokens of the
// GitHub App cfg describes. A token is fetched at the first call — POST
// {BaseURL}/app/installations/{InstallationID}/access_tokens, authenticated
// with a JSON Web Token signed by the private key — and reused until a
// minute before it expires (tokens last an hour). The source is safe for
// concurrent use; calls wait while one of them renews the token.
//
// GitHubAppToken checks cfg and parses the key; it does no I/O. Errors of
// the source wrap ErrUnauthenticated when GitHub refuses the App's
// credentials, ErrRateLimited or ErrUnavailable when it cannot answer, and
// the context's error when it ends first.
func GitHubAppToken(cfg GitHubApp) (TokenSource, error) {
	if cfg.AppID <= 0 || cfg.InstallationID <= 0 {
		return nil, errors.New("github app: the app ID and installation ID are required")
	}
	if len(cfg.PrivateKey) == 0 {
		return nil, errors.New("github app: the private key is required")
	}
	tr := cfg.Transport
	if tr == nil {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	it, err := ghinstallation.New(tr, cfg.AppID, cfg.InstallationID, cfg.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("github app %d: %w", cfg.AppID, err)
	}
	if cfg.BaseURL != "" {
		if u, err := url.Parse(cfg.BaseURL); err != nil || !hostapi.IsHTTPURL(u) {
			return nil, fmt.Errorf("github app: base URL %q is not an http(s) URL such as https://github.example.com/api/v3/",
				cfg.BaseURL)
		}
		it.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	}
	return &githubAppToken{tr: it}, nil
}

type githubAppToken struct {
	tr *ghinstallation.Transport
}

func (s *githubAppToken) Token(ctx context.Context) (string, error) {
	tok, err := s.tr.Token(ctx)
	if err == nil {
		return tok, nil
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "", err
	}
	kind := ErrUnauthenticated
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) {
		switch res := he.Response; {
		case res != nil:
			// ghinstallation leaves the body of a refusal open.
			discard(res)
			switch {
			case res.StatusCode == http.StatusTooManyRequests:
				kind = ErrRateLimited
			case res.StatusCode >= 500:
				kind = ErrUnavailable
			}
		case he.RootCause != nil:
			kind = ErrUnavailable
		}
	}
	return "", fmt.Errorf("%w: %w", kind, err)
}
