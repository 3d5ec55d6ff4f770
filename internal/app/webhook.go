package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cup-dev/cup/internal/proposals"
	gitsource "github.com/cup-dev/cup/source/git"
)

// maxWebhookBody bounds the body of a webhook call. cupd reads a body to
// check an HMAC signature (GitHub, Gitea), and on /hooks/scm to learn which
// proposal the call is about (pull request events are a few kilobytes; a
// larger body, when the secret came in a header, refreshes every proposal
// instead). Push
// events run to a few hundred kilobytes at most but for pushes of
// thousands of files; such a push is then seen at the next poll instead.
const maxWebhookBody = 1 << 20

// webhookBodyTimeout bounds the time a webhook call may take to send its
// body: a megabyte at 35 KB/s.
const webhookBodyTimeout = 30 * time.Second

// maxConcurrentWebhooks bounds the webhook calls served at once, all hooks
// together; more are refused at once with 429. Calls of one hook that
// overlap share one fetch (or refresh), so few are ever needed.
const maxConcurrentWebhooks = 16

// webhookTimeout bounds the fetch a webhook call makes.
const webhookTimeout = time.Minute

// withOperations serves, in front of h:
//
//   - GET /metrics: Prometheus metrics from reg (the SCM's rate-limit
//     budget among them);
//   - POST /hooks/fetch (remote repositories): fetch at once, so that a
//     push is visible without waiting for the next poll; point a
//     repository's push webhook at it;
//   - POST /hooks/scm (with an SCM): read the proposal the call names
//     again (a pull or merge request event of GitHub, Gitea or GitLab), or
//     all of cup's proposals for any other call, so that a merge or close
//     shows at once; point pull/merge request webhooks at it.
//
// With a secret, a webhook call must prove it knows it, in any of the ways
// the usual hosts sign their webhooks: GitHub's X-Hub-Signature-256 and
// Gitea's X-Gitea-Signature (HMAC-SHA256 of the body), GitLab's
// X-Gitlab-Token, or "Authorization: Bearer <secret>". Calls that overlap
// share one fetch or refresh, which starts after each of them arrived.
func withOperations(h http.Handler, f *gitsource.Source, r *proposals.Manager, reg *prometheus.Registry, secret string, logger *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	slots := make(chan struct{}, maxConcurrentWebhooks)
	if f != nil {
		fetch := &coalesced{do: f.Fetch}
		mux.Handle("POST /hooks/fetch", webhook(secret, slots, logger, "fetch", false, func(ctx context.Context, _ []byte) error { return fetch.call(ctx) }))
	}
	if r != nil {
		refresh := &coalesced{do: r.Refresh}
		mux.Handle("POST /hooks/scm", webhook(secret, slots, logger, "proposals refresh", true, func(ctx context.Context, body []byte) error {
			if id := proposalOf(body); id != "" {
				return r.RefreshProposal(ctx, id)
			}
			return refresh.call(ctx)
		}))
	}
	return mux
}

// webhook answers a webhook call by running do. A call that names its
// secret in a header is checked before its body is read, and a call that
// could not prove its secret either way is refused without reading it;
// only a call signed with an HMAC of its body, or one to a hook that
// readBody says needs the body, has its body read, up to maxWebhookBody and
// within webhookBodyTimeout. do gets the body, or nil when it was not read.
func webhook(secret string, slots chan struct{}, logger *slog.Logger, what string, readBody bool, do func(ctx context.Context, body []byte) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokenOK := secret == "" || tokenMatches(r, secret)
		if !tokenOK && !hasSignature(r) {
			// Closing the connection spares reading the body, which
			// net/http would otherwise do to reuse the connection.
			w.Header().Set("Connection", "close")
			http.Error(w, "missing or wrong webhook secret", http.StatusUnauthorized)
			return
		}
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		default:
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many webhook calls at once ("+strconv.Itoa(cap(slots))+"): retry in a moment", http.StatusTooManyRequests)
			return
		}
		if tokenOK && !readBody && r.ContentLength != 0 {
			// The body is not needed: close the connection rather than
			// read it, as net/http would to reuse the connection.
			w.Header().Set("Connection", "close")
		}
		var body []byte
		if !tokenOK || readBody {
			rc := http.NewResponseController(w)
			if err := rc.SetReadDeadline(time.Now().Add(webhookBodyTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
				logger.WarnContext(r.Context(), "setting the webhook's read deadline", "error", err)
			}
			var err error
			body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
			var tooLarge *http.MaxBytesError
			switch {
			case errors.As(err, &tooLarge) && tokenOK:
				// The caller proved the secret: refresh without the body.
				w.Header().Set("Connection", "close")
				body = nil
			case errors.As(err, &tooLarge):
				http.Error(w, "webhook body larger than "+strconv.Itoa(maxWebhookBody)+" bytes: cupd fetches at its next poll instead", http.StatusRequestEntityTooLarge)
				return
			case errors.Is(err, os.ErrDeadlineExceeded):
				http.Error(w, "webhook body took longer than "+webhookBodyTimeout.String()+" to arrive", http.StatusRequestTimeout)
				return
			case err != nil:
				http.Error(w, "webhook body unreadable", http.StatusBadRequest)
				return
			}
			if !tokenOK && !signatureMatches(r, body, secret) {
				http.Error(w, "missing or wrong webhook secret", http.StatusUnauthorized)
				return
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), webhookTimeout)
		defer cancel()
		if err := do(ctx, body); err != nil {
			logger.WarnContext(ctx, what+" on webhook failed", "error", err)
			http.Error(w, what+" failed: the remote is unreachable; reads are served from the last known state", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// proposalOf returns the ID of the one proposal a webhook payload is about:
// the pull request of a GitHub or Gitea event ("pull_request": {"number"})
// or the merge request of a GitLab merge request event ("object_kind":
// "merge_request", "object_attributes": {"iid"}). It returns "" for any
// other payload, which then refreshes every proposal.
func proposalOf(body []byte) string {
	var p struct {
		PullRequest *struct {
			Number int64 `json:"number"`
		} `json:"pull_request"`
		ObjectKind       string `json:"object_kind"`
		ObjectAttributes *struct {
			IID int64 `json:"iid"`
		} `json:"object_attributes"`
	}
	if len(body) == 0 || json.Unmarshal(body, &p) != nil {
		return ""
	}
	switch {
	case p.PullRequest != nil && p.PullRequest.Number > 0:
		return strconv.FormatInt(p.PullRequest.Number, 10)
	case p.ObjectKind == "merge_request" && p.ObjectAttributes != nil && p.ObjectAttributes.IID > 0:
		return strconv.FormatInt(p.ObjectAttributes.IID, 10)
	}
	return ""
}

// tokenMatches reports whether r names secret in GitLab's X-Gitlab-Token or
// as a bearer token.
func tokenMatches(r *http.Request, secret string) bool {
	for _, tok := range []string{r.Header.Get("X-Gitlab-Token"), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")} {
		if tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(secret)) == 1 {
			return true
		}
	}
	return false
}

// hasSignature reports whether r carries an HMAC signature of its body.
func hasSignature(r *http.Request) bool {
	return r.Header.Get("X-Hub-Signature-256") != "" || r.Header.Get("X-Gitea-Signature") != ""
}

// signatureMatches reports whether r's HMAC signature of body is made with
// secret.
func signatureMatches(r *http.Request, body []byte, secret string) bool {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range []string{strings.TrimPrefix(r.Header.Get("X-Hub-Signature-256"), "sha256="), r.Header.Get("X-Gitea-Signature")} {
		if got, err := hex.DecodeString(sig); err == nil && sig != "" && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

// coalesced runs do for calls that overlap once: a call arriving while a
// run is in progress waits for the next run, which starts after the
// current one ends and which every call that arrived meanwhile shares. So
// each call is answered by a run that started after it arrived, and no
// more than one run is ever in progress or waiting. Runs happen on the
// goroutine of one of the calls, under its context; a run ended by its
// caller leaving does not count, and the next waiting call runs again.
type coalesced struct {
	do func(context.Context) error

	mu       sync.Mutex
	running  bool
	finished uint64        // runs completed
	err      error         // the result of the last one
	changed  chan struct{} // closed and replaced when a run ends
}

func (c *coalesced) call(ctx context.Context) error {
	c.mu.Lock()
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	need := c.finished + 1 // the first run to start after now
	if c.running {
		need++
	}
	for {
		if c.finished >= need {
			err := c.err
			c.mu.Unlock()
			return err
		}
		if !c.running {
			c.running = true
			c.mu.Unlock()
			err := c.do(ctx)
			c.mu.Lock()
			c.running = false
			if ctx.Err() == nil {
				c.finished++
				c.err = err
			}
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
			return err
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
		c.mu.Lock()
	}
}
