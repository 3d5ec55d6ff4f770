package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/testlog"
)

// twoModules are the WASM modules of wasmRepository's controllers: WASI
// commands whose _start executes unreachable (a) or nop (b). Tiny, they
// compile at once even with the race detector.
var twoModules = func() map[string][]byte {
	a := []byte{
		0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // types: () -> ()
		0x03, 0x02, 0x01, 0x00, // functions: one of type 0
		0x07, 0x0a, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00, // export "_start"
		0x0a, 0x05, 0x01, 0x03, 0x00, 0x00, 0x0b, // code: unreachable
	}
	b := slices.Clone(a)
	b[len(b)-2] = 0x01 // nop
	return map[string][]byte{"a.wasm": a, "b.wasm": b}
}()

// wasmRepository makes a repository whose configuration serves two types
// by WASM controllers, one of each of twoModules.
func wasmRepository(t *testing.T) string {
	t.Helper()
	files := map[string][]byte{}
	for _, name := range []string{"a", "b"} {
		files[".cup/"+name+".wasm"] = twoModules[name+".wasm"]
		files[".cup/"+name+".yaml"] = []byte(fmt.Sprintf(`apiVersion: cup.dev/v1alpha1
kind: Controller
metadata: {name: %[1]s}
spec:
  type: wasm
  spec: {path: %[1]s.wasm}
---
apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: %[1]ss.example.cup.dev}
spec:
  group: example.cup.dev
  names: {kind: %[2]s, singular: %[1]s, plural: %[1]ss}
  versions:
    v1:
      schema: {type: object}
---
apiVersion: cup.dev/v1alpha1
kind: APIBinding
metadata: {name: %[1]s}
spec:
  controller: %[1]s
  resources: [example.cup.dev/v1/%[1]ss]
`, name, strings.ToUpper(name)))
	}
	dir := t.TempDir()
	if _, err := gitrepo.Init(dir, "main", files, "two WASM controllers"); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startLogged runs cupd with args until it serves, and returns its URL,
// its log and a function that stops it.
func startLogged(t *testing.T, args ...string) (string, *testlog.Buffer, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &testlog.Buffer{}, &testlog.Buffer{}
	cmd := newRootCommand(stdout, stderr)
	cmd.SetArgs(append([]string{"--address", "127.0.0.1:0", "--log-level", "debug"}, args...))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("cupd: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return waitFor(t, stdout, addressLine, done), stderr, stop
}

// TestStartupCompilesIntoTheCache starts cupd twice with the same
// --wasm-cache-dir on a repository of two WASM controllers: the first
// start compiles both modules at once, saying so in its steps (those
// /readyz reports), and writes them to the directory; the second loads
// them from there.
func TestStartupCompilesIntoTheCache(t *testing.T) {
	t.Parallel()
	repo := wasmRepository(t)
	cache := filepath.Join(t.TempDir(), "wasm")
	url, log, stop := startLogged(t, "--repository", repo, "--wasm-cache-dir", cache)
	samples := scrape(t, url)
	if n := value(samples, "cup_wasm_compiles_total", map[string]string{"cache": "miss"}); n != 2 {
		t.Errorf("first start: cup_wasm_compiles_total{cache=miss} = %v, want 2", n)
	}
	for _, phase := range []string{"repository", "configuration", "wasm", "build", "total"} {
		if value(samples, "cup_startup_seconds", map[string]string{"phase": phase}) < 0 {
			t.Errorf("no cup_startup_seconds{phase=%q}", phase)
		}
	}
	out := log.String()
	at := 0
	for _, step := range []string{
		`step="opening the repository"`,
		`step="loading the configuration"`,
		`step="compiling WASM modules 0/2 (a.wasm, b.wasm)"`,
		`step="compiling WASM modules 1/2 (`,
		`step="compiling WASM modules 2/2"`,
		`step="building the controllers, the server and the reconcilers"`,
		`msg=serving`,
	} {
		i := strings.Index(out[at:], step)
		if i < 0 {
			t.Fatalf("log lacks %s after offset %d:\n%s", step, at, out)
		}
		at += i
	}
	if n := strings.Count(out, `msg="compiled wasm module"`); n != 2 || strings.Count(out, "cache=miss") != 2 {
		t.Errorf("log has %d lines of modules compiled, want 2 misses:\n%s", n, out)
	}
	stop()
	entries, _ := filepath.Glob(filepath.Join(cache, "wazero-*", "*"))
	if len(entries) != 2 {
		t.Errorf("cache directory holds %q, want the 2 modules compiled", entries)
	}

	url, _, _ = startLogged(t, "--repository", repo, "--wasm-cache-dir", cache)
	samples = scrape(t, url)
	if hit, miss := value(samples, "cup_wasm_compiles_total", map[string]string{"cache": "hit"}),
		value(samples, "cup_wasm_compiles_total", map[string]string{"cache": "miss"}); hit != 2 || miss != -1 {
		t.Errorf("second start: cup_wasm_compiles_total hit %v, miss %v; want 2 hits and no miss", hit, miss)
	}

	// off compiles in memory; so does a directory that cannot be made.
	for _, dir := range []string{"off", filepath.Join(repo, "HEAD")} {
		url, log, _ := startLogged(t, "--repository", repo, "--wasm-cache-dir", dir)
		if n := value(scrape(t, url), "cup_wasm_compiles_total", map[string]string{"cache": "memory"}); n != 2 {
			t.Errorf("--wasm-cache-dir %s: cup_wasm_compiles_total{cache=memory} = %v, want 2", dir, n)
		}
		if warned := strings.Contains(log.String(), "cache directory cannot be used"); warned != (dir != "off") {
			t.Errorf("--wasm-cache-dir %s: warned %v:\n%s", dir, warned, log)
		}
	}
}
