package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/server"
	"github.com/cup-dev/cup/source"
)

// countingController counts its calls and those running at once; every
// call waits for release to be closed (or for its context to end). Get
// finds what Put stored.
type countingController struct {
	release chan struct{}
	calls   atomic.Int64
	running atomic.Int64
	most    atomic.Int64
	stored  sync.Map // namespace/name → *controller.Resource
}

func (c *countingController) enter(ctx context.Context) (leave func(), err error) {
	c.calls.Add(1)
	n := c.running.Add(1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	select {
	case <-c.release:
		return func() { c.running.Add(-1) }, nil
	case <-ctx.Done():
		c.running.Add(-1)
		return nil, ctx.Err()
	}
}

func (c *countingController) Get(ctx context.Context, req *controller.GetRequest) (*controller.Resource, error) {
	leave, err := c.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	if r, ok := c.stored.Load(req.Namespace + "/" + req.Name); ok {
		return r.(*controller.Resource).Clone(), nil
	}
	return nil, controller.ErrNotFound
}

func (c *countingController) List(ctx context.Context, _ *controller.ListRequest) ([]*controller.Resource, error) {
	leave, err := c.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	return []*controller.Resource{}, nil
}

func (c *countingController) Put(ctx context.Context, req *controller.PutRequest) error {
	leave, err := c.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	c.stored.Store(req.Resource.Metadata.Namespace+"/"+req.Resource.Metadata.Name, req.Resource.Clone())
	return nil
}

func (c *countingController) Delete(ctx context.Context, _ *controller.DeleteRequest) error {
	leave, err := c.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	return controller.ErrNotFound
}

// oneCommit is a source of one empty commit; updates run their Apply on
// an empty tree and change nothing.
type oneCommit struct{}

var theCommit = &source.Snapshot{Commit: strings.Repeat("c", 40), FS: fstest.MapFS{}}

func (oneCommit) View(context.Context, string) (*source.Snapshot, error) { return theCommit, nil }

func (oneCommit) Update(ctx context.Context, req *source.UpdateRequest) (*source.UpdateResult, error) {
	if err := req.Apply(ctx, theCommit, memWriter{}); err != nil {
		return nil, err
	}
	return &source.UpdateResult{Base: theCommit.Commit, Commit: theCommit.Commit, Unchanged: true}, nil
}

// memWriter is a Writer of an empty tree that keeps nothing.
type memWriter struct{ fstest.MapFS }

func (memWriter) WriteFile(string, []byte, fs.FileMode) error { return nil }
func (memWriter) Remove(string) error                         { return fs.ErrNotExist }

// callsFixture is a server of one type, "widgets", served by a
// countingController, over an in-memory transport.
type callsFixture struct {
	ctrl    *countingController
	handler http.Handler
	reg     *prometheus.Registry
	logs    *syncBuffer
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newCallsFixture(t *testing.T, opts ...server.Option) *callsFixture {
	t.Helper()
	f := &callsFixture{ctrl: &countingController{release: make(chan struct{})}, reg: prometheus.NewRegistry(), logs: new(syncBuffer)}
	typ := &server.Type{
		Type: controller.Type{Group: "test.cup.dev", Version: "v1", Kind: "Widget", Plural: "widgets"}, Singular: "widget",
		Controller: f.ctrl,
	}
	logger := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := server.New(oneCommit{}, []*server.Type{typ},
		append([]server.Option{server.WithLogger(logger), server.WithMetrics(f.reg)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	f.handler = srv.Handler()
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(f.logs.String())
		}
	})
	return f
}

// rest makes a REST call and returns its status and body.
func (f *callsFixture) rest(method, path, body string) (int, string) {
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rec.Code, rec.Body.String()
}

// client is a Connect client calling the handler in memory.
func (f *callsFixture) client() cupv1alpha1connect.ResourceServiceClient {
	return cupv1alpha1connect.NewResourceServiceClient(&http.Client{Transport: inMemory{f.handler}}, "http://cupd")
}

type inMemory struct{ h http.Handler }

func (m inMemory) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	m.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

// metric returns the value of the gauge or counter named.
func (f *callsFixture) metric(t *testing.T, name string) float64 {
	t.Helper()
	v, ok := f.labelled(t, name, "")
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	return v
}

// labelled returns the value of the gauge or counter named, of the series
// with a label of the value given (any series when it is ""), and whether
// there is one.
func (f *callsFixture) labelled(t *testing.T, name, value string) (float64, bool) {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if value != "" && !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetValue() == value }) {
				continue
			}
			if g := m.GetGauge(); g != nil {
				return g.GetValue(), true
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

func widgetsPath(namespace string) string {
	return "/apis/test.cup.dev/v1/namespaces/" + namespace + "/widgets"
}

func TestMaxConcurrentControllerCalls(t *testing.T) {
	t.Parallel()
	const limit, n = 3, 20
	for _, tc := range []struct {
		name   string
		method string
		path   func(namespace string) string
		body   string
		want   int
	}{
		{"get", "GET", func(ns string) string { return widgetsPath(ns) + "/w" }, "", http.StatusNotFound},
		{"list", "GET", widgetsPath, "", http.StatusOK},
		{"put", "PUT", func(ns string) string { return widgetsPath(ns) + "/w" }, `{"spec": {}}`, http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				f := newCallsFixture(t, server.WithMaxConcurrentControllerCalls(limit), server.WithMaxQueuedControllerCalls(100))
				var wg sync.WaitGroup
				statuses := make([]int, n)
				bodies := make([]string, n)
				for i := range n {
					wg.Go(func() { statuses[i], bodies[i] = f.rest(tc.method, tc.path(fmt.Sprint("ns-", i)), tc.body) })
				}
				synctest.Wait()
				if got := f.ctrl.running.Load(); got != limit {
					t.Errorf("%d controller calls run at once, want %d", got, limit)
				}
				if got := f.metric(t, "cup_controller_calls_in_flight"); got != limit {
					t.Errorf("cup_controller_calls_in_flight = %v, want %d", got, limit)
				}
				if got := f.metric(t, "cup_controller_calls_queued"); got != n-limit {
					t.Errorf("cup_controller_calls_queued = %v, want %d", got, n-limit)
				}
				close(f.ctrl.release)
				wg.Wait()
				for i := range n {
					if statuses[i] != tc.want {
						t.Errorf("call %d = %d %s, want %d", i, statuses[i], bodies[i], tc.want)
					}
				}
				if got := f.ctrl.most.Load(); got > limit {
					t.Errorf("%d controller calls ran at once, more than the limit of %d", got, limit)
				}
				if got := f.metric(t, "cup_controller_calls_in_flight") + f.metric(t, "cup_controller_calls_queued"); got != 0 {
					t.Errorf("%v calls in flight or queued after every call ended", got)
				}
			})
		})
	}
}

func TestMaxQueuedControllerCalls(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newCallsFixture(t, server.WithMaxConcurrentControllerCalls(1), server.WithMaxQueuedControllerCalls(1))
		// A read memoised before the slot is taken.
		close(f.ctrl.release)
		if code, body := f.rest("GET", widgetsPath("cached"), ""); code != http.StatusOK {
			t.Fatalf("GET = %d %s", code, body)
		}
		f.ctrl.release = make(chan struct{})

		// One call runs, one waits.
		var wg sync.WaitGroup
		for _, ns := range []string{"running", "waiting"} {
			wg.Go(func() {
				if code, body := f.rest("GET", widgetsPath(ns), ""); code != http.StatusOK {
					t.Errorf("GET %s = %d %s", ns, code, body)
				}
			})
		}
		synctest.Wait()

		// The next is refused, over REST and Connect, naming the flags.
		code, body := f.rest("GET", widgetsPath("refused")+"/w", "")
		if code != http.StatusTooManyRequests || !strings.Contains(body, "--max-concurrent-controller-calls") || !strings.Contains(body, "--max-queued-controller-calls") {
			t.Errorf("REST get past the queue = %d %s", code, body)
		}
		_, err := f.client().List(t.Context(), connect.NewRequest(&cupv1alpha1.ListRequest{Group: "test.cup.dev", Version: "v1", Plural: "widgets", Namespace: "refused"}))
		if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "--max-concurrent-controller-calls") {
			t.Errorf("Connect list past the queue = %v, want ResourceExhausted naming the flag", err)
		}
		if got := f.metric(t, "cup_controller_calls_rejected_total"); got != 2 {
			t.Errorf("cup_controller_calls_rejected_total = %v, want 2", got)
		}
		// Warnings are rate-limited: two refusals at once make one line.
		if got := strings.Count(f.logs.String(), "refusing controller calls"); got != 1 {
			t.Errorf("%d warnings about refused calls, want 1:\n%s", got, f.logs)
		}

		// A memoised read takes no slot.
		if code, body := f.rest("GET", widgetsPath("cached"), ""); code != http.StatusOK {
			t.Errorf("memoised GET while every slot is taken = %d %s", code, body)
		}
		close(f.ctrl.release)
		wg.Wait()
		if got := f.ctrl.calls.Load(); got != 3 {
			t.Errorf("the controller was called %d times, want 3 (the refused calls must not reach it)", got)
		}
	})
}

func TestQueuedControllerCallDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newCallsFixture(t, server.WithMaxConcurrentControllerCalls(1))
		var wg sync.WaitGroup
		wg.Go(func() {
			if code, body := f.rest("GET", widgetsPath("running"), ""); code != http.StatusOK {
				t.Errorf("GET = %d %s", code, body)
			}
		})
		synctest.Wait()

		// A caller's deadline ends its wait.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := f.client().Get(ctx, connect.NewRequest(&cupv1alpha1.GetRequest{Group: "test.cup.dev", Version: "v1", Plural: "widgets", Namespace: "waiting", Name: "w"}))
		if connect.CodeOf(err) != connect.CodeDeadlineExceeded {
			t.Errorf("Get queued past its deadline = %v, want DeadlineExceeded", err)
		}
		// So does a cancelled caller's.
		ctx, cancel = context.WithCancel(t.Context())
		go func() {
			synctest.Wait()
			cancel()
		}()
		_, err = f.client().Delete(ctx, connect.NewRequest(&cupv1alpha1.DeleteRequest{Group: "test.cup.dev", Version: "v1", Plural: "widgets", Namespace: "waiting", Name: "w"}))
		if err == nil {
			t.Errorf("Delete cancelled while queued succeeded")
		}
		if got := f.ctrl.calls.Load(); got != 1 {
			t.Errorf("the controller was called %d times, want 1: calls that gave up waiting must not run", got)
		}
		if got := f.metric(t, "cup_controller_calls_queued"); got != 0 {
			t.Errorf("cup_controller_calls_queued = %v after the waiting calls gave up", got)
		}
		close(f.ctrl.release)
		wg.Wait()
	})
}

// BenchmarkControllerCalls measures what the bound on controller calls
// adds to a read the memo does not answer (each get names a new resource),
// from 8 callers on 2 cores, against no bound.
func BenchmarkControllerCalls(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts []server.Option
	}{
		{"bound=default", nil},
		{"bound=none", []server.Option{server.WithMaxConcurrentControllerCalls(-1)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctrl := &countingController{release: make(chan struct{})}
			close(ctrl.release)
			typ := &server.Type{
				Type: controller.Type{Group: "test.cup.dev", Version: "v1", Kind: "Widget", Plural: "widgets"}, Singular: "widget",
				Controller: ctrl,
			}
			srv, err := server.New(oneCommit{}, []*server.Type{typ}, append([]server.Option{server.WithLogger(slog.New(slog.DiscardHandler))}, bc.opts...)...)
			if err != nil {
				b.Fatal(err)
			}
			h := srv.Handler()
			var next atomic.Int64
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest("GET", fmt.Sprint(widgetsPath("default"), "/w-", next.Add(1)), nil))
					if rec.Code != http.StatusNotFound {
						b.Fatalf("GET = %d %s", rec.Code, rec.Body)
					}
				}
			})
		})
	}
}
