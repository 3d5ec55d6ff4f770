package wasm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/cup-dev/cup/controller/wasm"
	"github.com/cup-dev/cup/examples"
)

// modules holds the bytes of each program in testdata, by directory name,
// built for wasip1 by TestMain.
var modules = map[string][]byte{}

// programs are the directories of testdata holding a main package, and
// flagfile, the example controller in examples/controllers/flagfile, which
// is the demo's module (built once into the user's cache folder by
// examples.DemoWASM, as cupd and every other test build it).
var programs = []string{"conform", "faults", "empty", "exec", "flagfile"}

// shared is the Runtime most tests use, as controllers share one in cupd.
// TestMain compiles every program in it up front, so that tests running in
// parallel do not each compile them.
var shared *wasm.Runtime

// compiledDir is the cache directory of shared: tests that need a Runtime
// of their own use it too, to load the programs rather than compile them
// again.
var compiledDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cup-wasm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := buildPrograms(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	compiledDir = filepath.Join(dir, "compiled")
	rt, err := wasm.NewRuntime(wasm.WithCacheDir(compiledDir))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	shared = rt
	// Controllers holding the compiled modules, for the cache to keep them.
	warm := make([]*wasm.Controller, len(programs))
	errs := make([]error, len(programs))
	var wg sync.WaitGroup
	for i, name := range programs {
		wg.Go(func() {
			warm[i], errs[i] = wasm.New(context.Background(), rt, name, modules[name], &wasm.Spec{Path: name + ".wasm"})
		})
	}
	wg.Wait()
	for _, c := range warm {
		if c != nil {
			defer c.Close(context.Background())
		}
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := rt.Close(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}

// buildPrograms builds every program into dir, in parallel, with the
// ambient build cache, and reads them into modules.
func buildPrograms(dir string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building the test modules needs the go command: %w", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(programs))
	for i, name := range programs {
		wg.Go(func() {
			if name == "flagfile" {
				b, err := examples.DemoWASM(context.Background())
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, name+".wasm"), b, 0o644)
				}
				errs[i] = err
				return
			}
			out := filepath.Join(dir, name+".wasm")
			out, err := filepath.Abs(out)
			if err != nil {
				errs[i] = err
				return
			}
			cmd := exec.Command(goTool, "build", "-trimpath", "-o", out, ".")
			cmd.Dir = filepath.Join("testdata", name)
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local")
			if msg, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("building testdata/%s: %v\n%s", name, err, msg)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, name := range programs {
		b, err := os.ReadFile(filepath.Join(dir, name+".wasm"))
		if err != nil {
			return err
		}
		modules[name] = b
	}
	return nil
}
