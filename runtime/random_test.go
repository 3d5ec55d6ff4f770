package runtime_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/runtime"
)

// randomSeed replays runs of TestRandomWrites, which runs the seeds N,
// N+1 and N+2 as subtests named after them and logs each: go test
// ./runtime -run 'TestRandomWrites/^N$' -runtime.seed=N (or
// CUP_RUNTIME_SEED=N in place of the flag) replays the run of seed N.
var randomSeed = flag.Uint64("runtime.seed", 0, "the seed of TestRandomWrites (default: $CUP_RUNTIME_SEED, else random)")

func seed(t *testing.T) uint64 {
	t.Helper()
	if *randomSeed != 0 {
		return *randomSeed
	}
	if s := os.Getenv("CUP_RUNTIME_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CUP_RUNTIME_SEED=%q: %v", s, err)
		}
		return n
	}
	return rand.Uint64()
}

// report is the second reconciler of the random runs: a Report per
// widget, listing the parts that name it and the inputs of its gadget.
var report = pure(func(req *runtime.Request) (*runtime.Response, error) {
	spec := map[string]any{"parts": []string{}, "gadget": []string{}}
	for _, in := range req.Inputs {
		switch in.Kind {
		case partType.Kind:
			spec["parts"] = append(spec["parts"].([]string), in.Metadata.Name)
		case gadgetType.Kind:
			spec["gadget"] = inputNamesOf(in)
		}
	}
	b, err := json.Marshal(spec)
	return &runtime.Response{Outputs: []*controller.Resource{{APIVersion: reportType.APIVersion(), Kind: reportType.Kind,
		Metadata: controller.Metadata{Name: req.Primary.Metadata.Name}, Spec: b}}}, err
})

// TestRandomWrites writes random widgets and parts through the REST API
// (and now and then several in one commit, as another writer), with
// random small delays, while two reconcilers with random workers and
// batching windows run: gadgets (parts by label selector) and reports
// (parts that name the widget, and the widget's gadget: a cascade). Once
// the runtime is idle, every output must be what the transform computes
// from the final inputs, mapped by an oracle written apart from the
// runtime's mappers, with the right owner and bound references; and
// nothing more is written. The seed is logged; see randomSeed to replay.
func TestRandomWrites(t *testing.T) {
	t.Parallel()
	base := seed(t)
	for i := range uint64(3) {
		s := base + i
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			t.Parallel()
			t.Logf("seed %d (replay: go test ./runtime -run 'TestRandomWrites/^%d$' -runtime.seed=%d)", s, s, s)
			randomRun(t, rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15)))
		})
	}
}

func randomRun(t *testing.T, rnd *rand.Rand) {
	windows := []time.Duration{0, 0, 5 * time.Millisecond, 20 * time.Millisecond}
	gadgets := reconciler("gadgets", pure(summarize), runtime.Watch{Type: partType, Mapper: runtime.Mapper{Kind: runtime.MapSelector, Path: "spec.selector"}})
	reports := &runtime.Reconciler{Name: "reports", For: widgetType, Transform: report, Write: runtime.Write{Mode: runtime.WriteDirect},
		Watches: []runtime.Watch{
			{Type: partType, Mapper: runtime.Mapper{Kind: runtime.MapReference, Path: "spec.widgets"}},
			{Type: gadgetType, Mapper: runtime.Mapper{Kind: runtime.MapNameAligned}},
		},
		Outputs: []runtime.Output{{Type: reportType, Exclusive: true}}}
	for _, r := range []*runtime.Reconciler{gadgets, reports} {
		r.Write.BatchWindow = windows[rnd.IntN(len(windows))]
		r.Write.MaxWritesPerMinute = 10_000
	}
	workers := 1 + rnd.IntN(4)
	t.Logf("workers %d, windows %s and %s", workers, gadgets.Write.BatchWindow, reports.Write.BatchWindow)
	h := start(t, config{opts: runtime.Options{Workers: workers}}, gadgets, reports)

	widgets := []string{"w0", "w1", "w2", "w3"}
	parts := []string{"p0", "p1", "p2", "p3", "p4", "p5"}
	teams := []string{"a", "b"}
	widgetSpec := func() string {
		switch rnd.IntN(4) {
		case 0:
			return `{}` // no selector: no parts
		case 1:
			return `{"selector": {}}` // every part
		}
		return fmt.Sprintf(`{"selector": {"matchLabels": {"team": %q}}}`, teams[rnd.IntN(len(teams))])
	}
	partBody := func() (string, string) {
		md := `{}`
		if rnd.IntN(3) > 0 {
			md = fmt.Sprintf(`{"labels": {"team": %q}}`, teams[rnd.IntN(len(teams))])
		}
		var named []string
		for _, w := range widgets {
			if rnd.IntN(3) == 0 {
				named = append(named, w)
			}
		}
		refs, _ := json.Marshal(named)
		return md, fmt.Sprintf(`{"v": %d, "widgets": %s}`, rnd.IntN(5), refs)
	}
	for range 50 {
		switch op := rnd.IntN(10); {
		case op < 3:
			h.put(widgetType, "default", widgets[rnd.IntN(len(widgets))], "", widgetSpec())
		case op < 4:
			h.srv.Do(t, "DELETE", restPath(widgetType, "default", widgets[rnd.IntN(len(widgets))]), "")
			h.rt.Poke()
		case op < 8:
			md, spec := partBody()
			h.put(partType, "default", parts[rnd.IntN(len(parts))], md, spec)
		case op < 9:
			h.srv.Do(t, "DELETE", restPath(partType, "default", parts[rnd.IntN(len(parts))]), "")
			h.rt.Poke()
		default: // several parts in one commit, by another writer
			fs := map[string][]byte{}
			for range 1 + rnd.IntN(3) {
				name := parts[rnd.IntN(len(parts))]
				md, spec := partBody()
				p, b := file(partType, "default", name, md, spec)
				if rnd.IntN(4) == 0 && h.get(partType, "default", name) != nil {
					b = nil // deleted, when it is there to delete
				}
				fs[p] = b
			}
			h.commit(fs)
		}
		time.Sleep(time.Duration(rnd.IntN(3000)) * time.Microsecond)
	}
	h.idle()
	checkOracle(t, h)
	settled(t, h)
}

// checkOracle checks every output against the transforms applied to the
// inputs an oracle maps from the final widgets and parts.
func checkOracle(t *testing.T, h *harness) {
	t.Helper()
	widgets, parts := h.list(widgetType), h.list(partType)
	gotGadgets, gotReports := h.list(gadgetType), h.list(reportType)
	if len(gotGadgets) != len(widgets) || len(gotReports) != len(widgets) {
		t.Errorf("%d gadgets and %d reports for %d widgets", len(gotGadgets), len(gotReports), len(widgets))
	}
	for k, w := range widgets {
		// Gadgets: the parts whose labels the widget's selector matches.
		var sel struct {
			Selector *struct{ MatchLabels map[string]string }
		}
		_ = json.Unmarshal(w.Spec, &sel)
		var selected []*controller.Resource
		for _, pk := range sortedKeys(parts) {
			p := parts[pk]
			if sel.Selector != nil && labelsMatch(sel.Selector.MatchLabels, p.Metadata.Labels) {
				selected = append(selected, p)
			}
		}
		expect(t, h, "gadgets", gotGadgets[k], w, selected, summarize)
		// Reports: the parts that name the widget, then its gadget.
		var named []*controller.Resource
		if g := gotGadgets[k]; g != nil {
			named = append(named, g) // Gadget sorts before Part
		}
		for _, pk := range sortedKeys(parts) {
			var spec struct{ Widgets []string }
			_ = json.Unmarshal(parts[pk].Spec, &spec)
			if slices.Contains(spec.Widgets, w.Metadata.Name) {
				named = append(named, parts[pk])
			}
		}
		expect(t, h, "reports", gotReports[k], w, named, func(req *runtime.Request) (*runtime.Response, error) {
			return report(t.Context(), req)
		})
	}
}

// expect compares an output with what transform makes of the primary and
// inputs, and checks its owner and bound references.
func expect(t *testing.T, h *harness, reconciler string, got, primary *controller.Resource, inputs []*controller.Resource,
	transform func(*runtime.Request) (*runtime.Response, error)) {
	t.Helper()
	name := primary.Metadata.Namespace + "/" + primary.Metadata.Name
	if got == nil {
		t.Errorf("%s: no output for %s", reconciler, name)
		return
	}
	resp, err := transform(&runtime.Request{Reconciler: reconciler, Primary: primary, Inputs: inputs})
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(got.Spec, resp.Outputs[0].Spec) {
		t.Errorf("%s: the output of %s is\n%s\nwant\n%s", reconciler, name, got.Spec, resp.Outputs[0].Spec)
	}
	if o := got.Metadata.Annotations[runtime.AnnotationOwner]; o != reconciler+"/"+name {
		t.Errorf("%s: the output of %s is owned by %q", reconciler, name, o)
	}
	var refs []string
	for _, in := range inputs {
		refs = append(refs, inputRef(testType(in.Kind, ""), in.Metadata.Namespace, in.Metadata.Name))
	}
	if b := boundRefs(t, got); !slices.Equal(b, refs) && len(b)+len(refs) > 0 {
		t.Errorf("%s: the output of %s is bound to %q, want %q", reconciler, name, b, refs)
	}
}

func labelsMatch(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return sorted(out)
}

func jsonEqual(a, b []byte) bool {
	var va, vb any
	if json.NewDecoder(bytes.NewReader(a)).Decode(&va) != nil || json.NewDecoder(bytes.NewReader(b)).Decode(&vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
