package runtime_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/runtime"
)

// BenchmarkWriteToOutput measures the latency from a PUT of an input
// through the server's handler to the commit of the output it changes,
// in direct mode without a batching window: each iteration is one
// change, and p50-ms and p99-ms are over the iterations. Run it with
// -benchtime=1000x for the figures over 1,000 changes.
func BenchmarkWriteToOutput(b *testing.B) {
	fs := widgetFile("w", `{}`)
	p, body := file(partType, "default", "w", "", `{"v": -1}`)
	fs[p] = body
	benchmarkWriteToOutput(b, fs, false)
}

// BenchmarkWriteToOutputLarge is BenchmarkWriteToOutput in a repository
// of 10,000 primaries, each with an input and an output: each change
// reads two new commits (the input's and the output's) whole. Run it with
// -benchtime=100x.
func BenchmarkWriteToOutputLarge(b *testing.B) {
	fs, _ := benchFiles(10_000, runtime.MapNameAligned, "latency")
	p, body := file(widgetType, "default", "w", "", `{}`)
	fs[p] = body
	p, body = file(partType, "default", "w", "", `{"v": -1}`)
	fs[p] = body
	benchmarkWriteToOutput(b, fs, true)
}

// benchmarkWriteToOutput measures the latency of changes to the input of
// widget w; converged says that every output other than w's is already
// in fs, so that starting costs no commit but w's.
func benchmarkWriteToOutput(b *testing.B, fs map[string][]byte, converged bool) {
	r := reconciler("latency", pure(summarize), runtime.Watch{Type: partType, Mapper: runtime.Mapper{Kind: runtime.MapNameAligned}})
	r.Write.MaxWritesPerMinute = 1 << 30
	h := start(b, config{files: fs, quiet: true}, r)
	h.waitIdle(5 * time.Minute)
	if n := len(h.store.committed()); converged && n != 1 {
		b.Fatalf("%d commits to start, want 1 (the output of w)", n)
	}
	handler := h.srv.Server.Handler()
	committed := make(chan recordedWrite, 16)
	h.store.mu.Lock()
	h.store.written = func(w recordedWrite) { committed <- w }
	h.store.mu.Unlock()
	path := restPath(partType, "default", "w")
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		want := fmt.Sprintf(`"v":%d`, i)
		t0 := time.Now()
		req := httptest.NewRequestWithContext(b.Context(), http.MethodPut, path, strings.NewReader(fmt.Sprintf(`{"spec": {"v": %d}}`, i)))
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code/100 != 2 {
			b.Fatalf("PUT: %d %s", rec.Code, rec.Body)
		}
		h.rt.Poke() // as the server does once the runtime is set on it
		for w := range committed {
			if len(w.req.Changes) == 1 && w.req.Changes[0].Resource != nil && bytes.Contains(w.req.Changes[0].Resource.Spec, []byte(want)) {
				break
			}
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)*50/100]), "p50-ms")
	b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchFiles are n widgets, each related to one part by the mapper of
// kind, and when reconciler is set, the gadget summarize makes of them
// for it, as the runtime would have written it. It returns the files and
// the watch of the parts.
func benchFiles(n int, kind runtime.MapperKind, reconciler string) (map[string][]byte, runtime.Watch) {
	fs := map[string][]byte{}
	mapper := runtime.Mapper{Kind: kind}
	for i := range n {
		name, part := fmt.Sprintf("w%05d", i), fmt.Sprintf("p%05d", i)
		widgetSpec := map[string]any{"n": i}
		partSpec := map[string]any{"v": i, "pad": strings.Repeat("x", 64)}
		partMD := map[string]any{"labels": map[string]string{"tier": "bench"}}
		switch kind {
		case runtime.MapNameAligned:
			part = name
		case runtime.MapOwner:
			mapper.Key = "test.cup.dev/widget"
			partMD["annotations"] = map[string]string{mapper.Key: "default/" + name}
		case runtime.MapSelector:
			mapper.Path = "spec.selector"
			widgetSpec["selector"] = map[string]any{"matchLabels": map[string]string{"id": name}}
			partMD["labels"] = map[string]string{"tier": "bench", "id": name}
		case runtime.MapReference:
			mapper.Path = "spec.widgets"
			partSpec["widgets"] = name
		case runtime.MapReferencedBy:
			mapper.Path = "spec.parts"
			widgetSpec["parts"] = part
		}
		widgetJSON, _ := json.Marshal(widgetSpec)
		partJSON, _ := json.Marshal(partSpec)
		partMDJSON, _ := json.Marshal(partMD)
		p, b := file(widgetType, "default", name, "", string(widgetJSON))
		fs[p] = b
		p, b = file(partType, "default", part, string(partMDJSON), string(partJSON))
		fs[p] = b
		if reconciler != "" {
			md, _ := json.Marshal(map[string]any{"annotations": map[string]string{
				runtime.AnnotationOwner:           reconciler + "/default/" + name,
				runtime.AnnotationBoundReferences: fmt.Sprintf(`[%q]`, inputRef(partType, "default", part)),
			}})
			p, b = file(gadgetType, "default", name, string(md), fmt.Sprintf(`{"inputs": {"Part/%s": %s}, "primary": %s}`, part, partJSON, widgetJSON))
			fs[p] = b
		}
	}
	return fs, runtime.Watch{Type: partType, Mapper: mapper}
}

// BenchmarkResync measures a full resync of a reconciler over 10,000
// primaries, each name-aligned with an input, once the runtime has
// written their outputs: from Resync until the runtime is idle, every
// primary is reconciled again and no commit is made. The figure to hold
// is 2 s per resync (resync-ms).
func BenchmarkResync(b *testing.B) {
	const n = 10_000
	fs, watch := benchFiles(n, runtime.MapNameAligned, "")
	r := reconciler("resync", pure(summarize), watch)
	r.Write.BatchWindow = 200 * time.Millisecond // the first outputs in a few commits
	t0 := time.Now()
	h := start(b, config{files: fs, quiet: true}, r)
	h.waitIdle(5 * time.Minute)
	b.Logf("converged in %s with %d commits", time.Since(t0).Round(time.Millisecond), len(h.store.committed()))
	if got := len(h.list(gadgetType)); got != n {
		b.Fatalf("%d outputs, want %d", got, n)
	}
	benchmarkResync(b, h, n)
}

// BenchmarkResyncMappers is BenchmarkResync for each kind of mapper, in
// a repository that holds the outputs already: starting (a first resync)
// must make no commit.
func BenchmarkResyncMappers(b *testing.B) {
	const n = 10_000
	for _, kind := range []runtime.MapperKind{runtime.MapNameAligned, runtime.MapOwner, runtime.MapSelector, runtime.MapReference, runtime.MapReferencedBy} {
		b.Run(string(kind), func(b *testing.B) {
			fs, watch := benchFiles(n, kind, "resync")
			h := start(b, config{files: fs, quiet: true}, reconciler("resync", pure(summarize), watch))
			h.waitIdle(5 * time.Minute)
			if got := len(h.store.committed()); got != 0 {
				b.Fatalf("%d commits to start, want none", got)
			}
			benchmarkResync(b, h, n)
		})
	}
}

// benchmarkResync times resyncs of the n primaries of a converged
// runtime.
func benchmarkResync(b *testing.B, h *harness, n int) {
	head := h.srv.Head(b)
	calls := h.counter("controller_runtime_reconcile_total")
	b.ResetTimer()
	for range b.N {
		h.rt.Resync()
		h.waitIdle(5 * time.Minute)
	}
	b.StopTimer()
	b.ReportMetric(ms(b.Elapsed())/float64(b.N), "resync-ms")
	if got := h.srv.Head(b); got != head {
		b.Fatalf("a resync with nothing changed moved the head to %.12s", got)
	}
	if got := h.counter("controller_runtime_reconcile_total") - calls; got != float64(n*b.N) {
		b.Fatalf("%v reconciles, want %d", got, n*b.N)
	}
}
