package gitfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/gitfs"
)

// sampleFiles is a tree with nesting, names that sort differently in Git's
// order and by name, an executable, and symbolic links.
var sampleFiles = map[string]file{
	"README.md":          {data: "hello\n"},
	"a.txt":              {data: "a\n"},
	"a-b.txt":            {data: "a-b\n"},
	"a/b/c.txt":          {data: "c\n"},
	"a/b/d.txt":          {data: "d\n"},
	"a/link-up":          {data: "../README.md", mode: filemode.Symlink},
	"bin/run.sh":         {data: "#!/bin/sh\n", mode: filemode.Executable},
	"empty":              {data: ""},
	"link-to-c":          {data: "a/b/c.txt", mode: filemode.Symlink},
	"dirlink":            {data: "a/b", mode: filemode.Symlink},
	"deep/x/y/z/file.go": {data: "package z\n"},
}

func sampleFS(t testing.TB) *gitfs.FS {
	st := newMemStore()
	return st.FS(buildTree(t, st, sampleFiles))
}

func TestFSPassesTestFS(t *testing.T) {
	t.Parallel()
	fsys := sampleFS(t)
	if err := fstest.TestFS(fsys, "README.md", "a.txt", "a-b.txt", "a/b/c.txt", "a/b/d.txt",
		"a/link-up", "bin/run.sh", "empty", "link-to-c", "dirlink", "deep/x/y/z/file.go"); err != nil {
		t.Fatal(err)
	}
	sub, err := fs.Sub(fsys, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(sub, "b/c.txt", "b/d.txt", "link-up"); err != nil {
		t.Fatal(err)
	}
}

func TestFSEmptyTree(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	h, err := st.BuildTree(t.Context(), plumbing.ZeroHash, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h != gitfs.EmptyTree {
		t.Fatalf("empty tree = %s, want %s", h, gitfs.EmptyTree)
	}
	if err := fstest.TestFS(st.FS(h)); err != nil {
		t.Fatal(err)
	}
}

func TestFSReads(t *testing.T) {
	t.Parallel()
	fsys := sampleFS(t)
	tests := []struct {
		name    string
		read    func() (string, error)
		want    string
		wantErr error
	}{
		{name: "file", read: readFile(fsys, "a/b/c.txt"), want: "c\n"},
		{name: "empty file", read: readFile(fsys, "empty"), want: ""},
		{name: "link to file", read: readFile(fsys, "link-to-c"), want: "c\n"},
		{name: "link upwards", read: readFile(fsys, "a/link-up"), want: "hello\n"},
		{name: "through dir link", read: readFile(fsys, "dirlink/d.txt"), want: "d\n"},
		{name: "readlink", read: func() (string, error) { return fsys.ReadLink("dirlink") }, want: "a/b"},
		{name: "readlink of file", read: func() (string, error) { return fsys.ReadLink("a.txt") }, wantErr: fs.ErrInvalid},
		{name: "missing", read: readFile(fsys, "nope"), wantErr: fs.ErrNotExist},
		{name: "missing below file", read: readFile(fsys, "a.txt/x"), wantErr: fs.ErrNotExist},
		{name: "missing below link", read: readFile(fsys, "dirlink/nope"), wantErr: fs.ErrNotExist},
		{name: "invalid", read: readFile(fsys, "../x"), wantErr: fs.ErrInvalid},
		{name: "absolute", read: readFile(fsys, "/a.txt"), wantErr: fs.ErrInvalid},
		{name: "directory", read: readFile(fsys, "a"), want: "is a directory"},
		{name: "readdir of file", read: readDir(fsys, "a.txt"), want: "not a directory"},
		{name: "readdir root", read: readDir(fsys, "."), want: "README.md a a-b.txt a.txt bin deep dirlink empty link-to-c"},
		{name: "readdir through link", read: readDir(fsys, "dirlink"), want: "c.txt d.txt"},
		{name: "stat", read: stat(fsys, "bin/run.sh"), want: "run.sh -rwxr-xr-x 10"},
		{name: "stat link", read: stat(fsys, "link-to-c"), want: "link-to-c -rw-r--r-- 2"},
		{name: "lstat link", read: func() (string, error) {
			fi, err := fsys.Lstat("link-to-c")
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%s %s %d", fi.Name(), fi.Mode(), fi.Size()), nil
		}, want: "link-to-c Lrwxrwxrwx 9"},
		{name: "stat dir", read: stat(fsys, "a/b"), want: "b drwxr-xr-x 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.read()
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func readFile(fsys fs.FS, name string) func() (string, error) {
	return func() (string, error) {
		b, err := fs.ReadFile(fsys, name)
		return string(b), err
	}
}

func readDir(fsys fs.FS, name string) func() (string, error) {
	return func() (string, error) {
		entries, err := fs.ReadDir(fsys, name)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return strings.Join(names, " "), err
	}
}

func stat(fsys fs.FS, name string) func() (string, error) {
	return func() (string, error) {
		fi, err := fs.Stat(fsys, name)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %s %d", fi.Name(), fi.Mode(), fi.Size()), nil
	}
}

func TestFSSymlinksStayInTree(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	fsys := st.FS(buildTree(t, st, map[string]file{
		"escape":   {data: "../outside", mode: filemode.Symlink},
		"abs":      {data: "/etc/passwd", mode: filemode.Symlink},
		"d/escape": {data: "../../x", mode: filemode.Symlink},
		"loop1":    {data: "loop2", mode: filemode.Symlink},
		"loop2":    {data: "loop1", mode: filemode.Symlink},
		"self":     {data: ".", mode: filemode.Symlink},
		"ok":       {data: "d/../target", mode: filemode.Symlink},
		"target":   {data: "t\n"},
	}))
	for _, name := range []string{"escape", "abs", "d/escape"} {
		if _, err := fsys.ReadFile(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile(%q) err = %v, want ErrNotExist", name, err)
		}
	}
	if _, err := fsys.ReadFile("loop1"); err == nil || !strings.Contains(err.Error(), "too many levels") {
		t.Errorf("ReadFile(loop1) err = %v, want too many levels of symbolic links", err)
	}
	if b, err := fsys.ReadFile("self/ok"); err != nil || string(b) != "t\n" {
		t.Errorf("ReadFile(self/ok) = %q, %v", b, err)
	}
	if fi, err := fsys.Stat("self"); err != nil || !fi.IsDir() {
		t.Errorf("Stat(self) = %v, %v; want a directory", fi, err)
	}
}

func TestFSSysIsObjectID(t *testing.T) {
	t.Parallel()
	fsys := sampleFS(t)
	fi, err := fsys.Stat("a/b/c.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fi.Sys(), gitfs.HashObject(plumbing.BlobObject, []byte("c\n")); got != want {
		t.Fatalf("Sys() = %v, want %v", got, want)
	}
}

func TestFSContentID(t *testing.T) {
	t.Parallel()
	fsys := sampleFS(t)
	var _ controller.ContentIDFS = fsys
	id := func(name string) string {
		t.Helper()
		v, err := fsys.ContentID(name)
		if err != nil {
			t.Fatalf("ContentID(%q): %v", name, err)
		}
		return v
	}
	want := gitfs.HashObject(plumbing.BlobObject, []byte("c\n"))
	if got := id("a/b/c.txt"); got != string(want[:]) {
		t.Fatalf("ContentID(a/b/c.txt) = %x, want the blob id %s", got, want)
	}
	if id("link-to-c") != id("a/b/c.txt") {
		t.Error("a symbolic link does not name its target's content")
	}
	if id("a/b/d.txt") == id("a/b/c.txt") {
		t.Error("different content has one id")
	}
	for _, name := range []string{"a/b", "missing.txt", "../x", "/abs"} {
		if _, err := fsys.ContentID(name); err == nil {
			t.Errorf("ContentID(%q) succeeded", name)
		}
	}
	if _, err := fsys.ContentID("missing.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ContentID(missing.txt) = %v, want fs.ErrNotExist", err)
	}
	// Directory entries tell a file's id, the one ContentID gives, and
	// leave a link's and a directory's to ContentID.
	for _, dir := range []string{".", "a/b"} {
		entries, err := fsys.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			got, ok := e.(controller.ContentIDEntry).ContentID()
			name := path.Join(dir, e.Name())
			switch {
			case e.IsDir() || e.Type()&fs.ModeSymlink != 0:
				if ok {
					t.Errorf("the entry of %s gives the id %x", name, got)
				}
			case !ok || got != id(name):
				t.Errorf("the entry of %s gives %x (%v), ContentID %x", name, got, ok, id(name))
			}
		}
	}
}

func TestFSHidesGitlinks(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	fsys := st.FS(buildTree(t, st, map[string]file{
		"sub":  {data: "not really a commit", mode: filemode.Submodule},
		"file": {data: "f\n"},
	}))
	if _, err := fsys.Stat("sub"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat(sub) err = %v, want ErrNotExist", err)
	}
	if err := fstest.TestFS(fsys, "file"); err != nil {
		t.Fatal(err)
	}
}

func TestFSOpenFile(t *testing.T) {
	t.Parallel()
	f, err := sampleFS(t).Open("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rs := f.(io.ReadSeeker)
	if _, err := rs.Seek(2, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rs)
	if err != nil || string(b) != "llo\n" {
		t.Fatalf("read after seek = %q, %v", b, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read(make([]byte, 1)); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("read after close err = %v, want ErrClosed", err)
	}
}

func TestFSConcurrentReads(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	files := make(map[string]file)
	for i := range 200 {
		files[fmt.Sprintf("d%d/f%d.txt", i%7, i)] = file{data: fmt.Sprint(i)}
	}
	root := buildTree(t, st, files)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			fsys := st.FS(root) // a snapshot per goroutine, sharing the store
			for i := range 200 {
				i := (i + g*31) % 200
				b, err := fsys.ReadFile(fmt.Sprintf("d%d/f%d.txt", i%7, i))
				if err != nil || string(b) != fmt.Sprint(i) {
					t.Errorf("read %d = %q, %v", i, b, err)
					return
				}
				if _, err := fs.ReadDir(fsys, fmt.Sprintf("d%d", i%7)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestTreeCacheEvicts(t *testing.T) {
	t.Parallel()
	cache := gitfs.NewTreeCache(10)
	st := gitfs.NewStore(newMemStoreObjects(), gitfs.WithTreeCache(cache))
	var roots []plumbing.Hash
	for i := range 5 {
		roots = append(roots, buildTree(t, st, regular(map[string]string{
			fmt.Sprintf("f%d", i): "x", "g": fmt.Sprint(i), "h": "y",
		})))
	}
	// Each tree costs 4; only two fit.
	if n := cache.Len(); n != 2 {
		t.Fatalf("cache holds %d trees, want 2", n)
	}
	for i, root := range roots {
		if b, err := st.FS(root).ReadFile("g"); err != nil || string(b) != fmt.Sprint(i) {
			t.Fatalf("root %d: ReadFile(g) = %q, %v", i, b, err)
		}
	}
	if n := cache.Len(); n != 2 {
		t.Fatalf("cache holds %d trees after reads, want 2", n)
	}
}
