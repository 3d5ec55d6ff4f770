package gitfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

// TestStoreContentIDAgreesWithFS: the store's ContentID, which scans the
// trees along a path instead of decoding them, names what the file system
// over the commit's tree names, through symbolic links too, whether the
// trees are cached or not; a directory, a missing path and a link leaving
// the tree are refused as the file system refuses them.
func TestStoreContentIDAgreesWithFS(t *testing.T) {
	t.Parallel()
	for _, warm := range []bool{false, true} {
		st := newMemStore()
		tree := buildTree(t, st, sampleFiles)
		sig := source.Signature{Name: "A", Email: "a@x", When: time.Unix(1700000000, 0).UTC()}
		c, err := st.WriteCommit(&gitfs.Commit{Tree: tree, Author: sig, Committer: sig, Message: "m\n"})
		if err != nil {
			t.Fatal(err)
		}
		fsys := st.FS(tree)
		if warm { // every tree decoded and cached first
			if err := fs.WalkDir(fsys, ".", func(string, fs.DirEntry, error) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range []string{"README.md", "a/b/c.txt", "a/b/d.txt", "a/link-up", "link-to-c", "dirlink/d.txt", "bin/run.sh", "empty", "deep/x/y/z/file.go"} {
			want, err := fsys.ContentID(name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := st.ContentID(t.Context(), c.String(), name)
			if err != nil || got != fmt.Sprintf("%x", want) {
				t.Errorf("warm=%v: ContentID(%q) = %q, %v; want %x", warm, name, got, err, want)
			}
		}
		for name, want := range map[string]error{"a/b": fs.ErrInvalid, "dirlink": fs.ErrInvalid, "missing": fs.ErrNotExist, "a/b/c.txt/x": fs.ErrNotExist, "../x": fs.ErrInvalid} {
			if _, err := st.ContentID(t.Context(), c.String(), name); !errors.Is(err, want) {
				t.Errorf("warm=%v: ContentID(%q) = %v, want %v", warm, name, err, want)
			}
		}
		if _, err := st.ContentID(t.Context(), tree.String(), "README.md"); !errors.Is(err, source.ErrRevisionNotFound) {
			t.Errorf("ContentID(a tree's id) = %v, want ErrRevisionNotFound", err)
		}
	}
}

// TestMapPacks: a pack file opened through MapPacks reads (Read, Seek,
// ReadAt) exactly what the file holds, and fails with os.ErrClosed once
// closed; other files, and packs of a file system in memory, are opened as
// they were. go-git reads every object of a repository through it.
func TestMapPacks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q", "--bare", "repo.git")
	repo := filepath.Join(dir, "repo.git")
	work := filepath.Join(dir, "work")
	gitCmd(t, dir, "clone", "-q", repo, work)
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(work, fmt.Sprintf("f%d.txt", i)), []byte(strings.Repeat(fmt.Sprintf("line %d\n", i), 100)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitCmd(t, work, "add", ".")
	gitCmd(t, work, "-c", "user.name=T", "-c", "user.email=t@x", "commit", "-qm", "files")
	gitCmd(t, work, "push", "-q", "origin", "HEAD:refs/heads/main")
	gitCmd(t, repo, "repack", "-adq")
	packs, err := filepath.Glob(filepath.Join(repo, "objects", "pack", "*.pack"))
	if err != nil || len(packs) != 1 {
		t.Fatalf("packs: %v, %v", packs, err)
	}
	name := "objects/pack/" + filepath.Base(packs[0])
	want, err := os.ReadFile(packs[0])
	if err != nil {
		t.Fatal(err)
	}

	fsys := gitfs.MapPacks(osfs.New(repo))
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%T", f) != "*gitfs.mappedFile" {
		t.Fatalf("Open(pack) = %T, want a mapped file", f)
	}
	got, err := io.ReadAll(f)
	if err != nil || string(got) != string(want) {
		t.Fatalf("ReadAll = %d bytes, %v; want the %d bytes of the file", len(got), err, len(want))
	}
	if off, err := f.Seek(12, io.SeekStart); err != nil || off != 12 {
		t.Fatalf("Seek = %d, %v", off, err)
	}
	buf := make([]byte, 8)
	if _, err := io.ReadFull(f, buf); err != nil || string(buf) != string(want[12:20]) {
		t.Fatalf("Read after Seek = %q, %v; want %q", buf, err, want[12:20])
	}
	if n, err := f.ReadAt(buf, int64(len(want)-4)); n != 4 || err != io.EOF || string(buf[:4]) != string(want[len(want)-4:]) {
		t.Fatalf("ReadAt(end-4) = %d, %v", n, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(buf, 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("ReadAt after Close = %v, want os.ErrClosed", err)
	}
	if _, err := f.Read(buf); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Read after Close = %v, want os.ErrClosed", err)
	}

	if f, err := fsys.Open("HEAD"); err != nil || fmt.Sprintf("%T", f) == "*gitfs.mappedFile" {
		t.Fatalf("Open(HEAD) = %T, %v; want the file as it was", f, err)
	} else {
		f.Close()
	}
	mem := memfs.New()
	if err := mem.MkdirAll("objects/pack", 0o755); err != nil {
		t.Fatal(err)
	}
	mf, _ := mem.Create(name)
	mf.Write(want)
	mf.Close()
	if f, err := gitfs.MapPacks(mem).Open(name); err != nil || fmt.Sprintf("%T", f) == "*gitfs.mappedFile" {
		t.Fatalf("Open(pack in memory) = %T, %v; want the file as it was", f, err)
	} else {
		f.Close()
	}

	// go-git reads the repository through it: every object of the commit.
	st := gitfs.NewStore(filesystem.NewStorageWithOptions(fsys, cache.NewObjectLRU(cache.KiByte), filesystem.Options{MaxOpenDescriptors: 4}))
	head := strings.TrimSpace(gitCmd(t, repo, "rev-parse", "main"))
	for i := range 20 {
		id, err := st.ContentID(t.Context(), head, fmt.Sprintf("f%d.txt", i))
		wantID := strings.TrimSpace(gitCmd(t, repo, "rev-parse", fmt.Sprintf("main:f%d.txt", i)))
		if err != nil || id != wantID {
			t.Fatalf("ContentID(f%d.txt) = %q, %v; want %s", i, id, err, wantID)
		}
		data, err := st.ReadObject(plumbing.BlobObject, plumbing.NewHash(id))
		if err != nil || string(data) != strings.Repeat(fmt.Sprintf("line %d\n", i), 100) {
			t.Fatalf("ReadObject(f%d.txt) = %d bytes, %v", i, len(data), err)
		}
	}
}

// TestFSReadContent: ReadContent of the id ContentID gives reads what
// ReadFile reads, through symbolic links too; an id that is not 20 bytes is
// invalid, and one of no blob is not found.
func TestFSReadContent(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	tree := buildTree(t, st, sampleFiles)
	fsys := st.FS(tree)
	for _, name := range []string{"README.md", "a/b/c.txt", "a/link-up", "link-to-c", "dirlink/d.txt", "bin/run.sh", "empty", "deep/x/y/z/file.go"} {
		id, err := fsys.ContentID(name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := fsys.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fsys.ReadContent(id)
		if err != nil || string(got) != string(want) {
			t.Errorf("ReadContent(ContentID(%q)) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := fsys.ReadContent("short"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("ReadContent of a 5-byte id = %v, want ErrInvalid", err)
	}
	var none plumbing.Hash
	none[0] = 1
	if _, err := fsys.ReadContent(string(none[:])); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("ReadContent of no object's id = %v, want ErrObjectNotFound", err)
	}
	if _, err := fsys.ReadContent(string(tree[:])); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("ReadContent of a tree's id = %v, want ErrObjectNotFound", err)
	}
}
