package runtime_test

import (
	"context"
	"fmt"
	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/servertest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cup-dev/cup/runtime"
)

// Tests of bugs found in the runtime: each failed before its fix.

// gatedStore holds each Write until the test opens the gate.
type gatedStore struct {
	runtime.Store
	entered chan struct{} // receives once per Write that waits
	gate    chan struct{} // closed to let writes through
}

func (s *gatedStore) Write(ctx context.Context, req *runtime.WriteRequest) (*runtime.WriteResult, error) {
	s.entered <- struct{}{}
	<-s.gate
	return s.Store.Write(ctx, req)
}

// TestRunWaitsForTheBatchBeingWritten: Run returns only after a batch
// whose window closed is written. It used to return while the write ran
// on the window's timer, which then wrote after Run had returned (a
// goroutine leaked past the runtime's end).
func TestRunWaitsForTheBatchBeingWritten(t *testing.T) {
	t.Parallel()
	gs := &gatedStore{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	p, b := file(widgetType, "default", "w", "", `{"n": 1}`)
	r := reconciler("summary", pure(summarize))
	r.Write.BatchWindow = time.Second
	h := start(t, config{files: files(p, b), fakeClock: true, wrap: func(s runtime.Store) runtime.Store { gs.Store = s; return gs }}, r)
	eventually(t, "the output in a batch", func() (bool, string) {
		n := h.counter("controller_runtime_reconcile_total", "result", "write")
		return n == 1, fmt.Sprint(n)
	})
	stepped := make(chan struct{})
	go func() { h.clock.Step(time.Second); close(stepped) }() // the window closes: the batch is written
	<-gs.entered
	stopped := make(chan struct{})
	go func() { h.stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Error("Run returned while a batch was being written")
	case <-time.After(100 * time.Millisecond):
	}
	close(gs.gate)
	<-stopped
	<-stepped
	if got := h.get(gadgetType, "default", "w"); got == nil {
		t.Error("the batch was not written")
	}
}

// TestConflictClearsWhenTheBlockerGoes: an output held by a resource the
// reconciler does not own is a conflict; once that resource is deleted,
// the primary is reconciled and its output written. The runtime used to
// wake only the owners of a changed output, so the primary waited for
// the next resync.
func TestConflictClearsWhenTheBlockerGoes(t *testing.T) {
	t.Parallel()
	wp, wb := file(widgetType, "default", "w", "", `{"n": 1}`)
	gp, gb := file(gadgetType, "default", "w", "", `{"by": "hand"}`)
	h := start(t, config{files: files(wp, wb, gp, gb)}, reconciler("summary", pure(summarize)))
	h.idle()
	conds, err := h.rt.Status(t.Context(), "", widgetType, "default", "w")
	if err != nil {
		t.Fatal(err)
	}
	if c := find(conds, runtime.ConditionConflict); c == nil || c.Status != runtime.True {
		t.Fatalf("conditions %+v: want Conflict", conds)
	}
	h.del(gadgetType, "default", "w")
	eventually(t, "the output once the blocker is gone", func() (bool, string) {
		g := h.get(gadgetType, "default", "w")
		if g == nil {
			return false, "absent"
		}
		return g.Metadata.Annotations[runtime.AnnotationOwner] == "summary/default/w", fmt.Sprint(g.Metadata.Annotations)
	})
}

// TestStaleWritesAreRecomputedAtTheNewHead: a write refused because the
// branch moved is computed again at the new head, never at the base that
// was refused. With several workers writing at once, the runtime used to
// retry at once from the view it had, so the same primary was refused
// again and again at the same base until the head was next read.
func TestStaleWritesAreRecomputedAtTheNewHead(t *testing.T) {
	t.Parallel()
	const n = 40
	fs := map[string][]byte{}
	for i := range n {
		p, b := file(widgetType, "default", fmt.Sprintf("w%02d", i), "", `{"n": 1}`)
		fs[p] = b
	}
	h := start(t, config{files: fs, opts: runtime.Options{Workers: 8}}, reconciler("summary", pure(summarize)))
	h.idle()
	if got := len(h.list(gadgetType)); got != n {
		t.Fatalf("%d outputs, want %d", got, n)
	}
	type attempt struct{ primary, base string }
	seen := map[attempt]bool{}
	for _, w := range h.store.stale() {
		for _, c := range w.req.Changes {
			a := attempt{c.Name, w.req.Base}
			if seen[a] {
				t.Errorf("%s refused as stale twice at base %.12s", c.Name, w.req.Base)
			}
			seen[a] = true
		}
	}
	t.Logf("%d writes refused as stale, %d commits", len(h.store.stale()), len(h.store.committed()))
}

// TestResyncReconcilesEachPrimaryOnce: a resync queues every primary and
// every owner of outputs, and reconciles each once. It used to queue the
// owners after the primaries, so that a primary a worker had taken (or
// finished) meanwhile was queued, and reconciled, a second time.
func TestResyncReconcilesEachPrimaryOnce(t *testing.T) {
	t.Parallel()
	const n = 400
	fs := map[string][]byte{}
	for i := range n {
		p, b := file(widgetType, "default", fmt.Sprintf("w%03d", i), "", `{}`)
		fs[p] = b
	}
	var calls atomic.Int64
	r := reconciler("once", func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
		calls.Add(1)
		return summarize(req)
	})
	r.Write.BatchWindow = 20 * time.Millisecond
	h := start(t, config{files: fs, quiet: true, opts: runtime.Options{Workers: 4}}, r)
	h.idle()
	for range 3 {
		before := calls.Load()
		h.rt.Resync()
		h.idle()
		if got := calls.Load() - before; got != n {
			t.Fatalf("a resync made %d reconciles of %d primaries", got, n)
		}
	}
}

// TestStatusIsDerivedOnce: asking for a primary's conditions again at the
// same commit does not run the transform again; at a new commit it does.
func TestStatusIsDerivedOnce(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv, rt := startDemo(t, bundleReconciler(compile(&calls)))
	if err := rt.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	before := calls.Load()
	for range 5 {
		if _, err := rt.Status(t.Context(), "", bundleType, "default", "web"); err != nil {
			t.Fatal(err)
		}
	}
	if got := calls.Load() - before; got != 1 {
		t.Fatalf("5 Status calls at one commit ran the transform %d times, want 1", got)
	}
	if r := srv.Do(t, "PUT", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/dark-mode",
		`{"metadata": {"labels": {"team": "web"}}, "spec": {"enabled": true}}`); r.Status/100 != 2 {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	if err := rt.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	before = calls.Load()
	if _, err := rt.Status(t.Context(), "", bundleType, "default", "web"); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load() - before; got != 1 {
		t.Fatalf("Status at a new commit ran the transform %d times, want 1", got)
	}
}

// listCounter counts the List calls of a store, by type.
type listCounter struct {
	runtime.Store
	mu    sync.Mutex
	calls map[string]int
}

func (s *listCounter) List(ctx context.Context, commit string, t controller.Type, namespaces []string) ([]*controller.Resource, error) {
	s.mu.Lock()
	s.calls[t.Plural]++
	s.mu.Unlock()
	return s.Store.List(ctx, commit, t, namespaces)
}

// TestViewIsBuiltOnce: many Status calls at a commit whose view is not
// built yet (every Get of a primary after a new commit asks) read the
// inputs once, not once per call.
func TestViewIsBuiltOnce(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t, servertest.WithBundles())
	store := &listCounter{Store: srv.Server.ReconcileStore(), calls: map[string]int{}}
	var calls atomic.Int64
	rt, err := runtime.New(store, []*runtime.Reconciler{bundleReconciler(compile(&calls))}, runtime.Options{Logger: servertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, err := rt.Status(t.Context(), "", bundleType, "default", "web"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	store.mu.Lock()
	defer store.mu.Unlock()
	if store.calls["bundles"] != 1 || store.calls["flags"] != 1 || store.calls["flagbundles"] != 1 {
		t.Fatalf("16 concurrent Status calls listed %v, want each type once", store.calls)
	}
}
