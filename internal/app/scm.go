package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/cup-dev/cup/internal/proposals"
	"github.com/cup-dev/cup/internal/registry"
	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/server"
	gitsource "github.com/cup-dev/cup/source/git"
)

// SCM configures proposals on a source-code host.
type SCM struct {
	// Provider names a provider in registry.SCMs: "github", "gitlab" or
	// "gitea"; empty turns proposals off.
	Provider string
	// URL is the API's base URL: GitHub Enterprise's https://host/api/v3/,
	// a self-hosted GitLab's or Gitea's web root. Empty for github.com and
	// gitlab.com; required for Gitea.
	URL string
	// Repository is owner/repo (GitHub, Gitea) or the project's path
	// (GitLab). Empty derives it from the repository URL's path.
	Repository string
	// TokenFile is a file holding the token, read again when it changes;
	// TokenEnv the environment variable holding it (read at each call).
	TokenFile, TokenEnv string
	// GitHubAppID, GitHubAppInstallationID and GitHubAppKeyFile
	// authenticate as a GitHub App installation instead of with a token.
	GitHubAppID, GitHubAppInstallationID int64
	GitHubAppKeyFile                     string
	// Labels are added to every proposal; Draft opens them as drafts.
	Labels []string
	Draft  bool
	// TemplateDir holds commit.tmpl, title.tmpl and body.tmpl overriding
	// the defaults.
	TemplateDir string
	// RefreshInterval is how often the list of proposals is read again;
	// zero keeps proposals.DefaultRefreshInterval.
	RefreshInterval time.Duration
	// Timeout bounds each call to the SCM; zero keeps scm.DefaultTimeout.
	Timeout time.Duration
}

// newProvider builds the scm.Provider cfg names, with an HTTP client that
// authenticates, waits out rate limits and exports its budget to reg.
func newProvider(cfg SCM, repoURL string, reg prometheus.Registerer, tp trace.TracerProvider, logger *slog.Logger) (scm.Provider, error) {
	factory, ok := registry.SCMs.Lookup(cfg.Provider)
	if !ok {
		return nil, fmt.Errorf("--scm %q: want %s", cfg.Provider, registry.SCMs.List("or"))
	}
	var token scm.TokenSource
	switch {
	case cfg.GitHubAppID != 0:
		if cfg.Provider != "github" {
			return nil, errors.New("--github-app-id needs --scm=github")
		}
		key, err := os.ReadFile(cfg.GitHubAppKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--github-app-key-file: %w", err)
		}
		if token, err = scm.GitHubAppToken(scm.GitHubApp{BaseURL: cfg.URL, AppID: cfg.GitHubAppID,
			InstallationID: cfg.GitHubAppInstallationID, PrivateKey: key}); err != nil {
			return nil, err
		}
	case cfg.TokenFile != "":
		if _, err := os.Stat(cfg.TokenFile); err != nil {
			return nil, fmt.Errorf("--scm-token-file: %w", err)
		}
		token = scm.FileToken(cfg.TokenFile)
	case cfg.TokenEnv != "":
		token = scm.EnvToken(cfg.TokenEnv)
	}
	metrics, err := scm.NewMetrics(reg, cfg.Provider)
	if err != nil {
		return nil, err
	}
	client := scm.NewHTTPClient(scm.HTTPOptions{Token: token, Logger: logger, Metrics: metrics, Timeout: cfg.Timeout, TracerProvider: tp})
	repo := cfg.Repository
	if repo == "" {
		if repo = repoPath(repoURL); repo == "" {
			return nil, fmt.Errorf("--scm-repository is needed: %s does not name owner/repo", gitsource.Redact(repoURL))
		}
	}
	return factory(registry.SCMConfig{BaseURL: cfg.URL, Repository: repo, HTTPClient: client})
}

// repoPath derives owner/repo from a repository URL: the path without a
// leading slash and a trailing ".git" (https://github.com/acme/config.git,
// git@github.com:acme/config.git).
func repoPath(repo string) string {
	p := ""
	if u, err := url.Parse(repo); err == nil && u.Scheme != "" && u.Host != "" {
		p = u.Path
	} else if _, after, ok := strings.Cut(repo, ":"); ok && gitsource.IsURL(repo) {
		p = after
	}
	p = strings.TrimSuffix(strings.Trim(p, "/"), ".git")
	if !strings.Contains(p, "/") {
		return ""
	}
	return p
}

// proposalsAPI serves the server's Proposals from a proposals.Manager.
// Both speak scm.Tracked, so nothing is converted.
type proposalsAPI struct{ m *proposals.Manager }

var _ server.Proposals = proposalsAPI{}

// ListProposals runs on every Get of a resource, so it allocates for the
// matches only.
func (a proposalsAPI) ListProposals(_ context.Context, f server.ProposalFilter) ([]*scm.Tracked, error) {
	return a.m.List(f.Matches), nil
}

func (a proposalsAPI) GetProposal(ctx context.Context, id string) (*scm.Tracked, error) {
	return a.m.Get(ctx, id)
}
