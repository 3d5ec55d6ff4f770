package gittest

import (
	"os/exec"
	"testing"

	"github.com/cup-dev/cup/examples"
	"github.com/cup-dev/cup/internal/gitrepo"
)

// Demo is the name of the repository [NewDemo] serves.
const Demo = "demo.git"

// NewDemo starts a server like [NewServer] with opts that serves the demo
// repository of package examples as [Demo]: its branch main holds one
// commit of the files below the folder "demo" of [examples.Demo].
func NewDemo(t testing.TB, opts ...Option) *Server {
	t.Helper()
	srv := NewServer(t, opts...)
	files, err := examples.DemoFiles()
	if err != nil {
		t.Fatalf("gittest: reading the demo: %v", err)
	}
	if _, err := gitrepo.Init(srv.Path(Demo), "main", files, "demo\n"); err != nil {
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
