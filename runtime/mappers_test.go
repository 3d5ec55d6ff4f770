package runtime_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cup-dev/cup/runtime"
)

// mapperStep is one change through the REST API and the inputs each
// widget's output must then list ("<Kind>/<name>").
type mapperStep struct {
	what   string
	change func(h *harness)
	want   map[string][]string
}

// TestMappers: for each kind of mapper, a change of an input reaches the
// primaries it maps to, before and after the change (an input moving
// from one primary to another wakes both), and an input deleted leaves
// the outputs that listed it.
func TestMappers(t *testing.T) {
	t.Parallel()
	put := func(name, metadata, spec string) func(*harness) {
		return func(h *harness) { h.put(partType, "default", name, metadata, spec) }
	}
	putWidget := func(name, spec string) func(*harness) {
		return func(h *harness) { h.put(widgetType, "default", name, "", spec) }
	}
	del := func(name string) func(*harness) { return func(h *harness) { h.del(partType, "default", name) } }
	for _, tc := range []struct {
		kind    runtime.Mapper
		widgets map[string]string // name → spec
		steps   []mapperStep
	}{
		{runtime.Mapper{Kind: runtime.MapNameAligned}, map[string]string{"w1": `{}`, "w2": `{}`}, []mapperStep{
			{"a part named after a widget", put("w1", "", `{"v": 1}`), map[string][]string{"w1": {"Part/w1"}, "w2": nil}},
			{"another", put("w2", "", `{"v": 1}`), map[string][]string{"w1": {"Part/w1"}, "w2": {"Part/w2"}}},
			{"a part deleted", del("w1"), map[string][]string{"w1": nil, "w2": {"Part/w2"}}},
		}},
		{runtime.Mapper{Kind: runtime.MapOwner, Key: "test.cup.dev/widget"}, map[string]string{"w1": `{}`, "w2": `{}`}, []mapperStep{
			{"a part owned by w1", put("p1", `{"annotations": {"test.cup.dev/widget": "w1"}}`, `{}`), map[string][]string{"w1": {"Part/p1"}, "w2": nil}},
			{"its owner named with a namespace", put("p2", `{"annotations": {"test.cup.dev/widget": "default/w1"}}`, `{}`), map[string][]string{"w1": {"Part/p1", "Part/p2"}, "w2": nil}},
			{"p1 moved to w2", put("p1", `{"annotations": {"test.cup.dev/widget": "w2"}}`, `{}`), map[string][]string{"w1": {"Part/p2"}, "w2": {"Part/p1"}}},
			{"p1 deleted", del("p1"), map[string][]string{"w1": {"Part/p2"}, "w2": nil}},
		}},
		{runtime.Mapper{Kind: runtime.MapReference, Path: "spec.widgets"}, map[string]string{"w1": `{}`, "w2": `{}`}, []mapperStep{
			{"a part naming w1", put("p1", "", `{"widgets": "w1"}`), map[string][]string{"w1": {"Part/p1"}, "w2": nil}},
			{"a part naming both", put("p2", "", `{"widgets": ["w1", "w2"]}`), map[string][]string{"w1": {"Part/p1", "Part/p2"}, "w2": {"Part/p2"}}},
			{"p1 naming w2 instead", put("p1", "", `{"widgets": ["w2"]}`), map[string][]string{"w1": {"Part/p2"}, "w2": {"Part/p1", "Part/p2"}}},
			{"p2 naming none", put("p2", "", `{}`), map[string][]string{"w1": nil, "w2": {"Part/p1"}}},
		}},
		{runtime.Mapper{Kind: runtime.MapReferencedBy, Path: "spec.parts"}, map[string]string{"w1": `{"parts": ["p1", "p2"]}`, "w2": `{"parts": "p2"}`}, []mapperStep{
			{"a part w1 names", put("p1", "", `{"v": 1}`), map[string][]string{"w1": {"Part/p1"}, "w2": nil}},
			{"a part both name", put("p2", "", `{"v": 1}`), map[string][]string{"w1": {"Part/p1", "Part/p2"}, "w2": {"Part/p2"}}},
			{"w2 naming p1 instead", putWidget("w2", `{"parts": ["p1"]}`), map[string][]string{"w1": {"Part/p1", "Part/p2"}, "w2": {"Part/p1"}}},
			{"p1 deleted", del("p1"), map[string][]string{"w1": {"Part/p2"}, "w2": nil}},
		}},
		{runtime.Mapper{Kind: runtime.MapSelector, Path: "spec.selector"}, map[string]string{
			"w1": `{"selector": {"matchLabels": {"team": "a"}}}`, "w2": `{"selector": {"matchLabels": {"team": "b"}}}`, "all": `{"selector": {}}`}, []mapperStep{
			{"a part of team a", put("p1", `{"labels": {"team": "a"}}`, `{}`), map[string][]string{"w1": {"Part/p1"}, "w2": nil, "all": {"Part/p1"}}},
			{"relabelled to team b", put("p1", `{"labels": {"team": "b"}}`, `{}`), map[string][]string{"w1": nil, "w2": {"Part/p1"}, "all": {"Part/p1"}}},
			{"w1 selecting team b", putWidget("w1", `{"selector": {"matchLabels": {"team": "b"}}}`), map[string][]string{"w1": {"Part/p1"}, "w2": {"Part/p1"}, "all": {"Part/p1"}}},
			{"unlabelled", put("p1", "", `{}`), map[string][]string{"w1": nil, "w2": nil, "all": {"Part/p1"}}},
		}},
	} {
		t.Run(string(tc.kind.Kind), func(t *testing.T) {
			t.Parallel()
			fs := map[string][]byte{}
			for name, spec := range tc.widgets {
				p, b := file(widgetType, "default", name, "", spec)
				fs[p] = b
			}
			h := start(t, config{files: fs}, reconciler("mapped", pure(summarize), runtime.Watch{Type: partType, Mapper: tc.kind}))
			for _, s := range tc.steps {
				s.change(h)
				h.idle()
				for w, want := range s.want {
					g := h.get(gadgetType, "default", w)
					if g == nil {
						t.Fatalf("%s: no output for %s", s.what, w)
					}
					if got := inputNames(t, g); !slices.Equal(got, want) && len(got)+len(want) > 0 {
						t.Fatalf("%s: %s lists %v, want %v", s.what, w, got, want)
					}
					var refs []string
					for _, in := range want {
						refs = append(refs, inputRef(partType, "default", in[len("Part/"):]))
					}
					if got := boundRefs(t, g); !slices.Equal(got, refs) && len(got)+len(refs) > 0 {
						t.Fatalf("%s: %s bound to %v, want %v", s.what, w, got, refs)
					}
				}
			}
			settled(t, h)
		})
	}
}

// TestBoundReferenceWakesThePrimary: an output records the inputs it was
// computed from; when a reference to the primary disappears from such an
// input (so that it maps to no primary any more), the primary is still
// reconciled and its output drops the input and the bound reference.
func TestBoundReferenceWakesThePrimary(t *testing.T) {
	t.Parallel()
	h := start(t, config{files: widgetFile("w", `{}`)},
		reconciler("refs", pure(summarize), runtime.Watch{Type: partType, Mapper: runtime.Mapper{Kind: runtime.MapReference, Path: "spec.widgets"}}))
	h.put(partType, "default", "p", "", `{"widgets": ["w"]}`)
	h.idle()
	g := h.get(gadgetType, "default", "w")
	if got := boundRefs(t, g); !slices.Equal(got, []string{"test.cup.dev/Part/default/p"}) {
		t.Fatalf("bound references %q, want the part", got)
	}
	h.put(partType, "default", "p", "", `{"widgets": []}`)
	h.idle()
	g = h.get(gadgetType, "default", "w")
	if got := boundRefs(t, g); len(got) != 0 || len(inputNames(t, g)) != 0 {
		t.Fatalf("bound references %q and inputs %v, want none", got, inputNames(t, g))
	}
}

// TestConcurrentReconciles: with several workers and many primaries,
// reconciles run in parallel, but never two of one primary at once, and
// the outputs end as the inputs say.
func TestConcurrentReconciles(t *testing.T) {
	t.Parallel()
	const n, workers = 32, 8
	fs := map[string][]byte{}
	for i := range n {
		p, b := file(widgetType, "default", fmt.Sprintf("w%02d", i), "", `{}`)
		fs[p] = b
		p, b = file(partType, "default", fmt.Sprintf("w%02d", i), "", `{"v": 0}`)
		fs[p] = b
	}
	var (
		running  sync.Map // primary → *atomic.Int32
		all, max atomic.Int32
		overlaps atomic.Int32
	)
	tr := func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
		c, _ := running.LoadOrStore(req.Primary.Metadata.Name, new(atomic.Int32))
		if c.(*atomic.Int32).Add(1) > 1 {
			overlaps.Add(1)
		}
		defer c.(*atomic.Int32).Add(-1)
		now := all.Add(1)
		defer all.Add(-1)
		for m := max.Load(); now > m && !max.CompareAndSwap(m, now); m = max.Load() {
		}
		time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
		return summarize(req)
	}
	r := reconciler("parallel", tr, runtime.Watch{Type: partType, Mapper: runtime.Mapper{Kind: runtime.MapNameAligned}})
	r.Write.MaxWritesPerMinute = 1000 // a commit per primary and round is no runaway here
	h := start(t, config{files: fs, opts: runtime.Options{Workers: workers}}, r)
	h.idle()
	for round := 1; round <= 2; round++ {
		parts := map[string][]byte{}
		for i := range n {
			p, b := file(partType, "default", fmt.Sprintf("w%02d", i), "", fmt.Sprintf(`{"v": %d}`, round))
			parts[p] = b
		}
		h.commit(parts)
		for range 3 {
			h.rt.Resync()
		}
		h.idle()
	}
	if o := overlaps.Load(); o > 0 {
		t.Fatalf("%d reconciles overlapped another of the same primary", o)
	}
	if m := max.Load(); m < 2 || m > workers {
		t.Fatalf("at most %d reconciles at once, want 2 to %d", m, workers)
	}
	gadgets := h.list(gadgetType)
	if len(gadgets) != n {
		t.Fatalf("%d outputs, want %d", len(gadgets), n)
	}
	for name, g := range gadgets {
		if got := fmt.Sprint(specOf(t, g)["inputs"]); got != fmt.Sprintf("map[Part/%s:map[v:2]]", g.Metadata.Name) {
			t.Errorf("%s: inputs %s", name, got)
		}
	}
	settled(t, h)
}

// TestMappersAcrossNamespaces: an owner annotation may name a primary of
// another namespace, and a label selector selects in its primary's
// namespace only.
func TestMappersAcrossNamespaces(t *testing.T) {
	t.Parallel()
	fs := widgetFile("w", `{"selector": {"matchLabels": {"team": "a"}}}`)
	for _, f := range [][2]string{
		{"default", `{"labels": {"team": "a"}}`},
		{"other", `{"labels": {"team": "a"}, "annotations": {"test.cup.dev/widget": "default/w"}}`},
		{"third", `{"annotations": {"test.cup.dev/widget": "w"}}`}, // names third/w, which is not there
	} {
		p, b := file(partType, f[0], "p", f[1], `{}`)
		fs[p] = b
	}
	selected := reconciler("selected", pure(summarize), runtime.Watch{Type: partType, Mapper: runtime.Mapper{Kind: runtime.MapSelector, Path: "spec.selector"}})
	owned := &runtime.Reconciler{Name: "owned", For: widgetType, Transform: pure(summarizeAs(reportType)), Write: runtime.Write{Mode: runtime.WriteDirect},
		Watches: []runtime.Watch{{Type: partType, Mapper: runtime.Mapper{Kind: runtime.MapOwner, Key: "test.cup.dev/widget"}}},
		Outputs: []runtime.Output{{Type: reportType, Exclusive: true}}}
	h := start(t, config{files: fs}, selected, owned)
	h.idle()
	if got := boundRefs(t, h.get(gadgetType, "default", "w")); !slices.Equal(got, []string{inputRef(partType, "default", "p")}) {
		t.Errorf("the selector's output is bound to %q, want default/p only", got)
	}
	if got := boundRefs(t, h.get(reportType, "default", "w")); !slices.Equal(got, []string{inputRef(partType, "other", "p")}) {
		t.Errorf("the owner mapper's output is bound to %q, want other/p only", got)
	}
	h.del(partType, "other", "p")
	h.idle()
	if got := boundRefs(t, h.get(reportType, "default", "w")); len(got) != 0 {
		t.Errorf("the owner mapper's output is bound to %q once other/p is gone", got)
	}
}
