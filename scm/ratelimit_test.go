package scm_test

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cup-dev/cup/scm"
)

func TestRateLimitRetries(t *testing.T) {
	t.Parallel()
	ok := func(w http.ResponseWriter) { _, _ = io.WriteString(w, `{"ok":true}`) }
	// answer answers the first `times` calls with status and the headers
	// set() gives, and the later ones with 200.
	answer := func(times, status int, set func(h http.Header)) func(http.ResponseWriter, *http.Request, int) {
		return func(w http.ResponseWriter, _ *http.Request, n int) {
			if n > times {
				ok(w)
				return
			}
			set(w.Header())
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"message":"slow down"}`)
		}
	}
	retryAfter := func(s string) func(http.Header) { return func(h http.Header) { h.Set("Retry-After", s) } }
	// reset sets the headers of an exhausted budget that resets in one
	// second, and stores the reset time in at.
	reset := func(prefix string, at *atomic.Int64) func(http.Header) {
		return func(h http.Header) {
			r := time.Now().Unix() + 1
			at.Store(r)
			h.Set(prefix+"Limit", "60")
			h.Set(prefix+"Remaining", "0")
			h.Set(prefix+"Reset", strconv.FormatInt(r, 10))
		}
	}
	githubReset, gitlabReset := new(atomic.Int64), new(atomic.Int64)

	tests := []struct {
		name   string
		opts   scm.HTTPOptions
		method string
		body   string
		// unreplayable sends the body without GetBody.
		unreplayable bool
		timeout      time.Duration
		respond      func(http.ResponseWriter, *http.Request, int)
		// wantStatus and wantCalls are the answer and the calls made.
		wantStatus, wantCalls int
		// minGap and maxGap bound the time between the first two calls;
		// after, if set, is a Unix time the second call may not precede.
		minGap, maxGap time.Duration
		after          *atomic.Int64
		// maxElapsed bounds the whole call.
		maxElapsed time.Duration
	}{{
		name:       "429 with Retry-After waits and succeeds",
		respond:    answer(1, http.StatusTooManyRequests, retryAfter("1")),
		wantStatus: http.StatusOK, wantCalls: 2,
		minGap: 900 * time.Millisecond, maxGap: 1900 * time.Millisecond, maxElapsed: 3 * time.Second,
	}, {
		name:       "GitHub 403 with an exhausted budget waits for the reset",
		respond:    answer(1, http.StatusForbidden, reset("X-RateLimit-", githubReset)),
		wantStatus: http.StatusOK, wantCalls: 2, after: githubReset, maxElapsed: 3 * time.Second,
	}, {
		name:       "GitLab 429 with RateLimit-Reset waits for the reset",
		respond:    answer(1, http.StatusTooManyRequests, reset("RateLimit-", gitlabReset)),
		wantStatus: http.StatusOK, wantCalls: 2, after: gitlabReset, maxElapsed: 3 * time.Second,
	}, {
		name: "GitHub secondary rate limit with Retry-After",
		respond: func(w http.ResponseWriter, _ *http.Request, n int) {
			if n == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusForbidden)
				_, _ = io.WriteString(w, `{"message":"You have exceeded a secondary rate limit."}`)
				return
			}
			ok(w)
		},
		wantStatus: http.StatusOK, wantCalls: 2,
		minGap: 900 * time.Millisecond, maxGap: 1900 * time.Millisecond, maxElapsed: 3 * time.Second,
	}, {
		name: "Retry-After as an HTTP date",
		respond: answer(1, http.StatusTooManyRequests, func(h http.Header) {
			h.Set("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
		}),
		wantStatus: http.StatusOK, wantCalls: 2,
		minGap: 900 * time.Millisecond, maxGap: 2900 * time.Millisecond, maxElapsed: 4 * time.Second,
	}, {
		name:       "a wait longer than MaxWait returns the 429 at once",
		respond:    answer(1, http.StatusTooManyRequests, retryAfter("120")),
		wantStatus: http.StatusTooManyRequests, wantCalls: 1, maxElapsed: 500 * time.Millisecond,
	}, {
		name:       "a wait beyond the context's deadline returns the 429 at once",
		opts:       scm.HTTPOptions{MaxWait: time.Hour},
		timeout:    time.Second,
		respond:    answer(1, http.StatusTooManyRequests, retryAfter("5")),
		wantStatus: http.StatusTooManyRequests, wantCalls: 1, maxElapsed: 500 * time.Millisecond,
	}, {
		name:       "a negative MaxWait never waits",
		opts:       scm.HTTPOptions{MaxWait: -1},
		respond:    answer(1, http.StatusTooManyRequests, retryAfter("0")),
		wantStatus: http.StatusTooManyRequests, wantCalls: 1, maxElapsed: 500 * time.Millisecond,
	}, {
		name:       "retries stop after MaxRetries",
		opts:       scm.HTTPOptions{MaxRetries: 2},
		respond:    answer(100, http.StatusTooManyRequests, retryAfter("0")),
		wantStatus: http.StatusTooManyRequests, wantCalls: 3, maxElapsed: time.Second,
	}, {
		name:       "retries default to three",
		respond:    answer(100, http.StatusTooManyRequests, retryAfter("0")),
		wantStatus: http.StatusTooManyRequests, wantCalls: 4, maxElapsed: time.Second,
	}, {
		name:       "a POST body is replayed",
		method:     http.MethodPost,
		body:       `{"title":"Bump"}`,
		respond:    answer(1, http.StatusTooManyRequests, retryAfter("0")),
		wantStatus: http.StatusOK, wantCalls: 2, maxElapsed: time.Second,
	}, {
		name:         "a body that cannot be replayed is not retried",
		method:       http.MethodPost,
		body:         `{"title":"Bump"}`,
		unreplayable: true,
		respond:      answer(1, http.StatusTooManyRequests, retryAfter("0")),
		wantStatus:   http.StatusTooManyRequests, wantCalls: 1, maxElapsed: 500 * time.Millisecond,
	}, {
		name:       "a 403 without rate-limit signs is returned",
		respond:    answer(1, http.StatusForbidden, func(http.Header) {}),
		wantStatus: http.StatusForbidden, wantCalls: 1, maxElapsed: 500 * time.Millisecond,
	}, {
		name: "GitHub secondary rate limit without Retry-After waits a minute",
		opts: scm.HTTPOptions{MaxWait: 30 * time.Second},
		respond: func(w http.ResponseWriter, _ *http.Request, n int) {
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes."}`)
		},
		wantStatus: http.StatusForbidden, wantCalls: 1, maxElapsed: 500 * time.Millisecond,
	}, {
		name:       "a 502 is not retried by default",
		respond:    answer(1, http.StatusBadGateway, func(http.Header) {}),
		wantStatus: http.StatusBadGateway, wantCalls: 1, maxElapsed: 500 * time.Millisecond,
	}, {
		name:       "RetryGatewayErrors retries a GET once",
		opts:       scm.HTTPOptions{RetryGatewayErrors: true},
		respond:    answer(1, http.StatusServiceUnavailable, func(http.Header) {}),
		wantStatus: http.StatusOK, wantCalls: 2, minGap: 200 * time.Millisecond, maxElapsed: time.Second,
	}, {
		name:       "RetryGatewayErrors retries only once",
		opts:       scm.HTTPOptions{RetryGatewayErrors: true},
		respond:    answer(2, http.StatusGatewayTimeout, func(http.Header) {}),
		wantStatus: http.StatusGatewayTimeout, wantCalls: 2, maxElapsed: time.Second,
	}, {
		name:       "RetryGatewayErrors never retries a POST",
		opts:       scm.HTTPOptions{RetryGatewayErrors: true},
		method:     http.MethodPost,
		body:       `{}`,
		respond:    answer(1, http.StatusBadGateway, func(http.Header) {}),
		wantStatus: http.StatusBadGateway, wantCalls: 1, maxElapsed: 500 * time.Millisecond,
	}, {
		name:       "a 503 with Retry-After is retried for a GET",
		respond:    answer(1, http.StatusServiceUnavailable, retryAfter("0")),
		wantStatus: http.StatusOK, wantCalls: 2, maxElapsed: time.Second,
	}, {
		name:       "a 503 with Retry-After is not retried for a POST",
		method:     http.MethodPost,
		body:       `{}`,
		respond:    answer(1, http.StatusServiceUnavailable, retryAfter("0")),
		wantStatus: http.StatusServiceUnavailable, wantCalls: 1, maxElapsed: 500 * time.Millisecond,
	}, {
		name:       "a success is never retried",
		respond:    answer(0, http.StatusOK, retryAfter("0")),
		wantStatus: http.StatusOK, wantCalls: 1, maxElapsed: 500 * time.Millisecond,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tt.respond)
			tt.opts.Token = scm.StaticToken("s3cr3t-token")
			c := f.client(tt.opts)
			ctx := t.Context()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			method := cmp.Or(tt.method, http.MethodGet)
			var body io.Reader = strings.NewReader(tt.body)
			if tt.unreplayable {
				// A reader of a type net/http does not know gets no GetBody.
				body = io.MultiReader(body)
			}
			req, err := http.NewRequestWithContext(ctx, method, f.URL+"/repos/acme/config/pulls", body)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			res, err := c.Do(req)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			got, _ := io.ReadAll(res.Body)
			res.Body.Close()
			elapsed := time.Since(start)
			calls := f.Calls()
			if res.StatusCode != tt.wantStatus || len(calls) != tt.wantCalls {
				t.Fatalf("got %d after %d calls (body %q), want %d after %d", res.StatusCode, len(calls), got,
					tt.wantStatus, tt.wantCalls)
			}
			if elapsed > tt.maxElapsed {
				t.Errorf("took %v, want at most %v", elapsed, tt.maxElapsed)
			}
			if len(calls) >= 2 {
				gap := calls[1].At.Sub(calls[0].At)
				if gap < tt.minGap || tt.maxGap > 0 && gap > tt.maxGap {
					t.Errorf("second call %v after the first, want between %v and %v", gap, tt.minGap, tt.maxGap)
				}
				if tt.after != nil {
					if at := time.Unix(tt.after.Load(), 0); calls[1].At.Before(at) {
						t.Errorf("second call at %v, before the reset at %v", calls[1].At, at)
					}
				}
			}
			for i, c := range calls {
				if c.Method != method || string(c.Body) != tt.body || c.Auth != "Bearer s3cr3t-token" {
					t.Errorf("call %d: %s %q with %q, want %s %q with the token", i+1, c.Method, c.Body, c.Auth, method, tt.body)
				}
			}
		})
	}
}

func TestRateLimitCanceledDuringWait(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	c := f.client(scm.HTTPOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	timer := time.AfterFunc(200*time.Millisecond, cancel)
	defer timer.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL+"/pulls", nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := c.Do(req)
	if err == nil {
		res.Body.Close()
		t.Fatalf("got %d, want the context's error", res.StatusCode)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("took %v after the cancellation", elapsed)
	}
}

func TestRateLimitExhaustedBudgetDelaysNextCall(t *testing.T) {
	t.Parallel()
	var reset atomic.Int64
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h := w.Header()
		if n == 1 {
			// The last request of the window: the budget is spent.
			at := time.Now().Unix() + 1
			reset.Store(at)
			h.Set("X-RateLimit-Limit", "5000")
			h.Set("X-RateLimit-Remaining", "0")
			h.Set("X-RateLimit-Reset", strconv.FormatInt(at, 10))
			h.Set("X-RateLimit-Resource", "core")
		}
		_, _ = io.WriteString(w, "{}")
	})
	log, logs := testLogger(t)
	c := f.client(scm.HTTPOptions{Token: scm.StaticToken("s3cr3t-token"), Logger: log})

	get(t, c, f.URL+"/repos/acme/config/pulls")
	// Search has a budget of its own, which is not spent.
	start := time.Now()
	get(t, c, f.URL+"/search/issues")
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("a search call waited %v for the core budget", d)
	}
	get(t, c, f.URL+"/repos/acme/config/pulls/1")
	calls := f.Calls()
	if at := time.Unix(reset.Load(), 0); calls[2].At.Before(at) {
		t.Errorf("the call after the budget was spent was sent at %v, before the reset at %v", calls[2].At, at)
	}
	checkLogs(t, logs.String(), "s3cr3t-token", "waiting for the SCM's rate limit", "host="+f.Listener.Addr().String(),
		`level=WARN msg="SCM rate-limit budget"`, "remaining=0", "limit=5000")
}

// checkLogs checks the logs have each of want and not the token.
func checkLogs(t *testing.T, out, token string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("logs lack %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, token) {
		t.Errorf("logs contain the token:\n%s", out)
	}
}

func TestRateLimitExhaustedBudgetBeyondMaxWaitSendsAtOnce(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h := w.Header()
		h.Set("RateLimit-Limit", "600")
		h.Set("RateLimit-Remaining", "0")
		h.Set("RateLimit-Reset", strconv.FormatInt(time.Now().Unix()+30, 10))
		_, _ = io.WriteString(w, "{}")
	})
	c := f.client(scm.HTTPOptions{MaxWait: time.Second})
	get(t, c, f.URL+"/api/v4/projects/1/merge_requests")
	start := time.Now()
	get(t, c, f.URL+"/api/v4/projects/1/merge_requests")
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("the call waited %v although the reset is beyond MaxWait", d)
	}
}

func TestRateLimitBudgetLogging(t *testing.T) {
	t.Parallel()
	remaining := []string{"100", "99", "99", "9"}
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h := w.Header()
		h.Set("X-RateLimit-Limit", "100")
		h.Set("X-RateLimit-Remaining", remaining[n-1])
		h.Set("X-RateLimit-Reset", "2000000000")
		_, _ = io.WriteString(w, "{}")
	})
	log, logs := testLogger(t)
	c := f.client(scm.HTTPOptions{Token: scm.StaticToken("s3cr3t-token"), Logger: log})
	for range remaining {
		get(t, c, f.URL+"/pulls")
	}
	out := logs.String()
	// One line per change: 100 and 99 at debug, 9 (below a tenth) at warn.
	if got := strings.Count(out, `msg="SCM rate-limit budget"`); got != 3 {
		t.Errorf("got %d budget lines, want 3:\n%s", got, out)
	}
	host := f.Listener.Addr().String()
	checkLogs(t, out, "s3cr3t-token", `level=DEBUG msg="SCM rate-limit budget" host=`+host+" remaining=100",
		`level=WARN msg="SCM rate-limit budget" host=`+host+" remaining=9 limit=100")
}

func TestRateLimitSecondaryBodyIsKept(t *testing.T) {
	t.Parallel()
	const msg = `{"message":"You have exceeded a secondary rate limit and have been temporarily blocked."}`
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, msg)
	})
	c := f.client(scm.HTTPOptions{MaxWait: time.Second})
	status, body := get(t, c, f.URL+"/pulls")
	if status != http.StatusForbidden || body != msg {
		t.Errorf("got %d %q, want 403 %q", status, body, msg)
	}
}
