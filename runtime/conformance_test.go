package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/runtime"
	"github.com/cup-dev/cup/runtime/queue"
)

// The runtime's conformance suite, in the manner of COSI's RuntimeSuite:
// each test starts a server over a fresh in-memory repository and a
// runtime over it (start), drives it through the REST API or as another
// writer of the branch, and checks the commits and outputs. Tests that
// check time (backoff, RequeueAfter, windows, pauses) run on a fake clock
// and step it; the others poll every few milliseconds.

// steadyBackoff doubles from 10 s without jitter, so that a test knows
// when each retry is due.
var steadyBackoff = &queue.Backoff{Base: 10 * time.Second, Factor: 2, Cap: time.Minute}

// widgetFile is the file of widget name with spec.
func widgetFile(name, spec string) map[string][]byte {
	p, b := file(widgetType, "default", name, "", spec)
	return files(p, b)
}

// step moves the fake clock and waits for the runtime to do what came
// due.
func (h *harness) step(d time.Duration) {
	h.t.Helper()
	h.clock.Step(d)
	h.idle()
}

// TestFailingTransformBacksOff: a failing transform is retried after the
// backoff, which grows with each failure, and writes nothing; once it is
// fixed, the next retry writes the output.
func TestFailingTransformBacksOff(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	var broken atomic.Bool
	broken.Store(true)
	tr := func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
		calls.Add(1)
		if broken.Load() {
			return nil, errors.New("boom")
		}
		return summarize(req)
	}
	h := start(t, config{files: widgetFile("w", `{"n": 1}`), fakeClock: true, opts: runtime.Options{Backoff: steadyBackoff}},
		reconciler("summary", tr))
	h.idle()
	head := h.srv.Head(t)
	for i, delay := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
		want := int64(i + 1)
		h.step(delay - time.Second)
		if n := calls.Load(); n != want {
			t.Fatalf("retry %d: %d calls a second before the backoff of %s ends, want %d", i, n, delay, want)
		}
		h.step(time.Second)
		if n := calls.Load(); n != want+1 {
			t.Fatalf("retry %d: %d calls once the backoff of %s ended, want %d", i, n, delay, want+1)
		}
	}
	if h := h.srv.Head(t); h != head {
		t.Fatalf("a failing transform wrote: the head moved to %s", h)
	}
	if n := h.counter("workqueue_retries_total"); n != 4 {
		t.Errorf("%v retries counted, want 4", n)
	}
	conds, err := h.rt.Status(t.Context(), "", widgetType, "default", "w")
	if err != nil {
		t.Fatal(err)
	}
	if c := find(conds, runtime.ConditionTransformFailed); c == nil || c.Status != runtime.True || !strings.Contains(c.Message, "boom") {
		t.Fatalf("conditions %+v: want TransformFailed saying boom", conds)
	}
	broken.Store(false)
	h.step(80 * time.Second)
	if g := h.get(gadgetType, "default", "w"); g == nil {
		t.Fatal("no output once the transform was fixed")
	}
}

// TestPanickingTransformIsRecovered: a panic in the transform is
// recovered, counted, reported as TransformFailed and retried with
// backoff like an error; the runtime goes on.
func TestPanickingTransformIsRecovered(t *testing.T) {
	t.Parallel()
	var panicking atomic.Bool
	panicking.Store(true)
	tr := func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
		if panicking.Load() {
			var m map[string]int
			m["nil map"]++ // a real runtime panic, not a call to panic
		}
		return summarize(req)
	}
	h := start(t, config{files: widgetFile("w", `{"n": 1}`), fakeClock: true, opts: runtime.Options{Backoff: steadyBackoff}},
		reconciler("summary", tr))
	h.idle()
	if n := h.counter("controller_runtime_reconcile_panics_total"); n != 1 {
		t.Fatalf("%v panics counted, want 1", n)
	}
	if n := h.counter("controller_runtime_reconcile_total", "result", "error"); n != 1 {
		t.Fatalf("%v failed reconciles counted, want 1", n)
	}
	conds, err := h.rt.Status(t.Context(), "", widgetType, "default", "w")
	if err != nil {
		t.Fatal(err)
	}
	if c := find(conds, runtime.ConditionTransformFailed); c == nil || !strings.Contains(c.Message, "panicked") {
		t.Fatalf("conditions %+v: want TransformFailed saying the transform panicked", conds)
	}
	h.step(10 * time.Second)
	if n := h.counter("controller_runtime_reconcile_panics_total"); n != 2 {
		t.Fatalf("%v panics counted after the retry, want 2", n)
	}
	panicking.Store(false)
	h.step(20 * time.Second)
	if g := h.get(gadgetType, "default", "w"); g == nil {
		t.Fatal("no output once the transform stopped panicking")
	}
}

// TestRequeueAfter: a transform that asks for RequeueAfter without an
// error runs again when it is due, and not before; a success forgets
// earlier failures, so a failure after it backs off from the start.
func TestRequeueAfter(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	var failing atomic.Bool
	tr := func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
		calls.Add(1)
		if failing.Load() {
			return nil, errors.New("boom")
		}
		resp, err := summarize(req)
		if err == nil {
			resp.RequeueAfter = runtime.Duration(30 * time.Second)
		}
		return resp, err
	}
	h := start(t, config{files: widgetFile("w", `{"n": 1}`), fakeClock: true, opts: runtime.Options{Backoff: steadyBackoff}},
		reconciler("summary", tr))
	h.idle()
	if g := h.get(gadgetType, "default", "w"); g == nil {
		t.Fatal("no output")
	}
	n := calls.Load()
	for range 3 {
		h.step(29 * time.Second)
		if got := calls.Load(); got != n {
			t.Fatalf("%d calls before RequeueAfter, want %d", got, n)
		}
		h.step(time.Second)
		if got := calls.Load(); got != n+1 {
			t.Fatalf("%d calls once RequeueAfter is due, want %d", got, n+1)
		}
		n++
	}
	if c := h.counter("controller_runtime_reconcile_total", "result", "requeue_after"); c < 3 {
		t.Errorf("%v reconciles with requeue_after counted, want at least 3", c)
	}
	// Now the transform fails: the retries come after 10 s and 20 s, as
	// if it had never failed before.
	failing.Store(true)
	h.step(30 * time.Second)
	n = calls.Load()
	h.step(10 * time.Second)
	h.step(20 * time.Second)
	if got := calls.Load(); got != n+2 {
		t.Fatalf("%d calls 10 s and 30 s after a failure, want %d", got, n+2)
	}
}

// TestCascade: one reconciler's output is another's input: parts feed
// the gadget of a widget (selector), and the gadget feeds its report
// (nameAligned). A change of a part reaches the report; deleting the
// widget deletes both outputs; the head then stops moving.
func TestCascade(t *testing.T) {
	t.Parallel()
	report := pure(func(req *runtime.Request) (*runtime.Response, error) {
		var parts []string
		for _, in := range req.Inputs {
			parts = append(parts, inputNamesOf(in)...)
		}
		spec, _ := json.Marshal(map[string]any{"parts": parts})
		return &runtime.Response{Outputs: []*controller.Resource{{APIVersion: reportType.APIVersion(), Kind: reportType.Kind,
			Metadata: controller.Metadata{Name: req.Primary.Metadata.Name}, Spec: spec}}}, nil
	})
	gadgets := reconciler("gadgets", pure(summarize), runtime.Watch{Type: partType, Mapper: runtime.Mapper{Kind: runtime.MapSelector, Path: "spec.selector"}})
	reports := &runtime.Reconciler{Name: "reports", For: widgetType, Transform: report, Write: runtime.Write{Mode: runtime.WriteDirect},
		Watches: []runtime.Watch{{Type: gadgetType, Mapper: runtime.Mapper{Kind: runtime.MapNameAligned}}},
		Outputs: []runtime.Output{{Type: reportType, Exclusive: true}}}
	h := start(t, config{files: widgetFile("w", `{"selector": {"matchLabels": {"team": "a"}}}`)}, gadgets, reports)
	parts := func() string {
		r := h.get(reportType, "default", "w")
		if r == nil {
			return "no report"
		}
		return fmt.Sprint(specOf(t, r)["parts"])
	}
	h.put(partType, "default", "p1", `{"labels": {"team": "a"}}`, `{"v": 1}`)
	eventually(t, "the report of the first part", func() (bool, string) { p := parts(); return p == "[Part/p1]", p })
	h.put(partType, "default", "p2", `{"labels": {"team": "a"}}`, `{"v": 2}`)
	eventually(t, "the report of two parts", func() (bool, string) { p := parts(); return p == "[Part/p1 Part/p2]", p })
	h.idle()
	r := h.get(reportType, "default", "w")
	if got := r.Metadata.Annotations[runtime.AnnotationOwner]; got != "reports/default/w" {
		t.Errorf("report owner %q", got)
	}
	if got := boundRefs(t, r); len(got) != 1 || got[0] != inputRef(gadgetType, "default", "w") {
		t.Errorf("report bound references %q, want the gadget", got)
	}
	settled(t, h)
	h.del(widgetType, "default", "w")
	h.idle()
	if h.get(gadgetType, "default", "w") != nil || h.get(reportType, "default", "w") != nil {
		t.Fatal("the outputs of a deleted widget are still there")
	}
}

// inputNamesOf returns the input names a summarize output lists.
func inputNamesOf(r *controller.Resource) []string {
	var spec struct{ Inputs map[string]json.RawMessage }
	_ = json.Unmarshal(r.Spec, &spec)
	var out []string
	for n := range spec.Inputs {
		out = append(out, n)
	}
	return sorted(out)
}

// settled checks that a converged runtime writes nothing more: after a
// resync (every primary reconciled again) the head has not moved.
func settled(t *testing.T, h *harness) {
	t.Helper()
	h.idle()
	head := h.srv.Head(t)
	h.rt.Resync()
	h.idle()
	if got := h.srv.Head(t); got != head {
		t.Fatalf("the head moved from %.12s to %.12s with nothing changed", head, got)
	}
}

// TestOutputCleanup: an output the transform no longer produces is
// deleted in the commit that writes the primary's other outputs, and a
// deleted primary's outputs are deleted together.
func TestOutputCleanup(t *testing.T) {
	t.Parallel()
	tr := pure(func(req *runtime.Request) (*runtime.Response, error) {
		var spec struct{ Both bool }
		if err := json.Unmarshal(req.Primary.Spec, &spec); err != nil {
			return nil, fmt.Errorf("%w: %v", runtime.ErrInvalidInput, err)
		}
		out := func(suffix string) *controller.Resource {
			return &controller.Resource{APIVersion: gadgetType.APIVersion(), Kind: gadgetType.Kind,
				Metadata: controller.Metadata{Name: req.Primary.Metadata.Name + suffix}, Spec: req.Primary.Spec}
		}
		resp := &runtime.Response{Outputs: []*controller.Resource{out("-a")}}
		if spec.Both {
			resp.Outputs = append(resp.Outputs, out("-b"))
		}
		return resp, nil
	})
	h := start(t, config{files: widgetFile("w", `{"both": true}`)}, reconciler("pair", tr))
	h.idle()
	if h.get(gadgetType, "default", "w-a") == nil || h.get(gadgetType, "default", "w-b") == nil {
		t.Fatal("want both outputs")
	}
	before := h.commits()
	h.put(widgetType, "default", "w", "", `{"both": false, "n": 2}`)
	h.idle()
	if got := h.commits() - before; got != 2 {
		t.Fatalf("%d commits, want the put and one of the reconciler", got)
	}
	a := h.get(gadgetType, "default", "w-a")
	if a == nil || specOf(t, a)["n"] != float64(2) || h.get(gadgetType, "default", "w-b") != nil {
		t.Fatalf("want w-a updated and w-b gone; w-a is %v", a)
	}
	w := last(h.store.committed())
	if len(w.req.Changes) != 2 || w.req.Changes[0].Resource == nil || w.req.Changes[1].Resource != nil {
		t.Fatalf("the last write %+v: want a put of w-a and a delete of w-b", w.req.Changes)
	}
	before = h.commits()
	h.del(widgetType, "default", "w")
	h.idle()
	if got := h.commits() - before; got != 2 {
		t.Fatalf("%d commits, want the delete and one of the reconciler", got)
	}
	if len(h.list(gadgetType)) != 0 {
		t.Fatalf("outputs left: %v", h.list(gadgetType))
	}
}

func last[T any](s []T) T { return s[len(s)-1] }

// TestLoopGuard: an output that is also an input of its own reconciler
// (the transform reads its previous gadget) converges: each change of
// the primary costs one commit of the reconciler, and then the head
// stops moving.
func TestLoopGuard(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	tr := pure(func(req *runtime.Request) (*runtime.Response, error) {
		calls.Add(1)
		var want struct{ N int }
		_ = json.Unmarshal(req.Primary.Spec, &want)
		var have struct{ N, Generation int }
		for _, in := range req.Inputs {
			_ = json.Unmarshal(in.Spec, &have)
		}
		gen := have.Generation
		if have.N != want.N || gen == 0 {
			gen++
		}
		spec, _ := json.Marshal(map[string]int{"n": want.N, "generation": gen})
		return &runtime.Response{Outputs: []*controller.Resource{{APIVersion: gadgetType.APIVersion(), Kind: gadgetType.Kind,
			Metadata: controller.Metadata{Name: req.Primary.Metadata.Name}, Spec: spec}}}, nil
	})
	h := start(t, config{files: widgetFile("w", `{"n": 1}`)},
		reconciler("loop", tr, runtime.Watch{Type: gadgetType, Mapper: runtime.Mapper{Kind: runtime.MapNameAligned}}))
	h.idle()
	for n := 2; n <= 4; n++ {
		before := h.commits()
		h.put(widgetType, "default", "w", "", fmt.Sprintf(`{"n": %d}`, n))
		h.idle()
		if got := h.commits() - before; got != 2 {
			t.Fatalf("n=%d: %d commits, want the put and one of the reconciler", n, got)
		}
		settled(t, h)
	}
	if g := specOf(t, h.get(gadgetType, "default", "w")); g["generation"] != float64(4) || g["n"] != float64(4) {
		t.Fatalf("gadget %v: want generation 4 for n 4", g)
	}
}

// TestRunawayIsPaused: a transform whose output changes on every run
// (it embeds the revision) is paused after MaxWritesPerMinute commits,
// with a Paused condition, and the head stops moving; a minute later it
// writes again, and is paused again.
func TestRunawayIsPaused(t *testing.T) {
	t.Parallel()
	tr := pure(func(req *runtime.Request) (*runtime.Response, error) {
		spec, _ := json.Marshal(map[string]string{"revision": req.Revision})
		return &runtime.Response{Outputs: []*controller.Resource{{APIVersion: gadgetType.APIVersion(), Kind: gadgetType.Kind,
			Metadata: controller.Metadata{Name: req.Primary.Metadata.Name}, Spec: spec}}}, nil
	})
	r := reconciler("runaway", tr)
	r.Write.MaxWritesPerMinute = 3
	h := start(t, config{files: widgetFile("w", `{}`), fakeClock: true}, r)
	h.idle()
	if got := h.commits(); got != 1+4 {
		t.Fatalf("%d commits, want the first and 4 of the reconciler (one more than 3 a minute)", got)
	}
	conds, err := h.rt.Status(t.Context(), "", widgetType, "default", "w")
	if err != nil {
		t.Fatal(err)
	}
	if c := find(conds, runtime.ConditionPaused); c == nil || c.Status != runtime.True {
		t.Fatalf("conditions %+v: want Paused", conds)
	}
	head := h.srv.Head(t)
	h.rt.Resync()
	h.step(59 * time.Second)
	if got := h.srv.Head(t); got != head {
		t.Fatalf("a paused reconciler wrote: the head moved to %.12s", got)
	}
	h.step(time.Second)
	if got := h.commits(); got != 1+8 {
		t.Fatalf("%d commits a minute later, want 4 more", got)
	}
	if n := h.counter("cup_reconciler_paused_total"); n != 2 {
		t.Fatalf("paused %v times, want 2", n)
	}
}

// TestBatching: with a batching window, the outputs of several primaries
// reconciled within it are one commit.
func TestBatching(t *testing.T) {
	t.Parallel()
	const n = 5
	fs := map[string][]byte{}
	parts := map[string][]byte{}
	for i := range n {
		p, b := file(widgetType, "default", fmt.Sprintf("w%d", i), "", `{}`)
		fs[p] = b
		p, b = file(partType, "default", fmt.Sprintf("w%d", i), "", `{"v": 1}`)
		fs[p] = b
		p, b = file(partType, "default", fmt.Sprintf("w%d", i), "", `{"v": 2}`)
		parts[p] = b
	}
	r := reconciler("batched", pure(summarize), runtime.Watch{Type: partType, Mapper: runtime.Mapper{Kind: runtime.MapNameAligned}})
	r.Write.BatchWindow = time.Second
	h := start(t, config{files: fs, fakeClock: true}, r)
	writes := func(want float64) {
		eventually(t, "the reconciles of the batch", func() (bool, string) {
			got := h.counter("controller_runtime_reconcile_total", "result", "write")
			return got == want, fmt.Sprint(got)
		})
	}
	writes(n)
	if got := h.commits(); got != 1 {
		t.Fatalf("%d commits before the window closed", got)
	}
	h.step(time.Second)
	if got := h.commits(); got != 2 {
		t.Fatalf("%d commits after the first window, want 2", got)
	}
	h.commit(parts) // every input changes at once
	writes(2 * n)
	h.step(time.Second)
	if got := h.commits(); got != 4 {
		t.Fatalf("%d commits after the second window, want 4", got)
	}
	w := last(h.store.committed())
	if len(w.req.Changes) != n || !strings.Contains(w.req.Message, fmt.Sprintf("for %d primaries", n)) {
		t.Fatalf("the last commit %q has %d changes, want %d", w.req.Message, len(w.req.Changes), n)
	}
	for name, g := range h.list(gadgetType) {
		if got := specOf(t, g)["inputs"].(map[string]any)["Part/"+g.Metadata.Name]; fmt.Sprint(got) != "map[v:2]" {
			t.Errorf("%s: input %v, want v 2", name, got)
		}
	}
}

// TestUnchangedInputsMakeNoCommit: reconciling a converged primary again
// and again, with nothing changed, calls the transform each time and
// makes no commit; the primary stays Ready.
func TestUnchangedInputsMakeNoCommit(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	tr := func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
		calls.Add(1)
		return summarize(req)
	}
	fs := widgetFile("w", `{"n": 1}`)
	p, b := file(partType, "default", "w", `{"labels": {"x": "y"}}`, `{"v": 1}`)
	fs[p] = b
	h := start(t, config{files: fs}, reconciler("summary", tr, runtime.Watch{Type: partType, Mapper: runtime.Mapper{Kind: runtime.MapNameAligned}}))
	h.idle()
	head, n := h.srv.Head(t), calls.Load()
	const times = 20
	for range times {
		h.rt.Resync()
		h.idle()
	}
	if got := calls.Load() - n; got != times {
		t.Fatalf("%d transform calls, want %d", got, times)
	}
	if got := h.srv.Head(t); got != head {
		t.Fatalf("the head moved from %.12s to %.12s", head, got)
	}
	if got := len(h.store.committed()); got != 1 {
		t.Fatalf("%d commits by the reconciler, want 1", got)
	}
	conds, err := h.rt.Status(t.Context(), "", widgetType, "default", "w")
	if err != nil {
		t.Fatal(err)
	}
	if c := find(conds, runtime.ConditionReady); c == nil || c.Status != runtime.True || c.ObservedRevision != head {
		t.Fatalf("conditions %+v: want Ready at %.12s", conds, head)
	}
}
