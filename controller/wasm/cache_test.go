package wasm_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

// compiles returns cup_wasm_compiles_total of reg by cache outcome, and
// cup_wasm_cache_evictions_total as "evicted" when not 0.
func compiles(t *testing.T, reg *prometheus.Registry) map[string]int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "cup_wasm_compiles_total":
			for _, m := range mf.GetMetric() {
				out[m.GetLabel()[0].GetValue()] = int(m.GetCounter().GetValue())
			}
		case "cup_wasm_cache_evictions_total":
			if n := int(mf.GetMetric()[0].GetCounter().GetValue()); n > 0 {
				out["evicted"] = n
			}
		}
	}
	return out
}

// startRuntime is a process start: a Runtime on dir, logging to log, that
// precompiles both test modules and makes controllers of them.
func startRuntime(t *testing.T, dir string, log *testlog.Buffer, opts ...wasm.RuntimeOption) map[string]int {
	t.Helper()
	reg := prometheus.NewRegistry()
	rt := newRuntime(t, append([]wasm.RuntimeOption{wasm.WithCacheDir(dir), wasm.WithMetrics(reg),
		wasm.WithLogger(slog.New(slog.NewTextHandler(log, nil)))}, opts...)...)
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

// startedCacheDir returns a cache directory a start wrote its two entries
// in, and the entries.
func startedCacheDir(t *testing.T) (dir string, entries []string) {
	t.Helper()
	dir = t.TempDir()
	startRuntime(t, dir, &testlog.Buffer{})
	entries, _ = filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	if len(entries) != 2 {
		t.Fatalf("cache entries %q, want 2", entries)
	}
	return dir, entries
}

// TestCacheDirCorrupt: entries of the cache directory that cannot be read
// back are compiled again in memory, with a warning, and removed, so that
// the start after compiles into the directory again.
func TestCacheDirCorrupt(t *testing.T) {
	t.Parallel()
	dir, entries := startedCacheDir(t)
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

// TestCacheDirBounded: with WithCacheMaxBytes, opening the cache directory
// removes the entries written longest ago, an older wazero's among them,
// until the rest fit, and unfinished entries left for more than an hour;
// a start's own entries stay even when they alone are over the bound.
func TestCacheDirBounded(t *testing.T) {
	t.Parallel()
	dir, entries := startedCacheDir(t)
	var size int64
	for _, e := range entries {
		fi, err := os.Stat(e)
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
	}
	long := time.Now().Add(-48 * time.Hour)
	write := func(path string, n int, mod time.Time) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	versionDir := filepath.Dir(entries[0])
	older := filepath.Join(dir, "wazero-v0.0.1-"+goruntime.GOARCH+"-"+goruntime.GOOS, "0123")
	write(older, 1000, long) // the oldest: removed first
	oldTmp := filepath.Join(versionDir, "abcd.123.tmp")
	write(oldTmp, 10, time.Now().Add(-2*time.Hour))
	newTmp := filepath.Join(versionDir, "abcd.456.tmp")
	write(newTmp, 10, time.Now())
	// The two real entries are older than the made-up ones below, which
	// are newer than them but older than the bound allows once all count.
	for _, e := range entries {
		if err := os.Chtimes(e, long.Add(time.Hour), long.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	newer := filepath.Join(versionDir, "4567")
	write(newer, 500, time.Now())

	// Room for the two entries and the newer one: the older wazero's goes.
	log := &testlog.Buffer{}
	got := startRuntime(t, dir, log, wasm.WithCacheMaxBytes(size+500))
	if got["hit"] != 2 || got["evicted"] != 1 || len(got) != 2 {
		t.Errorf("start compiled %v, want 2 hits and 1 eviction", got)
	}
	for path, want := range map[string]bool{older: false, oldTmp: false, newTmp: true, newer: true, entries[0]: true, entries[1]: true} {
		if _, err := os.Stat(path); (err == nil) != want {
			t.Errorf("%s: %v, want it there: %v", path, err, want)
		}
	}
	if !strings.Contains(log.String(), "removed=1 freed_bytes=1000") {
		t.Errorf("log:\n%s\nwant the removal", log)
	}

	// Room for 1 byte: every entry goes at open, so both modules compile
	// again; the entries this start wrote stay.
	if got := startRuntime(t, dir, &testlog.Buffer{}, wasm.WithCacheMaxBytes(1)); got["miss"] != 2 || got["evicted"] != 3 || len(got) != 2 {
		t.Errorf("start with a bound of 1 byte compiled %v, want 2 misses and 3 evictions", got)
	}
	if left, _ := filepath.Glob(filepath.Join(versionDir, "*")); len(left) != 3 || !slices.Contains(left, newTmp) {
		t.Errorf("left %q, want the 2 entries just written and the fresh .tmp", left)
	}
}

// TestCacheDirKeptAfterABadModule: a module that fails to compile, with
// the cache directory and again in memory, is the module's fault: the
// modules compiled after it still go to the directory.
func TestCacheDirKeptAfterABadModule(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	rt := newRuntime(t, wasm.WithCacheDir(t.TempDir()), wasm.WithMetrics(reg))
	bad := append([]byte("\x00asm\x01\x00\x00\x00"), 0x0a, 0x05, 0x01, 0xff, 0xff, 0xff, 0xff) // a code section that ends short
	if _, err := wasm.New(t.Context(), rt, "bad", bad, &wasm.Spec{Path: "bad.wasm"}); err == nil {
		t.Fatal("a module that cannot compile compiled")
	}
	c, err := wasm.New(t.Context(), rt, "trap", trapModule, &wasm.Spec{Path: "trap.wasm"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	if got := compiles(t, reg); got["miss"] != 1 || got["memory"] != 0 {
		t.Errorf("compiles %v, want the good module compiled into the directory (1 miss)", got)
	}
}
