package wasm_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"sync"
	"testing"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/controllertest"
	"github.com/cup-dev/cup/controller/wasm"
)

var flagType = controller.Type{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Flag", Plural: "flags"}

// testWriter sends what it is given to t.Log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// newRuntime returns a Runtime logging to t, closed when t ends.
func newRuntime(t testing.TB, opts ...wasm.RuntimeOption) *wasm.Runtime {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rt, err := wasm.NewRuntime(append([]wasm.RuntimeOption{wasm.WithLogger(logger)}, opts...)...)
	if err != nil {
		t.Fatalf("NewRuntime: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(context.Background()); err != nil {
			t.Errorf("Runtime.Close: %v", err)
		}
	})
	return rt
}

// newController compiles the test program into a controller named after
// it, closed when t ends. A nil rt means the shared one, a nil spec the
// defaults.
func newController(t testing.TB, rt *wasm.Runtime, program string, spec *wasm.Spec) *wasm.Controller {
	t.Helper()
	if rt == nil {
		rt = shared
	}
	if spec == nil {
		spec = &wasm.Spec{Path: program + ".wasm"}
	}
	c, err := wasm.New(t.Context(), rt, program, modules[program], spec)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("Controller.Close: %v", err)
		}
	})
	return c
}

// newMemFS returns a MemFS holding files, which maps paths to contents.
func newMemFS(t testing.TB, files map[string]string) *controllertest.MemFS {
	t.Helper()
	m, err := controllertest.NewMemFS(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := m.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func newFlag(namespace, name, spec string) *controller.Resource {
	r := &controller.Resource{
		APIVersion: flagType.APIVersion(),
		Kind:       flagType.Kind,
		Metadata:   controller.Metadata{Namespace: namespace, Name: name},
	}
	if spec != "" {
		r.Spec = json.RawMessage(spec)
	}
	return r
}

// flagFile is where the conform program keeps a Flag.
func flagFile(namespace, name string) string {
	return path.Join(flagType.Group, flagType.Version, flagType.Plural, namespace, name+".json")
}

// recorder is a WriteFS that records the changes made through it.
type recorder struct {
	*controllertest.MemFS
	mu      sync.Mutex
	changes []string
}

func (r *recorder) WriteFile(name string, data []byte, perm fs.FileMode) error {
	r.mu.Lock()
	r.changes = append(r.changes, "write "+name)
	r.mu.Unlock()
	return r.MemFS.WriteFile(name, data, perm)
}

func (r *recorder) Remove(name string) error {
	r.mu.Lock()
	r.changes = append(r.changes, "remove "+name)
	r.mu.Unlock()
	return r.MemFS.Remove(name)
}

func (r *recorder) Changes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.changes...)
}

// dirFS is a WriteFS on a directory of the host, so that tests can look for
// files written outside it.
type dirFS struct {
	fs.FS
	root *os.Root
}

func openDirFS(t testing.TB, dir string) dirFS {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return dirFS{FS: root.FS(), root: root}
}

func (d dirFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if err := d.root.MkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	return d.root.WriteFile(name, data, perm)
}

func (d dirFS) Remove(name string) error { return d.root.Remove(name) }

// snapshotDir returns every file under dir with its content.
func snapshotDir(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(os.DirFS(dir), p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
