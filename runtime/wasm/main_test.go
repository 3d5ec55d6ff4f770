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

	cwasm "github.com/cup-dev/cup/controller/wasm"
	"github.com/cup-dev/cup/examples"
	"github.com/cup-dev/cup/runtime/wasm"
)

// modules holds the bytes of each module the tests run, built by TestMain:
// flagbundle, the example reconciler in examples/reconcilers/flagbundle
// (built from source by examples.FlagBundleWASM, into the user's cache
// folder); flagfile, the demo's controller module, which is no
// reconciler; and misbehave, the program in testdata.
var modules = map[string][]byte{}

// shared is the Runtime the tests run their transforms on, as cupd runs
// controllers and transforms on one. TestMain compiles every module in it
// up front, so that tests running in parallel do not each compile them.
var shared *cwasm.Runtime

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cup-wasm-transform-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := buildModules(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rt, err := cwasm.NewRuntime(cwasm.WithCacheDir(filepath.Join(dir, "compiled")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	shared = rt
	// Transforms holding the compiled modules, for the runtime to keep them.
	var warm []*wasm.Transform
	var errs []error
	for name, b := range modules {
		t, err := wasm.New(context.Background(), rt, name, b, &cwasm.Spec{Path: name + ".wasm"})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		warm = append(warm, t)
	}
	code := 1
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	for _, t := range warm {
		if err := t.Close(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
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

// buildModules builds the modules, in parallel, and reads them into
// modules; misbehave goes into dir.
func buildModules(dir string) error {
	builders := map[string]func() ([]byte, error){
		"flagbundle": func() ([]byte, error) { return examples.FlagBundleWASM(context.Background()) },
		"flagfile":   func() ([]byte, error) { return examples.DemoWASM(context.Background()) },
		"misbehave": func() ([]byte, error) {
			goTool, err := exec.LookPath("go")
			if err != nil {
				return nil, fmt.Errorf("building the test modules needs the go command: %w", err)
			}
			out := filepath.Join(dir, "misbehave.wasm")
			cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
			cmd.Dir = filepath.Join("testdata", "misbehave")
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0")
			if msg, err := cmd.CombinedOutput(); err != nil {
				return nil, fmt.Errorf("building testdata/misbehave: %v\n%s", err, msg)
			}
			return os.ReadFile(out)
		},
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for name, build := range builders {
		wg.Go(func() {
			b, err := build()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				return
			}
			modules[name] = b
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// newTransform compiles the named module into a transform on shared,
// closed when t ends. A nil spec takes the defaults.
func newTransform(t testing.TB, module string, spec *cwasm.Spec) *wasm.Transform {
	t.Helper()
	if spec == nil {
		spec = &cwasm.Spec{Path: module + ".wasm"}
	}
	tr, err := wasm.New(t.Context(), shared, module, modules[module], spec)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := tr.Close(context.Background()); err != nil {
			t.Errorf("Transform.Close: %v", err)
		}
	})
	return tr
}
