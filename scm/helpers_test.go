package scm_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cup-dev/cup/internal/testlog"
	"github.com/cup-dev/cup/scm"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// call is a request a fake received.
type call struct {
	Method, Path, Auth string
	Body               []byte
	At                 time.Time
}

// fake is an HTTP server on 127.0.0.1 that answers with a function of the
// call's number (from 1) and records the calls.
type fake struct {
	*httptest.Server
	mu    sync.Mutex
	calls []call
}

func newFake(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, n int)) *fake {
	t.Helper()
	f := &fake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.calls = append(f.calls, call{
			Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: body, At: time.Now(),
		})
		n := len(f.calls)
		f.mu.Unlock()
		respond(w, r, n)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fake) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// client returns a client of the fake, over its own transport unless o
// names one.
func (f *fake) client(o scm.HTTPOptions) *http.Client {
	if o.Transport == nil {
		o.Transport = f.Client().Transport
	}
	return scm.NewHTTPClient(o)
}

// get makes a GET call and returns its status and body.
func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// testLogger logs at debug to t and to the buffer it returns.
func testLogger(t *testing.T) (*slog.Logger, *testlog.Buffer) {
	buf := &testlog.Buffer{}
	h := slog.NewTextHandler(io.MultiWriter(buf, t.Output()), &slog.HandlerOptions{Level: slog.LevelDebug})
	return slog.New(h), buf
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
