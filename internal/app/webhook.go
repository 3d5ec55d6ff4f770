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
)

// fetcher is a source that can be told to fetch.
type fetcher interface {
	Fetch(ctx context.Context) error
}

// maxWebhookBody bounds the body of a webhook call; push events of large
// pushes run to a few hundred kilobytes.
const maxWebhookBody = 4 << 20

// webhookTimeout bounds the fetch a webhook call makes.
const webhookTimeout = time.Minute

// withWebhook serves POST /hooks/fetch in front of h: it fetches the
// remote at once, so that a push is visible without waiting for the next
// poll. Point a repository's push webhook at it. With a secret, a call
// must prove it knows it, in any of the ways the usual hosts sign their
// webhooks: GitHub's X-Hub-Signature-256 and Gitea's X-Gitea-Signature
// (HMAC-SHA256 of the body), GitLab's X-Gitlab-Token, or
// "Authorization: Bearer <secret>".
func withWebhook(h http.Handler, f fetcher, secret string, logger *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("POST /hooks/fetch", func(w http.ResponseWriter, r *http.Request) {
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
		if err := f.Fetch(ctx); err != nil {
			logger.WarnContext(ctx, "fetch on webhook failed", "error", err)
			http.Error(w, "fetch failed: the remote repository is unreachable; reads are served from the last fetched state", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
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
