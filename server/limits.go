package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
)

// WithMaxListPage bounds how many resources one list answer holds. A list
// asking for more (page_size, or ?limit= on the REST form) fails with
// InvalidArgument naming the field and n: asking again cannot help. A
// list asking for no particular number gets pages of n with a next page
// token. Zero keeps the default, [DefaultMaxListPage]; less than zero: no
// bound but the proto's 100,000.
func WithMaxListPage(n int) Option {
	return func(c *config) { c.maxListPage = orDefault(n, DefaultMaxListPage) }
}

// WithRequestTimeout bounds the time one call may take, reading and
// writing alike; a call that takes longer fails with DeadlineExceeded
// naming the limit. A client's own shorter deadline still applies. Zero
// keeps the default, [DefaultRequestTimeout]; less than zero: no bound.
func WithRequestTimeout(d time.Duration) Option {
	return func(c *config) { c.requestTimeout = orDefault(d, DefaultRequestTimeout) }
}

// WithMaxConcurrentWrites bounds the writes (puts and deletes, dry runs
// included) the server works on at once. A write arriving while n are in
// progress fails at once with ResourceExhausted, which clients may retry
// after a pause (HTTP 429 on the REST form). Zero keeps the default,
// [DefaultMaxConcurrentWrites]; less than zero: no bound.
func WithMaxConcurrentWrites(n int) Option {
	return func(c *config) { c.maxWrites = orDefault(n, DefaultMaxConcurrentWrites) }
}

// WithMaxJSONDepth bounds how deeply a request's resource may nest objects
// and arrays, counting the resource itself as depth 1 (so its spec as 2).
// A deeper resource fails with InvalidArgument before anything else is
// done with it. Zero keeps the default, [DefaultMaxJSONDepth]; otherwise
// n must be between 2 and document.MaxDepth (512), the limit on what cup
// reads from repositories, or New fails: there is no unbounded depth.
func WithMaxJSONDepth(n int) Option {
	return func(c *config) { c.maxDepth = orDefault(n, DefaultMaxJSONDepth) }
}

// WithMaxResourceBytes bounds the size of the file form of a resource a
// write may store: its JSON with indentation, which a deeply nested spec
// makes many times larger than the request. A larger one fails with
// InvalidArgument before it is encoded. Zero keeps the default,
// [DefaultMaxResourceBytes]; less than zero makes New fail: there is no
// unbounded size.
func WithMaxResourceBytes(n int64) Option {
	return func(c *config) { c.maxResource = orDefault(n, DefaultMaxResourceBytes) }
}

// timeoutError is the cause of a call's context ending at the server's
// request timeout.
type timeoutError struct{ limit time.Duration }

func (e *timeoutError) Error() string {
	return fmt.Sprintf("the call took longer than the server's limit of %s (cupd --request-timeout)", e.limit)
}

// writeGrace is how long past a request timeout of d the answer may still
// take to write, so that a call cut at the limit can still say so: half of
// d, at most five seconds.
func writeGrace(d time.Duration) time.Duration { return min(d/2, 5*time.Second) }

// withTimeout bounds every call h serves by the request timeout: its
// context ends at the limit, reading its body fails at the limit, and
// writing its answer fails a little later (writeGrace). Without the read
// deadline a body trickled a byte at a time would hold the call, its
// goroutine and its connection for as long as the client likes: a
// context does not interrupt a read from the connection.
func (s *Server) withTimeout(h http.Handler) http.Handler {
	d := s.cfg.requestTimeout
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if isWatch(r) {
			// A watch lasts as long as its client wants: its request must
			// arrive within the limit, and each event must be written
			// within it (watchSend), but the call has no deadline.
			if r.Body != nil && r.Body != http.NoBody {
				if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil && !errors.Is(err, http.ErrNotSupported) {
					s.cfg.logger.WarnContext(r.Context(), "setting the request's read deadline", "error", err)
				}
			}
			h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), watchWriterKey{}, &watchWriter{rc: rc, limit: d})))
			return
		}
		ctx, cancel := context.WithTimeoutCause(r.Context(), d, &timeoutError{limit: d})
		defer cancel()
		deadline, _ := ctx.Deadline()
		if r.Body != nil && r.Body != http.NoBody {
			// No body, no deadline: HTTP/1.1 then already reads ahead
			// in the background to notice the client leaving, and a
			// deadline there would cancel the call's context early.
			// Once the body is read to its end, net/http lifts the
			// deadline itself as it starts reading ahead.
			if err := rc.SetReadDeadline(deadline); err != nil && !errors.Is(err, http.ErrNotSupported) {
				s.cfg.logger.WarnContext(ctx, "setting the request's read deadline", "error", err)
			}
		}
		if err := rc.SetWriteDeadline(deadline.Add(writeGrace(d))); err != nil && !errors.Is(err, http.ErrNotSupported) {
			s.cfg.logger.WarnContext(ctx, "setting the request's write deadline", "error", err)
		}
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// isWatch reports whether r asks for a watch: the Watch RPC, or a REST
// list with watch=true (or 1).
func isWatch(r *http.Request) bool {
	if r.URL.Path == "/cup.v1alpha1.ResourceService/Watch" {
		return true
	}
	if r.Method != http.MethodGet || !strings.Contains(r.URL.RawQuery, "watch") {
		return false
	}
	w := r.URL.Query()["watch"]
	return len(w) == 1 && (w[0] == "true" || w[0] == "1")
}

type watchWriterKey struct{}

// watchWriter bounds the writes of a watch's answer.
type watchWriter struct {
	rc    *http.ResponseController
	limit time.Duration
}

// watchSend lets the next write of the watch that ctx serves take up to the
// request timeout: a client that reads nothing for that long is gone, and
// its watch ends.
func watchSend(ctx context.Context) {
	if w, _ := ctx.Value(watchWriterKey{}).(*watchWriter); w != nil {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.limit))
	}
}

// explainTimeout replaces a deadline error with one naming the server's
// limit when that limit ended ctx.
func explainTimeout(ctx context.Context, err error) error {
	var te *timeoutError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &te) && connect.CodeOf(toConnect(err)) == connect.CodeDeadlineExceeded {
		return connect.NewError(connect.CodeDeadlineExceeded, te)
	}
	return err
}

// slots bounds how many of something run at once; nil when unbounded.
// refused says, in a ResourceExhausted error, that all n are taken.
type slots struct {
	ch      chan struct{}
	refused func(n int) error
}

func newSlots(n int, refused func(n int) error) slots {
	if n <= 0 {
		return slots{}
	}
	return slots{ch: make(chan struct{}, n), refused: refused}
}

// acquire takes a slot, or fails with refused when every slot is taken.
// release gives it back.
func (sl slots) acquire() (release func(), err error) {
	if sl.ch == nil {
		return func() {}, nil
	}
	select {
	case sl.ch <- struct{}{}:
		return func() { <-sl.ch }, nil
	default:
		return nil, sl.refused(cap(sl.ch))
	}
}

// newWriteSlots bounds concurrent writes (--max-concurrent-writes).
func newWriteSlots(n int) slots {
	return newSlots(n, func(n int) error {
		return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf(
			"the server is already working on %d writes, its limit (cupd --max-concurrent-writes): retry in a moment", n))
	})
}
