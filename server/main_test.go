package server_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/cup-dev/cup/controller/wasm"
	"github.com/cup-dev/cup/internal/cueeval"
)

// testWASM runs the demo's WASM controller for every fixture that starts
// the application, so that the module is compiled once per test binary
// rather than once per fixture. It is made on first use: tests on the
// unit-level harness run no WASM.
var (
	testWASMOnce sync.Once
	testWASM     *wasm.Runtime
	testWASMErr  error
)

// wasmRuntime returns the shared WASM runtime.
func wasmRuntime(t testing.TB) *wasm.Runtime {
	t.Helper()
	testWASMOnce.Do(func() { testWASM, testWASMErr = wasm.NewRuntime() })
	if testWASMErr != nil {
		t.Fatal(testWASMErr)
	}
	return testWASM
}

func TestMain(m *testing.M) {
	cueeval.Worker() // the demo's layered configuration evaluates CUE in a child: this binary
	code := m.Run()
	if testWASM != nil {
		if err := testWASM.Close(context.Background()); err != nil && code == 0 {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
