package server

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"connectrpc.com/connect"
	"golang.org/x/sync/semaphore"
)

// WithMaxInflightRequestBytes bounds the bytes of request bodies that the
// server holds at once, on every protocol: a body's bytes past its first
// 16 KiB count from when they are read until its call ends, so that small
// calls (every read, most writes) are never refused. A compressed body
// (Connect's and gRPC's gzip) counts as --max-request-bytes from its first
// byte, since that is what it may grow to. Working on a body costs a multiple of
// its size (decoding, validation, the file it becomes), so this bounds the
// memory that writes can take together, where --max-request-bytes bounds
// one. A call whose body would pass the bound fails at once with
// ResourceExhausted (HTTP 429), which clients may retry after a pause.
// Zero keeps the default, [DefaultMaxInflightRequestBytes]; less than zero:
// no bound.
func WithMaxInflightRequestBytes(n int64) Option {
	return func(c *config) { c.maxInflight = orDefault(n, DefaultMaxInflightRequestBytes) }
}

// freeBodyBytes is how much of each body is not counted.
const freeBodyBytes = 16 << 10

// bodyBudget counts the request body bytes the server holds; nil when
// unbounded.
type bodyBudget struct {
	sem   *semaphore.Weighted
	limit int64
	// maxBody is what one body may grow to when decompressed.
	maxBody int64
	// held is the bytes counted now; refused counts the calls refused for
	// want of budget.
	held, refused atomic.Int64
}

func newBodyBudget(n, maxBody int64) *bodyBudget {
	if n <= 0 {
		return nil
	}
	return &bodyBudget{sem: semaphore.NewWeighted(n), limit: n, maxBody: maxBody}
}

// compressed reports whether h says the body is compressed, in any of the
// protocols' headers.
func compressed(h http.Header) bool {
	for _, k := range []string{"Content-Encoding", "Connect-Content-Encoding", "Grpc-Encoding"} {
		if v := h.Get(k); v != "" && !strings.EqualFold(v, "identity") {
			return true
		}
	}
	return false
}

// BodyStats is what the server holds of request bodies.
type BodyStats struct {
	// Held is the bytes of request bodies counted against the bound now.
	Held int64
	// Refused is the number of calls refused because the bound was reached.
	Refused int64
}

// BodyStats reports what the server holds of request bodies, for metrics;
// zero without a bound.
func (s *Server) BodyStats() BodyStats {
	if s.bodies == nil {
		return BodyStats{}
	}
	return BodyStats{Held: s.bodies.held.Load(), Refused: s.bodies.refused.Load()}
}

// wrap serves h with request bodies whose bytes are counted against the
// budget until h returns.
func (b *bodyBudget) wrap(h http.Handler) http.Handler {
	if b == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		br := &budgetReader{ReadCloser: r.Body, b: b}
		if compressed(r.Header) {
			br.upfront = b.maxBody
		}
		defer br.release()
		r.Body = br
		h.ServeHTTP(w, r)
	})
}

// budgetReader is a request body whose bytes are taken from the budget as
// they are read.
type budgetReader struct {
	io.ReadCloser
	b       *bodyBudget
	read    int64 // bytes read so far
	held    int64 // bytes counted
	upfront int64 // bytes to count at the first read, however few it reads
	failed  bool
}

func (r *budgetReader) Read(p []byte) (int, error) {
	if r.failed {
		return 0, r.err()
	}
	if r.upfront > 0 {
		if !r.take(r.upfront) {
			return 0, r.err()
		}
		r.upfront = 0
	}
	n, err := r.ReadCloser.Read(p)
	r.read += int64(n)
	if count := r.read - freeBodyBytes - r.held; count > 0 && !r.take(count) {
		return 0, r.err()
	}
	return n, err
}

// take counts n more bytes, or fails the body when the budget lacks them.
func (r *budgetReader) take(n int64) bool {
	if !r.b.sem.TryAcquire(n) {
		r.failed = true
		r.b.refused.Add(1)
		return false
	}
	r.held += n
	r.b.held.Add(n)
	return true
}

func (r *budgetReader) err() error {
	return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf(
		"the server holds %d bytes of other requests' bodies, its limit (cupd --max-inflight-request-bytes): retry in a moment", r.b.limit))
}

func (r *budgetReader) release() {
	if r.held > 0 {
		r.b.sem.Release(r.held)
		r.b.held.Add(-r.held)
		r.held = 0
	}
}
