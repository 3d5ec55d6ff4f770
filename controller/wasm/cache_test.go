package wasm_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cup-dev/cup/controller/wasm"
	"github.com/cup-dev/cup/internal/testlog"
)

// nopModule is trapModule whose _start does nothing: a second module,
// other bytes.
var nopModule = func() []byte {
	b := slices.Clone(trapModule)
	b[len(b)-2] = 0x01 // nop instead of unreachable
	return b
}()

// compiles returns cup_wasm_compiles_total of reg by cache outcome.
func compiles(t *testing.T, reg *prometheus.Registry) map[string]int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, mf := range mfs {
		if mf.GetName() != "cup_wasm_compiles_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = int(m.GetCounter().GetValue())
		}
	}
	return out
}

// startRuntime is a process start: a Runtime on dir, logging to log, that
// precompiles both test modules and makes controllers of them.
func startRuntime(t *testing.T, dir string, log *testlog.Buffer) map[string]int {
	t.Helper()
	reg := prometheus.NewRegistry()
	rt := newRuntime(t, wasm.WithCacheDir(dir), wasm.WithMetrics(reg),
		wasm.WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	var mu sync.Mutex
	var progress []int
	release := rt.Precompile(t.Context(), []wasm.Module{{Name: "trap.wasm", Bytes: trapModule}, {Name: "nop.wasm", Bytes: nopModule}},
		func(n int, compiling []string) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, n)
			if len(compiling) != 2-n {
				t.Errorf("%d done, still compiling %q", n, compiling)
			}
		})
	for name, m := range map[string][]byte{"trap": trapModule, "nop": nopModule} {
		c, err := wasm.New(t.Context(), rt, name, m, &wasm.Spec{Path: name + ".wasm"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close(context.Background()) })
	}
	if err := release(t.Context()); err != nil {
		t.Error(err)
	}
	if !slices.Equal(progress, []int{1, 2}) {
		t.Errorf("progress reports %v, want 1 then 2 done", progress)
	}
	return compiles(t, reg)
}

// TestCacheDirReused: the first start compiles both modules and writes
// them to the cache directory, a second start on it loads them; the
// controllers made after Precompile compile nothing more.
func TestCacheDirReused(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cache")
	if got := startRuntime(t, dir, &testlog.Buffer{}); got["miss"] != 2 || len(got) != 1 {
		t.Errorf("first start compiled %v, want 2 misses and nothing else", got)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("cache directory: %v, %v; want it made with mode 0700", fi, err)
	}
	if got := startRuntime(t, dir, &testlog.Buffer{}); got["hit"] != 2 || len(got) != 1 {
		t.Errorf("second start compiled %v, want 2 hits and nothing else", got)
	}
}

// TestCacheDirUnusable: a cache directory that cannot be made (a file is
// in the way) leaves the modules compiled in memory, with a warning.
func TestCacheDirUnusable(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	log := &testlog.Buffer{}
	if got := startRuntime(t, file, log); got["memory"] != 2 || len(got) != 1 {
		t.Errorf("compiled %v, want 2 in memory", got)
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "cache directory cannot be used") {
		t.Errorf("log:\n%s\nwant a warning about the cache directory", log)
	}
}

// TestCacheDirCorrupt: entries of the cache directory that cannot be read
// back are compiled again in memory, with a warning, and removed, so that
// the start after compiles into the directory again.
func TestCacheDirCorrupt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	startRuntime(t, dir, &testlog.Buffer{})
	entries, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	if len(entries) != 2 {
		t.Fatalf("cache entries %q, want 2", entries)
	}
	for _, e := range entries {
		// Cut each entry short after its header (magic, wazero's
		// version, the count of functions): wazero fails to read it.
		b, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(e, b[:6+1+int(b[6])+4+3], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	log := &testlog.Buffer{}
	if got := startRuntime(t, dir, log); got["memory"] != 2 || len(got) != 1 {
		t.Errorf("start on a corrupt cache compiled %v, want 2 in memory", got)
	}
	if n := strings.Count(log.String(), "cache directory failed"); n != 1 {
		t.Errorf("log:\n%s\nwant one warning about the failed cache directory", log)
	}
	if got := startRuntime(t, dir, &testlog.Buffer{}); got["miss"] != 2 || len(got) != 1 {
		t.Errorf("the start after compiled %v, want 2 misses", got)
	}
}
