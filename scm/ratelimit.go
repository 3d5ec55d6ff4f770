package scm

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cup-dev/cup/scm/internal/hostapi"
)

// verdict is the transport's decision to retry an answer.
type verdict struct {
	// wait is how long to wait before retrying.
	wait time.Duration
	// reason says why, for logs.
	reason string
	// gateway marks the one quick retry of a gateway error, which is not a
	// rate-limit wait.
	gateway bool
}

// judge decides whether to retry the answer res to r, the retries-th
// rate-limit retry of the call so far. See NewHTTPClient for the rules.
func (t *transport) judge(r *http.Request, res *http.Response, retries int, gatewayRetried bool) (verdict, bool) {
	code := res.StatusCode
	if code < 400 {
		return verdict{}, false
	}
	now := time.Now()
	idempotent := r.Method == http.MethodGet || r.Method == http.MethodHead
	after, hasAfter := hostapi.RetryAfter(res.Header, now)
	b, hasBudget := parseBudget(res.Header, now)
	spent := hasBudget && b.remaining == 0
	var v verdict
	switch {
	case hasAfter && code == http.StatusForbidden:
		v = verdict{wait: after, reason: "secondary rate limit"}
	case hasAfter && (code < 500 || idempotent):
		v = verdict{wait: after, reason: "the SCM asked to retry later"}
	case code == http.StatusTooManyRequests || code == http.StatusForbidden && spent:
		v = verdict{wait: backoff(time.Second, retries), reason: "rate limit exhausted"}
		if hasBudget && !b.reset.IsZero() {
			v.wait = max(b.reset.Sub(now), 0)
		}
	case code == http.StatusForbidden && secondaryLimit(res):
		// GitHub asks to wait at least a minute, longer each time.
		v = verdict{wait: backoff(time.Minute, retries), reason: "secondary rate limit"}
	case (code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout) &&
		idempotent && t.opts.RetryGatewayErrors && !gatewayRetried:
		return verdict{wait: gatewayRetryDelay, reason: "gateway error", gateway: true}, true
	default:
		return verdict{}, false
	}
	if retries >= t.opts.MaxRetries {
		return verdict{}, false
	}
	return v, true
}

// backoff is base doubled n times.
func backoff(base time.Duration, n int) time.Duration {
	return base << min(n, 10)
}

// secondaryLimit reports whether a 403 answer's body is GitHub's secondary
// (formerly "abuse") rate-limit message. It peeks at the start of the body
// and leaves it whole for the caller.
func secondaryLimit(res *http.Response) bool {
	head := make([]byte, 4<<10)
	n, _ := io.ReadFull(res.Body, head)
	head = head[:n]
	res.Body = &peekedBody{Reader: io.MultiReader(bytes.NewReader(head), res.Body), Closer: res.Body}
	head = bytes.ToLower(head)
	return bytes.Contains(head, []byte("secondary rate limit")) || bytes.Contains(head, []byte("abuse detection"))
}

type peekedBody struct {
	io.Reader
	io.Closer
}

// budget is a host's rate-limit budget as an answer reported it.
type budget struct {
	remaining int
	// limit is zero when unknown.
	limit int
	// reset is when the budget is renewed, on the local clock; zero when
	// unknown. resetRaw is the header as sent.
	reset    time.Time
	resetRaw string
	// resource names one of GitHub's separate budgets (core, search,
	// graphql, …); it is empty for other hosts.
	resource string
}

// low reports a budget below a tenth of its limit.
func (b budget) low() bool {
	return b.remaining == 0 || b.limit > 0 && b.remaining*10 < b.limit
}

// parseBudget reads GitHub-style X-RateLimit-* headers or
// GitLab's RateLimit-* headers.
func parseBudget(h http.Header, now time.Time) (budget, bool) {
	for _, prefix := range []string{"X-RateLimit-", "RateLimit-"} {
		remaining, err := strconv.Atoi(strings.TrimSpace(h.Get(prefix + "Remaining")))
		if err != nil || remaining < 0 {
			continue
		}
		b := budget{
			remaining: remaining,
			resetRaw:  strings.TrimSpace(h.Get(prefix + "Reset")),
			resource:  strings.ToLower(strings.TrimSpace(h.Get("X-RateLimit-Resource"))),
		}
		if limit, err := strconv.Atoi(strings.TrimSpace(h.Get(prefix + "Limit"))); err == nil && limit > 0 {
			b.limit = limit
		}
		if v, err := strconv.ParseInt(b.resetRaw, 10, 64); err == nil && v >= 0 {
			if v < 1e9 {
				// Seconds from now, as in the IETF RateLimit headers.
				b.reset = now.Add(time.Duration(v) * time.Second)
			} else {
				b.reset = hostapi.LocalTime(h, time.Unix(v, 0), now)
			}
		}
		return b, true
	}
	return budget{}, false
}

// record notes the budget an answer reports: it updates the metrics, and
// logs it when it changed.
func (t *transport) record(r *http.Request, res *http.Response) {
	b, ok := parseBudget(res.Header, time.Now())
	if !ok {
		return
	}
	if b.resource == "" || b.resource == "core" {
		t.opts.Metrics.setBudget(b.remaining, b.limit)
	}
	if !t.budgets.record(r.URL.Host, b) {
		return
	}
	level := slog.LevelDebug
	if b.low() {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{slog.String("host", r.URL.Host), slog.Int("remaining", b.remaining)}
	if b.limit > 0 {
		attrs = append(attrs, slog.Int("limit", b.limit))
	}
	if !b.reset.IsZero() {
		attrs = append(attrs, slog.Time("reset", b.reset))
	}
	if b.resource != "" {
		attrs = append(attrs, slog.String("resource", b.resource))
	}
	t.opts.Logger.LogAttrs(r.Context(), level, "SCM rate-limit budget", attrs...)
}

// budgets holds the last budget each host reported, per GitHub resource.
type budgets struct {
	mu sync.Mutex
	by map[budgetKey]budget
}

type budgetKey struct{ host, resource string }

func newBudgets() *budgets { return &budgets{by: make(map[budgetKey]budget)} }

// record stores b and reports whether it differs from the last budget of
// its host and resource.
func (bs *budgets) record(host string, b budget) bool {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	k := budgetKey{host, b.resource}
	prev, ok := bs.by[k]
	bs.by[k] = b
	return !ok || prev.remaining != b.remaining || prev.limit != b.limit || prev.resetRaw != b.resetRaw
}

// pause returns how long a request to u should wait for its budget to be
// renewed: positive only when the last answer said it was spent.
func (bs *budgets) pause(u *url.URL, now time.Time) time.Duration {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b, ok := bs.by[budgetKey{u.Host, resourceOf(u.Path)}]
	if !ok {
		b, ok = bs.by[budgetKey{u.Host, ""}]
	}
	if !ok || b.remaining > 0 || b.reset.IsZero() {
		return 0
	}
	return b.reset.Sub(now)
}

// resourceOf guesses which of GitHub's budgets a request path draws on.
func resourceOf(path string) string {
	switch {
	case strings.HasSuffix(path, "/graphql"):
		return "graphql"
	case strings.Contains(path, "/search/code"):
		return "code_search"
	case strings.Contains(path, "/search/"):
		return "search"
	default:
		return "core"
	}
}
