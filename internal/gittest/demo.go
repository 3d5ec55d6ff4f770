package gittest

import (
	"context"
	"os/exec"
	"testing"

	"github.com/cup-dev/cup/examples"
	"github.com/cup-dev/cup/internal/gitrepo"
)

// Demo is the name of the repository [NewDemo] serves.
const Demo = "demo.git"

// NewDemo starts a server like [NewServer] with opts that serves the demo
// repository of package examples as [Demo]: its branch main holds one
// commit of [DemoFiles].
func NewDemo(t testing.TB, opts ...Option) *Server {
	t.Helper()
	srv := NewServer(t, opts...)
	if _, err := gitrepo.Init(srv.Path(Demo), "main", DemoFiles(t), "demo\n"); err != nil {
		t.Fatalf("gittest: %v", err)
	}
	return srv
}

// Refs returns the references of the bare repository at dir as
// git for-each-ref lists them, to compare before and after.
func Refs(t testing.TB, dir string) string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", dir, "for-each-ref").CombinedOutput()
	if err != nil {
		t.Fatalf("git for-each-ref: %v\n%s", err, out)
	}
	return string(out)
}

// DemoFiles returns the files of the demo repository as cupd serves it:
// [examples.DemoFiles] with the WASM modules of [examples.DemoWASM] and
// [examples.FlagBundleWASM] (built once into the user's cache folder, and
// again only when their source changes). Tests that need the demo or its
// modules take them from here.
func DemoFiles(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := examples.DemoFiles()
	if err != nil {
		t.Fatalf("gittest: reading the demo: %v", err)
	}
	files[examples.DemoWASMFile] = DemoWASM(t)
	b, err := examples.FlagBundleWASM(context.Background())
	if err != nil {
		t.Fatalf("gittest: %v", err)
	}
	files[examples.DemoBundleWASMFile] = b
	return files
}

// DemoWASM returns the demo's WASM module, as [examples.DemoWASM] builds
// it, or fails the test.
func DemoWASM(t testing.TB) []byte {
	t.Helper()
	b, err := examples.DemoWASM(context.Background())
	if err != nil {
		t.Fatalf("gittest: %v", err)
	}
	return b
}
