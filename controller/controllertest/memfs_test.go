package controllertest_test

import (
	"errors"
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/controller/controllertest"
)

func newMem(t *testing.T, files map[string]string) *controllertest.MemFS {
	t.Helper()
	b := map[string][]byte{}
	for k, v := range files {
		b[k] = []byte(v)
	}
	m, err := controllertest.NewMemFS(b)
	if err != nil {
		t.Fatalf("NewMemFS: %v", err)
	}
	return m
}

func TestMemFSIsAnFS(t *testing.T) {
	t.Parallel()
	m := newMem(t, map[string]string{"a/b/c.json": "c", "a/d.json": "d", "e": ""})
	if err := fstest.TestFS(m, "a/b/c.json", "a/d.json", "e", "a/b"); err != nil {
		t.Error(err)
	}
	if err := fstest.TestFS(m.Snapshot(), "a/b/c.json", "a/d.json", "e"); err != nil {
		t.Errorf("Snapshot: %v", err)
	}
}

func TestMemFSWrites(t *testing.T) {
	t.Parallel()
	m := newMem(t, map[string]string{"dir/file": "1"})
	snap := m.Snapshot()
	data := []byte("2")
	if err := m.WriteFile("dir/sub/new", data, 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	data[0] = 'X' // the MemFS keeps its own copy
	if got, err := fs.ReadFile(m, "dir/sub/new"); err != nil || string(got) != "2" {
		t.Errorf("ReadFile = %q, %v; want 2", got, err)
	}
	if _, err := fs.Stat(snap, "dir/sub/new"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an earlier Snapshot sees a later write: %v", err)
	}
	files := m.Files()
	files["dir/file"][0] = 'X' // Files returns copies
	if got, _ := fs.ReadFile(m, "dir/file"); string(got) != "1" {
		t.Errorf("changing the result of Files changed the MemFS: %q", got)
	}
	if err := m.Remove("dir/sub/new"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := fs.Stat(m, "dir/sub"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a directory outlives its last file: %v", err)
	}
	// A file can now take the removed directory's place.
	if err := m.WriteFile("dir/sub", nil, 0o644); err != nil {
		t.Errorf("WriteFile where an emptied directory was: %v", err)
	}
	entries, err := fs.ReadDir(m, "dir")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"file", "sub"}) {
		t.Errorf("ReadDir = %v, want [file sub]", names)
	}
}

func TestMemFSRejects(t *testing.T) {
	t.Parallel()
	m := newMem(t, map[string]string{"dir/file": "1"})
	tests := []struct {
		name, op, path string
		want           error
	}{
		{"absolute", "write", "/etc/passwd", fs.ErrInvalid},
		{"parent", "write", "../x", fs.ErrInvalid},
		{"inner parent", "write", "dir/../x", fs.ErrInvalid},
		{"dot", "write", "./x", fs.ErrInvalid},
		{"root", "write", ".", fs.ErrInvalid},
		{"empty", "write", "", fs.ErrInvalid},
		{"empty element", "write", "dir//x", fs.ErrInvalid},
		{"trailing slash", "write", "dir/x/", fs.ErrInvalid},
		{"NUL", "write", "dir/x\x00", fs.ErrInvalid},
		{"backslash", "write", `dir\x`, fs.ErrInvalid},
		{".git", "write", ".git/config", fs.ErrInvalid},
		{".git in any case", "write", "dir/.GIT/x", fs.ErrInvalid},
		{"remove inside .git", "remove", ".Git/x", fs.ErrInvalid},
		{"over a directory", "write", "dir", fs.ErrInvalid},
		{"below a file", "write", "dir/file/x", fs.ErrInvalid},
		{"remove missing", "remove", "dir/missing", fs.ErrNotExist},
		{"remove directory", "remove", "dir", fs.ErrInvalid},
		{"remove absolute", "remove", "/dir/file", fs.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var err error
			if tt.op == "write" {
				err = m.WriteFile(tt.path, []byte("x"), 0o644)
			} else {
				err = m.Remove(tt.path)
			}
			var pe *fs.PathError
			if !errors.Is(err, tt.want) || !errors.As(err, &pe) {
				t.Errorf("%s %q = %v, want a *fs.PathError wrapping %v", tt.op, tt.path, err, tt.want)
			}
		})
	}
	if got, err := fs.ReadFile(m, "dir/file"); err != nil || string(got) != "1" {
		t.Errorf("rejected writes changed the tree: %q, %v", got, err)
	}
}

func TestNewMemFSTakesWhatTreesHold(t *testing.T) {
	t.Parallel()
	// A tree may hold what a WriteFS does not write; tests check that
	// controllers leave it alone.
	m, err := controllertest.NewMemFS(map[string][]byte{".git/config": []byte("[core]"), `a\b`: nil})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := fs.ReadFile(m, ".git/config"); err != nil || string(got) != "[core]" {
		t.Errorf("ReadFile(.git/config) = %q, %v", got, err)
	}
	if err := m.Remove(".git/config"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("Remove(.git/config) = %v, want an error wrapping fs.ErrInvalid", err)
	}
}

func TestNewMemFSRejects(t *testing.T) {
	t.Parallel()
	for _, files := range []map[string][]byte{
		{"../x": nil},
		{"a": nil, "a/b": nil},
	} {
		if _, err := controllertest.NewMemFS(files); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("NewMemFS(%v) = %v, want an error wrapping fs.ErrInvalid", files, err)
		}
	}
}
