package main

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/cup-dev/cup/internal/cueeval"
)

// TestMain fails the package when cupd leaves goroutines behind after it
// shut down. Every cupd the tests start shares one WASM compilation cache,
// so the demo's module is compiled once, not once per start.
func TestMain(m *testing.M) {
	cueeval.Worker()
	dir, err := os.MkdirTemp("", "cupd-wasm-cache-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("CUPD_WASM_CACHE_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
