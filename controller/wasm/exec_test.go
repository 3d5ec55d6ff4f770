package wasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/wasm"
)

func TestEmptyTree(t *testing.T) {
	t.Parallel()
	if err := fstest.TestFS(wasm.EmptyTree); err != nil {
		t.Fatal(err)
	}
}

// echoed is what the exec program's echo verb reports.
type echoed struct {
	Args  []string `json:"args"`
	Env   []string `json:"env"`
	Stdin string   `json:"stdin"`
	Root  []string `json:"root"`
	Ls    string   `json:"ls"`
	In    string   `json:"in"`
	Write string   `json:"write"`
}

func TestExecRunsInTheSandbox(t *testing.T) {
	t.Parallel()
	c := newController(t, nil, "exec", nil)
	tests := []struct {
		name string
		fs   fstest.MapFS
		root []string
		in   string
	}{
		{"no tree", nil, nil, ""},
		{"a tree", fstest.MapFS{"in.txt": {Data: []byte("from the tree")}}, []string{"in.txt"}, "from the tree"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := &wasm.ExecRequest{Verb: "echo", Args: []string{"a b", ""}, Stdin: []byte(`{"x": 0.1}`)}
			if tt.fs != nil {
				req.FS = tt.fs
			}
			res, err := c.Exec(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 || res.Message != "" {
				t.Errorf("exit code %d, message %q; want 0 and none", res.ExitCode, res.Message)
			}
			var got echoed
			if err := json.Unmarshal(res.Stdout, &got); err != nil {
				t.Fatalf("stdout %q: %v", res.Stdout, err)
			}
			if fmt.Sprintf("%q", got.Args) != `["exec" "echo" "a b" ""]` {
				t.Errorf("args = %q, want exec echo, then the request's", got.Args)
			}
			if len(got.Env) != 0 {
				t.Errorf("environment = %q, want none", got.Env)
			}
			if got.Stdin != `{"x": 0.1}` {
				t.Errorf("stdin = %q", got.Stdin)
			}
			if fmt.Sprint(got.Root) != fmt.Sprint(tt.root) || got.Ls != "<nil>" || got.In != tt.in {
				t.Errorf("the module saw / = %q (%s), /in.txt = %q; want %q and %q", got.Root, got.Ls, got.In, tt.root, tt.in)
			}
			if !strings.Contains(strings.ToLower(got.Write), "read-only file system") {
				t.Errorf("writing /out.txt: %q, want a read-only file system", got.Write)
			}
		})
	}
}

func TestExecExitCodes(t *testing.T) {
	t.Parallel()
	c := newController(t, nil, "exec", nil)
	tests := []struct {
		name    string
		args    []string
		code    uint32
		message string
	}{
		{"text", []string{"exit", "1", "something broke"}, 1, "something broke"},
		{"json", []string{"exit", "3", `{"code": "invalid_input", "message": "spec.flags is missing"}`}, 3, "spec.flags is missing"},
		{"panic", []string{"panic"}, 2, "panic: boom: exec panicked"},
		{"zero", []string{"exit", "0", "said on success"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := c.Exec(t.Context(), &wasm.ExecRequest{Verb: tt.args[0], Args: tt.args[1:]})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tt.code || !strings.HasPrefix(res.Message, tt.message) || strings.Contains(res.Message, "goroutine") {
				t.Errorf("exit code %d, message %q; want %d, %q", res.ExitCode, res.Message, tt.code, tt.message)
			}
			if tt.args[0] == "exit" && string(res.Stdout) != "out" {
				t.Errorf("stdout = %q, want %q", res.Stdout, "out")
			}
		})
	}
}

func TestExecLimits(t *testing.T) {
	t.Parallel()
	c := newController(t, nil, "exec", &wasm.Spec{Path: "exec.wasm", Timeout: time.Second, MaxOutputBytes: 1 << 20})
	// The memory and output limits are met long before a minute, also on
	// a loaded machine, where a second may not be enough to reach them.
	patient := newController(t, nil, "exec", &wasm.Spec{Path: "exec.wasm", Timeout: time.Minute, MaxOutputBytes: 1 << 20})
	tests := []struct {
		verb string
		c    *wasm.Controller
		want []error
		says string
	}{
		{"loop", c, []error{controller.ErrLimit, context.DeadlineExceeded}, `module "exec": loop: stopped after the 1s timeout`},
		{"alloc", patient, []error{controller.ErrLimit}, "ran out of its 16 MiB of memory"},
		{"flood", patient, []error{controller.ErrLimit}, "more than 1048576 bytes to stdout"},
	}
	for _, tt := range tests {
		t.Run(tt.verb, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			res, err := tt.c.Exec(t.Context(), &wasm.ExecRequest{Verb: tt.verb})
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("took %s", took)
			}
			if err == nil {
				t.Fatalf("Exec = exit code %d, want an error", res.ExitCode)
			}
			for _, s := range sentinels {
				want := false
				for _, w := range tt.want {
					want = want || w == s
				}
				if got := errors.Is(err, s); got != want {
					t.Errorf("errors.Is(%v, %v) = %t, want %t", err, s, got, want)
				}
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q does not say %q", err, tt.says)
			}
		})
	}

	t.Run("caller's deadline", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, err := c.Exec(ctx, &wasm.ExecRequest{Verb: "loop"})
		checkSentinel(t, err, context.DeadlineExceeded)
	})
}

func TestExecTrap(t *testing.T) {
	t.Parallel()
	c, err := wasm.New(t.Context(), newRuntime(t), "trap", trapModule, &wasm.Spec{Path: "trap.wasm"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	_, err = c.Exec(t.Context(), &wasm.ExecRequest{Verb: "reconcile", Args: []string{"x"}})
	checkSentinel(t, err, controller.ErrFailed)
	if !strings.Contains(fmt.Sprint(err), `module "trap": reconcile x`) || !strings.Contains(fmt.Sprint(err), "wasm error: unreachable") {
		t.Errorf("Exec = %v, want the trap, naming the module and the run", err)
	}
}

func TestExecRequestChecks(t *testing.T) {
	t.Parallel()
	c := newController(t, nil, "exec", nil)
	for _, req := range []*wasm.ExecRequest{nil, {}, {Verb: "a\x00b"}, {Verb: "echo", Args: []string{"\x00"}}} {
		_, err := c.Exec(t.Context(), req)
		checkSentinel(t, err, controller.ErrInvalid)
	}
}

func TestExecIsCountedAndTraced(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	rt := newRuntime(t, wasm.WithCacheDir(compiledDir), wasm.WithMetrics(reg), wasm.WithTracerProvider(tp))
	c := newController(t, rt, "exec", nil)
	for _, args := range [][]string{{"x"}, {"y", "exit", "3", "bad"}} {
		if _, err := c.Exec(t.Context(), &wasm.ExecRequest{Verb: "reconcile", Args: args}); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP cup_wasm_calls_total WASM controller module runs, by controller, verb and outcome (ok, exit, limit, timeout, canceled, trap).
# TYPE cup_wasm_calls_total counter
cup_wasm_calls_total{controller="exec",outcome="exit",verb="reconcile"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "cup_wasm_calls_total"); err != nil {
		t.Error(err)
	}
	spans := exp.GetSpans().Snapshots()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	for _, s := range spans {
		if s.Name() != "controller reconcile" {
			t.Errorf("span %q, want %q", s.Name(), "controller reconcile")
		}
		a := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			a[kv.Key] = kv.Value.Emit()
		}
		if _, ok := a["cup.kind"]; ok || a["cup.controller"] != "exec" || a["cup.verb"] != "reconcile" || a["cup.wasm.outcome"] != "exit" {
			t.Errorf("span attributes %v, want controller exec, verb reconcile, outcome exit and no kind", a)
		}
	}
}
