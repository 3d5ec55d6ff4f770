package gitfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

var overlayBase = map[string]file{
	"a.txt":          {data: "a\n"},
	"dir/x.txt":      {data: "x\n"},
	"dir/sub/y.txt":  {data: "y\n"},
	"exec.sh":        {data: "#!/bin/sh\n", mode: filemode.Executable},
	"link":           {data: "a.txt", mode: filemode.Symlink},
	"dirlink":        {data: "dir", mode: filemode.Symlink},
	"only/child.txt": {data: "c\n"},
	"module":         {data: "a submodule", mode: filemode.Submodule},
	"keep/sub":       {data: "another submodule", mode: filemode.Submodule},
	"keep/x":         {data: "x\n"},
}

func newOverlay(t testing.TB) (*gitfs.Store, *gitfs.Overlay) {
	st := newMemStore()
	return st, gitfs.NewOverlay(st.FS(buildTree(t, st, overlayBase)))
}

func TestOverlayRejectsPaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		path string
	}{
		{"empty", ""},
		{"root", "."},
		{"absolute", "/abs"},
		{"parent", "../x"},
		{"parent inside", "a/../b"},
		{"dot inside", "a/./b"},
		{"double slash", "a//b"},
		{"trailing slash", "dir/"},
		{"NUL byte", "x\x00y"},
		{"backslash", `a\b`},
		{".git directory", ".git/config"},
		{".git anywhere, any case", "dir/.GIT/hooks/x"},
		{"through a file", "a.txt/x"},
		{"through a symbolic link", "dirlink/x.txt"},
		{"onto a directory", "dir"},
		{"onto a nested directory", "dir/sub"},
		{"onto a submodule", "module"},
		{"into a submodule", "module/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, ov := newOverlay(t)
			err := ov.WriteFile(tt.path, []byte("x"), 0o644)
			if !errors.Is(err, source.ErrInvalidPath) || !errors.Is(err, fs.ErrInvalid) {
				t.Errorf("WriteFile(%q) err = %v, want ErrInvalidPath and fs.ErrInvalid", tt.path, err)
			}
			if err := ov.Remove(tt.path); !errors.Is(err, source.ErrInvalidPath) && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Remove(%q) err = %v, want ErrInvalidPath or ErrNotExist", tt.path, err)
			}
			if changes := mustChanges(t, ov); len(changes) != 0 {
				t.Errorf("changes after rejected writes: %v", changes)
			}
		})
	}
}

func TestOverlayRemoveErrors(t *testing.T) {
	t.Parallel()
	_, ov := newOverlay(t)
	if err := ov.Remove("missing.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove(missing) err = %v, want ErrNotExist", err)
	}
	if err := ov.Remove("dir"); !errors.Is(err, source.ErrInvalidPath) {
		t.Errorf("Remove(dir) err = %v, want ErrInvalidPath", err)
	}
	if err := ov.Remove("a.txt"); err != nil {
		t.Fatal(err)
	}
	if err := ov.Remove("a.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("second Remove(a.txt) err = %v, want ErrNotExist", err)
	}
}

// change is a compact form of gitfs.Change for comparisons.
type change struct {
	path string
	op   source.Operation
	mode filemode.FileMode
	data string
}

func mustChanges(t testing.TB, ov *gitfs.Overlay) []change {
	t.Helper()
	cs, err := ov.Changes()
	if err != nil {
		t.Fatal(err)
	}
	var out []change
	for _, c := range cs {
		out = append(out, change{c.Path, c.Op, c.Mode, string(c.Data)})
	}
	return out
}

func TestOverlayChanges(t *testing.T) {
	t.Parallel()
	type op func(*gitfs.Overlay) error
	write := func(p, d string, perm fs.FileMode) op {
		return func(o *gitfs.Overlay) error { return o.WriteFile(p, []byte(d), perm) }
	}
	remove := func(p string) op { return func(o *gitfs.Overlay) error { return o.Remove(p) } }
	tests := []struct {
		name string
		ops  []op
		want []change
	}{
		{name: "nothing"},
		{name: "same content", ops: []op{write("a.txt", "a\n", 0o644)}},
		{name: "same content of executable", ops: []op{write("exec.sh", "#!/bin/sh\n", 0o644)}},
		{name: "write then remove new file", ops: []op{write("new/file", "n", 0o644), remove("new/file")}},
		{name: "remove then restore", ops: []op{remove("a.txt"), write("a.txt", "a\n", 0o644)}},
		{name: "modify then restore", ops: []op{write("a.txt", "b", 0o644), write("a.txt", "a\n", 0o644)}},
		{
			name: "create",
			ops:  []op{write("new/deep/file.txt", "n\n", 0o644)},
			want: []change{{"new/deep/file.txt", source.OpCreate, filemode.Regular, "n\n"}},
		},
		{
			name: "create executable",
			ops:  []op{write("run", "r", 0o755)},
			want: []change{{"run", source.OpCreate, filemode.Executable, "r"}},
		},
		{
			name: "update keeps mode",
			ops:  []op{write("exec.sh", "#!/bin/bash\n", 0o644)},
			want: []change{{"exec.sh", source.OpUpdate, filemode.Executable, "#!/bin/bash\n"}},
		},
		{
			name: "delete",
			ops:  []op{remove("dir/sub/y.txt")},
			want: []change{{"dir/sub/y.txt", source.OpDelete, 0, ""}},
		},
		{
			name: "replace symbolic link with file",
			ops:  []op{write("link", "now a file", 0o644)},
			want: []change{{"link", source.OpUpdate, filemode.Regular, "now a file"}},
		},
		{
			name: "remove symbolic link",
			ops:  []op{remove("link")},
			want: []change{{"link", source.OpDelete, 0, ""}},
		},
		{
			name: "file becomes directory",
			ops:  []op{remove("a.txt"), write("a.txt/inner", "i", 0o644)},
			want: []change{
				{"a.txt", source.OpDelete, 0, ""},
				{"a.txt/inner", source.OpCreate, filemode.Regular, "i"},
			},
		},
		{
			name: "directory becomes file",
			ops:  []op{remove("only/child.txt"), write("only", "o", 0o644)},
			want: []change{
				{"only", source.OpCreate, filemode.Regular, "o"},
				{"only/child.txt", source.OpDelete, 0, ""},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, ov := newOverlay(t)
			for i, op := range tt.ops {
				if err := op(ov); err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
			}
			if got := mustChanges(t, ov); !slices.Equal(got, tt.want) {
				t.Fatalf("changes:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestOverlayReadsSeeWrites(t *testing.T) {
	t.Parallel()
	_, ov := newOverlay(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ov.WriteFile("a.txt", []byte("changed\n"), 0o644))
	must(ov.WriteFile("dir/new.txt", []byte("new\n"), 0o644))
	must(ov.WriteFile("fresh/one/two.txt", []byte("2\n"), 0o755))
	must(ov.Remove("dir/sub/y.txt")) // dir/sub vanishes
	must(ov.Remove("only/child.txt"))
	must(ov.WriteFile("only", []byte("file now\n"), 0o644))

	tests := []struct {
		name string
		read func() (string, error)
		want string
	}{
		{"overwritten", readFile(ov, "a.txt"), "changed\n"},
		{"through link sees overlay", readFile(ov, "link"), "changed\n"},
		{"new file", readFile(ov, "dir/new.txt"), "new\n"},
		{"new file through dir link", readFile(ov, "dirlink/new.txt"), "new\n"},
		{"base file untouched", readFile(ov, "dir/x.txt"), "x\n"},
		{"dir listing merges", readDir(ov, "dir"), "new.txt x.txt"},
		{"root listing", readDir(ov, "."), "a.txt dir dirlink exec.sh fresh keep link only"},
		{"implied directories", readDir(ov, "fresh/one"), "two.txt"},
		{"stat new file", stat(ov, "fresh/one/two.txt"), "two.txt -rwxr-xr-x 2"},
		{"stat replaced dir", stat(ov, "only"), "only -rw-r--r-- 9"},
		{"readlink", func() (string, error) { return ov.ReadLink("link") }, "a.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.read()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	for _, gone := range []string{"dir/sub", "dir/sub/y.txt", "only/child.txt"} {
		if _, err := ov.Stat(gone); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat(%q) err = %v, want ErrNotExist", gone, err)
		}
	}
	if err := fstest.TestFS(ov, "a.txt", "dir/new.txt", "dir/x.txt", "exec.sh", "fresh/one/two.txt", "link", "dirlink", "only", "keep/x"); err != nil {
		t.Fatal(err)
	}
}

func TestOverlayCopiesData(t *testing.T) {
	t.Parallel()
	_, ov := newOverlay(t)
	data := []byte("original")
	if err := ov.WriteFile("f", data, 0o644); err != nil {
		t.Fatal(err)
	}
	copy(data, "CHANGED!")
	got, err := ov.ReadFile("f")
	if err != nil || string(got) != "original" {
		t.Fatalf("ReadFile = %q, %v; want the data as written", got, err)
	}
	copy(got, "CHANGED!")
	if again, _ := ov.ReadFile("f"); string(again) != "original" {
		t.Fatalf("ReadFile after mutating a result = %q", again)
	}
}

// TestOverlayBuildMatchesScratch checks the tree builder against a tree built
// from nothing: applying changes to a base must give the same tree id as
// building the final set of files directly.
func TestOverlayBuildMatchesScratch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		writes map[string]string // "" removes
	}{
		{"modify deep", map[string]string{"dir/sub/y.txt": "yy\n"}},
		{"create deep", map[string]string{"n1/n2/n3.txt": "3"}},
		{"delete last in dir", map[string]string{"dir/sub/y.txt": ""}},
		{"delete everything in dir", map[string]string{"dir/sub/y.txt": "", "dir/x.txt": ""}},
		{"names in git order", map[string]string{"dir-x": "1", "dir.x": "2", "dir0": "3", "dir/x-y": "4"}},
		{"delete all", map[string]string{
			"a.txt": "", "dir/x.txt": "", "dir/sub/y.txt": "", "exec.sh": "", "link": "", "dirlink": "", "only/child.txt": "", "keep/x": "",
		}},
		{"dir with a submodule survives", map[string]string{"keep/x": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st, ov := newOverlay(t)
			final := maps.Clone(overlayBase)
			for _, p := range slices.Sorted(maps.Keys(tt.writes)) {
				d := tt.writes[p]
				var err error
				if d == "" {
					err = ov.Remove(p)
					delete(final, p)
				} else {
					err = ov.WriteFile(p, []byte(d), 0o644)
					final[p] = file{data: d, mode: final[p].mode}
					if final[p].mode == filemode.Symlink {
						final[p] = file{data: d}
					}
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			changes, err := ov.Changes()
			if err != nil {
				t.Fatal(err)
			}
			got, err := st.BuildTree(t.Context(), ov.Base().Root(), changes)
			if err != nil {
				t.Fatal(err)
			}
			if want := buildTree(t, newMemStore(), final); got != want {
				t.Fatalf("tree = %s, want %s", got, want)
			}
		})
	}
}

func TestOverlayDiff(t *testing.T) {
	t.Parallel()
	_, ov := newOverlay(t)
	for _, err := range []error{
		ov.WriteFile("a.txt", []byte("a\nb\n"), 0o644),
		ov.WriteFile("new.txt", []byte("new\n"), 0o644),
		ov.Remove("dir/x.txt"),
		ov.WriteFile("bin", []byte("\x00\x01"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	changes, err := ov.Changes()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		got = append(got, fmt.Sprintf("%s %s\n%s", c.Op, c.Path, c.Diff()))
	}
	want := []string{
		"update a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n a\n+b\n",
		"create bin\nBinary files a/bin and b/bin differ\n",
		"delete dir/x.txt\n--- a/dir/x.txt\n+++ b/dir/x.txt\n@@ -1 +0,0 @@\n-x\n",
		"create new.txt\n--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("diffs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
