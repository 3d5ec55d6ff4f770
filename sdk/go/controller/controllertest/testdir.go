package controllertest

import (
	"errors"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/sdk/go/controller"
)

// TestDir checks that d, an empty tree, behaves as a [controller.Dir] must:
// writes are read back, parents are created, removals of missing files
// wrap fs.ErrNotExist and names that are not valid paths are rejected with
// an error wrapping fs.ErrInvalid. It writes to d.
func TestDir(t *testing.T, d controller.Dir) {
	t.Helper()
	for name, data := range map[string]string{"top.txt": "1", "a/b/c.txt": "2", "a/d.txt": "3"} {
		if err := d.WriteFile(name, []byte(data)); err != nil {
			t.Fatalf("WriteFile(%q): %v", name, err)
		}
	}
	if err := d.WriteFile("top.txt", []byte("4")); err != nil {
		t.Fatalf("WriteFile(top.txt) again: %v", err)
	}
	if err := fstest.TestFS(d, "top.txt", "a/b/c.txt", "a/d.txt"); err != nil {
		t.Error(err)
	}
	for name, want := range map[string]string{"top.txt": "4", "a/b/c.txt": "2"} {
		if got, err := fs.ReadFile(d, name); err != nil || string(got) != want {
			t.Errorf("ReadFile(%q) = %q, %v; want %q", name, got, err, want)
		}
	}

	if err := d.Remove("a/b/c.txt"); err != nil {
		t.Errorf("Remove(a/b/c.txt): %v", err)
	}
	if _, err := fs.Stat(d, "a/b/c.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(a/b/c.txt) after Remove = %v, want fs.ErrNotExist", err)
	}
	for _, name := range []string{"a/b/c.txt", "missing.txt", "nowhere/x"} {
		if err := d.Remove(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Remove(%q) of a missing file = %v, want fs.ErrNotExist", name, err)
		}
	}

	for _, name := range []string{"", ".", "..", "../x", "/x", "a/../top.txt", "a//d.txt", "a/", "./top.txt"} {
		if err := d.WriteFile(name, nil); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("WriteFile(%q) = %v, want fs.ErrInvalid", name, err)
		}
		if err := d.Remove(name); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("Remove(%q) = %v, want fs.ErrInvalid", name, err)
		}
	}
	if got, err := fs.ReadFile(d, "top.txt"); err != nil || string(got) != "4" {
		t.Errorf("ReadFile(top.txt) after bad names = %q, %v; want %q", got, err, "4")
	}
}
