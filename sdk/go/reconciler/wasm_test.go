package reconciler_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tinyModule is the main package of a reconciler module built with the SDK.
const tinyModule = `package main

import (
	"context"

	"github.com/cup-dev/cup/sdk/go/reconciler"
)

func main() {
	reconciler.Main(reconciler.HandlerFunc(func(context.Context, *reconciler.Request) (*reconciler.Response, error) {
		return &reconciler.Response{}, nil
	}))
}
`

// TestBuildWASM builds a module that uses the SDK as cup's users do: for
// GOOS=wasip1 GOARCH=wasm, from its own module, with the standard toolchain.
func TestBuildWASM(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	if out, err := exec.CommandContext(t.Context(), goBin, "tool", "dist", "list").Output(); err != nil || !strings.Contains(string(out), "wasip1/wasm\n") {
		t.Skipf("the go command cannot build for wasip1/wasm (%v)", err)
	}
	sdk, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module example.com/tiny\n\ngo 1.26\n\nrequire github.com/cup-dev/cup/sdk/go v0.0.0\n\nreplace github.com/cup-dev/cup/sdk/go => " + sdk + "\n"
	for name, data := range map[string]string{"go.mod": gomod, "main.go": tinyModule} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wasm := filepath.Join(dir, "tiny.wasm")
	cmd := exec.CommandContext(t.Context(), goBin, "build", "-trimpath", "-o", wasm, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("\x00asm\x01\x00\x00\x00")) {
		t.Errorf("%s is not a WebAssembly binary module: starts with %q", wasm, data[:min(8, len(data))])
	}
}
