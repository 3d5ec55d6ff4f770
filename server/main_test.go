package server_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/cup-dev/cup/controller/wasm"
)

// testWASM runs the demo's WASM controller for every fixture, so that the
// module is compiled once per test binary rather than once per fixture.
var testWASM *wasm.Runtime

func TestMain(m *testing.M) {
	rt, err := wasm.NewRuntime()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testWASM = rt
	code := m.Run()
	if err := rt.Close(context.Background()); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
