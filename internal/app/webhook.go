package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cup-dev/cup/internal/proposals"
	gitsource "github.com/cup-dev/cup/source/git"
)

// maxWebhookBody bounds the body of a webhook call; push events of large
// pushes run to a few hundred kilobytes.
const maxWebhookBody = 4 << 20

// webhookTimeout bounds the fetch a webhook call makes.
const webhookTimeout = time.Minute

// withOperations serves, in front of h:
//
//   - GET /metrics: Prometheus metrics from reg (the SCM's rate-limit
//     budget among them);
//   - POST /hooks/fetch (remote repositories): fetch at once, so that a
//     push is visible without waiting for the next poll; point a
//     repository's push webhook at it;
//   - POST /hooks/scm (with an SCM): read the proposals again, so that a
//     merge or close shows at once; point pull/merge request webhooks at it.
//
// With a secret, a webhook call must prove it knows it, in any of the ways
// the usual hosts sign their webhooks: GitHub's X-Hub-Signature-256 and
// Gitea's X-Gitea-Signature (HMAC-SHA256 of the body), GitLab's
// X-Gitlab-Token, or "Authorization: Bearer <secret>".
func withOperations(h http.Handler, f *gitsource.Source, r *proposals.Manager, reg *prometheus.Registry, secret string, logger *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if f != nil {
		mux.Handle("POST /hooks/fetch", webhook(secret, logger, "fetch", f.Fetch))
	}
	if r != nil {
		mux.Handle("POST /hooks/scm", webhook(secret, logger, "proposals refresh", r.Refresh))
	}
	return mux
}

// webhook answers a webhook call by running do.
func webhook(secret string, logger *slog.Logger, what string, do func(context.Context) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
		if err != nil {
			http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
			return
		}
		if secret != "" && !signed(r, body, secret) {
			http.Error(w, "missing or wrong webhook secret", http.StatusUnauthorized)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), webhookTimeout)
		defer cancel()
		if err := do(ctx); err != nil {
			logger.WarnContext(ctx, what+" on webhook failed", "error", err)
			http.Error(w, what+" failed: the remote is unreachable; reads are served from the last known state", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// signed reports whether r proves knowledge of secret.
func signed(r *http.Request, body []byte, secret string) bool {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range []string{strings.TrimPrefix(r.Header.Get("X-Hub-Signature-256"), "sha256="), r.Header.Get("X-Gitea-Signature")} {
		if got, err := hex.DecodeString(sig); err == nil && sig != "" && hmac.Equal(got, want) {
			return true
		}
	}
	for _, tok := range []string{r.Header.Get("X-Gitlab-Token"), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")} {
		if tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(secret)) == 1 {
			return true
		}
	}
	return false
}
