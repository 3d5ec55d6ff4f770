package scm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// TokenSource gives the token to authenticate a call with. It is called
// for every request, so a source may renew or re-read its token.
//
// Implementations are safe for concurrent use. Their errors never contain
// the token; an error that wraps none of this package's sentinels is
// reported by the transport as ErrUnauthenticated.
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// StaticToken is a token that never changes.
type StaticToken string

// Token returns the token.
func (t StaticToken) Token(context.Context) (string, error) { return string(t), nil }

// HTTPOptions configure NewHTTPClient. The zero value is a client without
// credentials that waits out rate limits of up to a minute.
type HTTPOptions struct {
	// Token authenticates every request as "Authorization: Bearer <token>",
	// which GitHub, GitLab and Gitea all accept. Nil sends no credentials.
	Token TokenSource
	// Transport is the underlying transport; nil uses a clone of
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Timeout bounds each attempt at a call (getting its token included),
	// waiting for rate limits excluded. Zero (or less) keeps the default,
	// DefaultTimeout: calls are always bounded.
	Timeout time.Duration
	// Logger receives rate-limit waits and the remaining budget (at debug
	// when it changes, at warn below a tenth of the limit). Nil logs
	// nothing.
	Logger *slog.Logger
	// MaxWait is the longest the transport waits before retrying a
	// rate-limited request, or before sending one while the budget is
	// exhausted. A longer wait, or one the request's context would not
	// outlive, is not made: the host's answer is returned at once, which
	// adapters report as ErrRateLimited. The default is one minute; a
	// negative value never waits.
	MaxWait time.Duration
	// MaxRetries is how many times one call is retried after rate-limit
	// answers. The default is 3; a negative value never retries.
	MaxRetries int
	// RetryGatewayErrors retries a GET or HEAD answered 502, 503 or 504
	// (without Retry-After) once, a quarter of a second later. The default,
	// false, returns such answers to the caller: 5xx answers are otherwise
	// never retried, and requests that change something never are, since
	// the host may have acted on them.
	RetryGatewayErrors bool
	// Metrics exports the calls and the rate-limit budget. Nil exports
	// nothing.
	Metrics *Metrics
	// TracerProvider receives a client span per call, "scm GET" and so on,
	// retries and rate-limit waits included, which are span events. Nil
	// records none.
	TracerProvider trace.TracerProvider
}

// DefaultTimeout is the default of HTTPOptions.Timeout (and so of cupd
// --scm-timeout).
const DefaultTimeout = 30 * time.Second

// Other defaults of HTTPOptions.
const (
	defaultMaxWait    = time.Minute
	defaultMaxRetries = 3
	gatewayRetryDelay = 250 * time.Millisecond
)

// NewHTTPClient returns the client adapters make their calls with. It adds
// credentials and never lets them reach logs or errors, and it handles the
// hosts' rate limits:
//
//   - A rate-limited answer (429; 403 with X-RateLimit-Remaining or
//     RateLimit-Remaining 0, or with Retry-After, or GitHub's "secondary
//     rate limit" message; any other 4xx with Retry-After) is retried after
//     the wait the host asks for: Retry-After (seconds or an HTTP date),
//     else the X-RateLimit-Reset or RateLimit-Reset time (epoch seconds;
//     values below 10⁹ are read as seconds from now), else a backoff of one
//     second (one minute for GitHub's secondary limit) doubling per retry.
//     Times the host gives are read against its Date header, so a skewed
//     local clock does not shorten waits.
//   - A 5xx answer with Retry-After is retried the same way for GET and
//     HEAD only; see HTTPOptions.RetryGatewayErrors for those without.
//   - A request whose body cannot be replayed (it has no GetBody) is never
//     retried.
//   - While the last answer from a host said its budget is spent (remaining
//     0 with a reset in the future), requests to it wait for the reset
//     before being sent. GitHub's separate budgets (core, search, graphql)
//     are told apart.
//
// Every other answer, successes included, is returned as it is, and so is
// a rate-limited one once HTTPOptions.MaxRetries are spent or when its wait
// would exceed HTTPOptions.MaxWait or the request's deadline: adapters
// report it as ErrRateLimited. A context that ends during a wait ends the
// call with its error. The client does no I/O until it is used, and is
// safe for concurrent use.
func NewHTTPClient(o HTTPOptions) *http.Client {
	base := o.Transport
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxWait == 0 {
		o.MaxWait = defaultMaxWait
	}
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = defaultMaxRetries
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	return &http.Client{Transport: &transport{base: base, opts: o, budgets: newBudgets()}}
}

type transport struct {
	base    http.RoundTripper
	opts    HTTPOptions
	budgets *budgets
}

func (t *transport) RoundTrip(r *http.Request) (res *http.Response, err error) {
	ctx, span := t.startSpan(r)
	defer func() { endSpan(span, res, err) }()
	if d := t.budgets.pause(r.URL, time.Now()); d > 0 && t.canWait(ctx, d) {
		t.waiting(ctx, r, nil, d, 0, "the rate-limit budget is spent")
		if err := sleep(ctx, d); err != nil {
			closeBody(r.Body)
			return nil, err
		}
	}
	replayable := r.Body == nil || r.Body == http.NoBody || r.GetBody != nil
	req, retries, gatewayRetried := r, 0, false
	for {
		res, err := t.send(req)
		if err != nil {
			return nil, err
		}
		v, retry := t.judge(r, res, retries, gatewayRetried)
		if !retry {
			return res, nil
		}
		if !replayable {
			t.opts.Logger.LogAttrs(ctx, slog.LevelDebug, "not retrying an SCM request whose body cannot be replayed",
				requestAttrs(r, res)...)
			return res, nil
		}
		if !t.canWait(ctx, v.wait) {
			t.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "not waiting for the SCM: the wait exceeds the limit or the call's deadline",
				append(requestAttrs(r, res), slog.String("reason", v.reason), slog.Duration("wait", v.wait),
					slog.Duration("max_wait", t.opts.MaxWait))...)
			return res, nil
		}
		if v.gateway {
			gatewayRetried = true
			t.opts.Logger.LogAttrs(ctx, slog.LevelDebug, "retrying an SCM gateway error",
				append(requestAttrs(r, res), slog.Duration("wait", v.wait))...)
		} else {
			retries++
			t.waiting(ctx, r, res, v.wait, retries, v.reason)
		}
		discard(res)
		if err := sleep(ctx, v.wait); err != nil {
			return nil, err
		}
		if req, err = replay(r); err != nil {
			return nil, err
		}
	}
}

// send makes one attempt at r: it authenticates it, bounds it with the
// timeout, and records the answer's budget and metrics.
func (t *transport) send(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(r.Context(), t.opts.Timeout)
	req := r.Clone(ctx)
	secrets := urlSecrets(r.URL)
	if t.opts.Token != nil {
		tok, err := t.opts.Token.Token(ctx)
		if err != nil {
			cancel()
			closeBody(r.Body)
			return nil, tokenError(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		secrets = append(secrets, tok)
	}
	start := time.Now()
	res, err := t.base.RoundTrip(req)
	if err != nil {
		cancel()
		t.opts.Metrics.observe("error", time.Since(start))
		return nil, sanitize(err, secrets...)
	}
	t.opts.Metrics.observe(strconv.Itoa(res.StatusCode), time.Since(start))
	t.record(r, res)
	res.Body = &cancelBody{ReadCloser: res.Body, cancel: cancel}
	return res, nil
}

// tokenError reports a TokenSource's failure, as ErrUnauthenticated unless
// it says better.
func tokenError(err error) error {
	if IsSentinel(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("getting a token: %w", err)
	}
	return fmt.Errorf("%w: getting a token: %w", ErrUnauthenticated, err)
}

// canWait reports whether a wait of d is within MaxWait and ends before the
// context's deadline.
func (t *transport) canWait(ctx context.Context, d time.Duration) bool {
	if d > t.opts.MaxWait {
		return false
	}
	dl, ok := ctx.Deadline()
	return !ok || time.Until(dl) > d
}

// waiting logs and counts a rate-limit wait.
func (t *transport) waiting(ctx context.Context, r *http.Request, res *http.Response, d time.Duration, retry int, reason string) {
	t.opts.Metrics.waited()
	spanWait(ctx, reason, d)
	attrs := append(requestAttrs(r, res), slog.String("reason", reason), slog.Duration("wait", d))
	if retry > 0 {
		attrs = append(attrs, slog.Int("retry", retry))
	}
	t.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "waiting for the SCM's rate limit", attrs...)
}

// requestAttrs describe a call in logs: never its credentials, query or
// body.
func requestAttrs(r *http.Request, res *http.Response) []slog.Attr {
	attrs := []slog.Attr{slog.String("host", r.URL.Host), slog.String("method", r.Method), slog.String("path", r.URL.Path)}
	if res != nil {
		attrs = append(attrs, slog.Int("status", res.StatusCode))
	}
	return attrs
}

// replay returns a copy of r to send again, with a fresh body.
func replay(r *http.Request) (*http.Request, error) {
	req := r.Clone(r.Context())
	if r.Body == nil || r.Body == http.NoBody {
		return req, nil
	}
	body, err := r.GetBody()
	if err != nil {
		return nil, fmt.Errorf("replaying the request body: %w", err)
	}
	req.Body = body
	return req, nil
}

// sleep waits for d or until ctx ends, whichever is first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// discard reads a little of a body that will not be used, so that its
// connection can be reused, and closes it.
func discard(res *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	_ = res.Body.Close()
}

func closeBody(b io.ReadCloser) {
	if b != nil {
		_ = b.Close()
	}
}

// cancelBody ends a call's timeout once its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
