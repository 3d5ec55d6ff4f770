package gittest_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cup-dev/cup/internal/gittest"
	"github.com/cup-dev/cup/internal/testlog"
)

// Start serves like NewServer without a test, and Close removes the
// temporary root it made and refuses connections at once.
func TestStart(t *testing.T) {
	t.Parallel()
	var log testlog.Buffer
	srv, err := gittest.Start(gittest.WithLog(&log))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := srv.Root()
	want := initRepo(t, srv.Path("a.git"))
	ws, err := cloneGoGit(t, srv.URL("a.git"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := ws.head(t); got != want {
		t.Fatalf("cloned main = %s, want %s", got, want)
	}
	ws.commit(t, "b.txt", "b\n")
	if _, err := ws.push(t); err != nil {
		t.Fatalf("push: %v", err)
	}
	if got := srv.Count(gittest.ReceivePack); got != 1 {
		t.Errorf("Count(ReceivePack) = %d, want 1", got)
	}
	if _, err := cloneGoGit(t, srv.URL("missing.git"), "", ""); err == nil {
		t.Error("cloning a missing repository succeeded")
	}

	srv.Close()
	srv.Close()
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Close, Stat(root %s) = %v, want it removed", root, err)
	}
	if _, err := cloneGoGit(t, srv.URL("a.git"), "", ""); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("clone after Close = %v, want %v", err, syscall.ECONNREFUSED)
	}
	t.Logf("git's output: %s", log.String())
}

// Start keeps a WithRoot directory at Close.
func TestStartWithRoot(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "root")
	srv, err := gittest.Start(gittest.WithRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	initRepo(t, srv.Path("a.git"))
	if _, err := cloneGoGit(t, srv.URL("a.git"), "", ""); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if _, err := os.Stat(filepath.Join(root, "a.git", "HEAD")); err != nil {
		t.Errorf("after Close: %v, want the repository kept", err)
	}
}
