package scmtest

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Recorder is the bookkeeping every fake shares: it records the calls a
// fake receives and counts its faults down. A fake embeds it, which gives
// it Fake's SetFault and Requests, and calls Record first thing for every
// request. The zero value is ready to use; a Recorder is safe for
// concurrent use.
type Recorder struct {
	mu         sync.Mutex
	requests   []Request
	fault      Fault
	n          int
	retryAfter time.Duration
}

// SetFault makes the next n calls fail with f (n < 0: every call until
// SetFault(FaultNone, 0, 0)). RetryAfter is how long a FaultRateLimited
// lasts.
func (r *Recorder) SetFault(f Fault, n int, retryAfter time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n == 0 {
		f = FaultNone
	}
	r.fault, r.n, r.retryAfter = f, n, retryAfter
}

// Requests returns the calls recorded so far, oldest first.
func (r *Recorder) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests)
}

// Record records req, leaving its body readable again, and returns the
// fault to answer it with (FaultNone to serve it) and, for
// FaultRateLimited, how long the limit lasts.
func (r *Recorder) Record(req *http.Request) (Fault, time.Duration) {
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, Request{
		Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery, Header: req.Header.Clone(), Body: body,
	})
	f := r.fault
	if r.n > 0 {
		if r.n--; r.n == 0 {
			r.fault = FaultNone
		}
	}
	return f, r.retryAfter
}
