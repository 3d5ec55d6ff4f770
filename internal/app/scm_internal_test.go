package app

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// newProvider builds providers by the factories in registry.SCMs, and
// names the registered ones when asked for another.
func TestNewProviderAsksTheRegistry(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	_, err := newProvider(SCM{Provider: "bitbucket"}, "https://example.com/acme/config.git", prometheus.NewRegistry(), nil, logger)
	if want := `--scm "bitbucket": want gitea, github or gitlab`; err == nil || err.Error() != want {
		t.Errorf("newProvider(bitbucket) = %v, want %q", err, want)
	}
	p, err := newProvider(SCM{Provider: "github"}, "https://github.com/acme/config.git", prometheus.NewRegistry(), nil, logger)
	if err != nil || p == nil {
		t.Errorf("newProvider(github) = %v, %v, want a provider", p, err)
	}
	_, err = newProvider(SCM{Provider: "github", Repository: "acme"}, "", prometheus.NewRegistry(), nil, logger)
	if err == nil || !strings.Contains(err.Error(), "want owner/repo") {
		t.Errorf("newProvider(github, repository acme) = %v, want owner/repo asked for", err)
	}
}
