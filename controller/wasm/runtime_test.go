package wasm_test

import (
	"os"
	"testing"
	"time"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/wasm"
)

// TestCompilesOnce checks that New compiles and calls do not: every call
// takes a fraction of what New took. It then checks that a Runtime with the
// same cache directory, as after a restart, loads the compiled code rather
// than compiling again; it reports the times rather than bounding them.
func TestCompilesOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Now()
	c := newController(t, newRuntime(t, wasm.WithCacheDir(dir)), "conform", nil)
	compiled := time.Since(start)

	tree := newMemFS(t, map[string]string{flagFile("default", "f"): `{"apiVersion": "flags.cup.dev/v1alpha1", "kind": "Flag", "metadata": {"name": "f"}}`}).Snapshot()
	var slowest time.Duration
	for range 10 {
		start := time.Now()
		if _, err := c.Get(t.Context(), &controller.GetRequest{FS: tree, Type: flagType, Namespace: "default", Name: "f"}); err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, time.Since(start))
	}
	t.Logf("New took %s, the slowest of 10 calls %s", compiled, slowest)
	if slowest > compiled/4 {
		t.Errorf("a call took %s, New %s: calls compile?", slowest, compiled)
	}

	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("cache directory holds %d entries, %v; want the compiled module", len(entries), err)
	}
	start = time.Now()
	newController(t, newRuntime(t, wasm.WithCacheDir(dir)), "conform", nil)
	cached := time.Since(start)
	t.Logf("New in a second Runtime on the cache directory took %s (%.0f times faster)", cached, float64(compiled)/float64(cached))
	if cached >= compiled {
		t.Errorf("New with a filled cache directory took %s, no faster than compiling (%s)", cached, compiled)
	}
}

func TestRuntimeClose(t *testing.T) {
	t.Parallel()
	rt, err := wasm.NewRuntime(wasm.WithLogger(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := wasm.New(t.Context(), rt, "trap", trapModule, &wasm.Spec{Path: "trap.wasm"})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := rt.Close(t.Context()); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if _, err := c.Get(t.Context(), &controller.GetRequest{FS: newMemFS(t, nil), Type: flagType, Namespace: "default", Name: "x"}); err == nil {
		t.Error("Get after closing the runtime succeeded")
	}
	// A runtime closed before use did nothing to close.
	unused, err := wasm.NewRuntime(wasm.WithCacheDir(t.TempDir() + "/never"))
	if err != nil {
		t.Fatal(err)
	}
	if err := unused.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}
