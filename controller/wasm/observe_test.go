package wasm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/wasm"
)

func TestRunsAreCountedAndTraced(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	rt := newRuntime(t, wasm.WithCacheDir(compiledDir), wasm.WithMetrics(reg), wasm.WithTracerProvider(tp))
	c := newController(t, rt, "faults", nil)
	tree := newMemFS(t, nil).Snapshot()
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	runs := []struct {
		ctx     context.Context
		name    string
		outcome string
	}{
		{t.Context(), "ok", "ok"},
		{t.Context(), "missing", "exit"},
		{t.Context(), "alloc", "limit"},
		{canceled, "ok", "canceled"},
	}
	for _, r := range runs {
		_, _ = c.Get(r.ctx, &controller.GetRequest{FS: tree, Type: flagType, Namespace: "default", Name: r.name})
	}

	want := `
# HELP cup_wasm_calls_total WASM controller module runs, by controller, verb and outcome (ok, exit, limit, timeout, canceled, trap).
# TYPE cup_wasm_calls_total counter
cup_wasm_calls_total{controller="faults",outcome="canceled",verb="get"} 1
cup_wasm_calls_total{controller="faults",outcome="exit",verb="get"} 1
cup_wasm_calls_total{controller="faults",outcome="limit",verb="get"} 1
cup_wasm_calls_total{controller="faults",outcome="ok",verb="get"} 1
# HELP cup_wasm_instances_alive WASM controller module instances existing now.
# TYPE cup_wasm_instances_alive gauge
cup_wasm_instances_alive 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "cup_wasm_calls_total", "cup_wasm_instances_alive"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "cup_wasm_call_duration_seconds"); n != 1 {
		t.Errorf("%d duration series, want 1", n)
	}

	spans := exp.GetSpans().Snapshots()
	if len(spans) != len(runs) {
		t.Fatalf("%d spans, want %d", len(spans), len(runs))
	}
	for i, s := range spans {
		if s.Name() != "controller get" {
			t.Errorf("span %q, want %q", s.Name(), "controller get")
		}
		a := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			a[kv.Key] = kv.Value.Emit()
		}
		if a["cup.controller"] != "faults" || a["cup.kind"] != "Flag" || a["cup.verb"] != "get" || a["cup.wasm.outcome"] != runs[i].outcome {
			t.Errorf("span %d attributes %v, want controller faults, kind Flag, verb get, outcome %s", i, a, runs[i].outcome)
		}
	}
	if got := spans[1].Attributes(); !hasAttr(got, attribute.Int("cup.wasm.exit_code", 2)) {
		t.Errorf("attributes %v lack the exit code 2", got)
	}
}

func hasAttr(kvs []attribute.KeyValue, want attribute.KeyValue) bool {
	for _, kv := range kvs {
		if kv == want {
			return true
		}
	}
	return false
}
