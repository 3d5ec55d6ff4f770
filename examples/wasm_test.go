package examples_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cup-dev/cup/examples"
)

func TestDemoWASM(t *testing.T) {
	t.Parallel()
	b, err := examples.DemoWASM(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x00asm")) {
		t.Fatalf("DemoWASM = %d bytes starting %q, want a WASM module", len(b), b[:min(len(b), 8)])
	}
	again, err := examples.DemoWASM(t.Context())
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("DemoWASM again = %d bytes, %v; want the same module", len(again), err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skip("no user cache folder:", err)
	}
	cached, _ := filepath.Glob(filepath.Join(cache, "cup", "demo-wasm", "*.wasm"))
	found := false
	for _, p := range cached {
		if c, err := os.ReadFile(p); err == nil && bytes.Equal(c, b) {
			found = true
		}
	}
	if !found {
		t.Errorf("no module in the cache folder equals DemoWASM's (cache holds %q)", cached)
	}
}

func TestDemoHasNoModule(t *testing.T) {
	t.Parallel()
	files, err := examples.DemoFiles()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := files[examples.DemoWASMFile]; ok {
		t.Skipf("%s is embedded (built by make build)", examples.DemoWASMFile)
	}
	if len(files[examples.DemoWASMConfig]) == 0 {
		t.Errorf("%s missing", examples.DemoWASMConfig)
	}
}

func TestFlagBundleWASM(t *testing.T) {
	t.Parallel()
	b, err := examples.FlagBundleWASM(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x00asm")) {
		t.Fatalf("FlagBundleWASM = %d bytes starting %q, want a WASM module", len(b), b[:min(len(b), 8)])
	}
	demo, err := examples.DemoWASM(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(demo, b) {
		t.Error("FlagBundleWASM and DemoWASM return the same module")
	}
	again, err := examples.FlagBundleWASM(t.Context())
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("FlagBundleWASM again = %d bytes, %v; want the same module", len(again), err)
	}
}
