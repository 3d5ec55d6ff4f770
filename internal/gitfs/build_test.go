package gitfs_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/source"
)

// countingWriter counts the objects written through it, by type.
type countingWriter struct {
	w      gitfs.ObjectWriter
	counts [8]atomic.Int64
}

func (c *countingWriter) WriteObject(typ plumbing.ObjectType, content []byte) (plumbing.Hash, error) {
	c.counts[typ].Add(1)
	return c.w.WriteObject(typ, content)
}

// diskRepo makes a bare repository holding files and returns a store over
// it that writes loose objects, and the commit.
func diskRepo(t testing.TB, files map[string][]byte, opts ...gitfs.Option) (dir string, st *gitfs.Store, commit plumbing.Hash) {
	t.Helper()
	dir = t.TempDir()
	c, err := gitrepo.Init(dir, "main", files, "initial\n")
	if err != nil {
		t.Fatal(err)
	}
	storage := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	opts = append([]gitfs.Option{gitfs.WithObjectWriter(gitfs.NewLooseWriter(filepath.Join(dir, "objects")))}, opts...)
	return dir, gitfs.NewStore(storage, opts...), plumbing.NewHash(c)
}

func TestBuildRewritesOnlyChangedPaths(t *testing.T) {
	t.Parallel()
	files := gitrepo.Generate("big", 500)
	files["a/b/c/d.txt"] = []byte("d\n")
	files["a/other/e.txt"] = []byte("e\n")
	dir, _, commit := diskRepo(t, files)
	storage := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	counter := &countingWriter{w: gitfs.NewLooseWriter(filepath.Join(dir, "objects"))}
	st := gitfs.NewStore(storage, gitfs.WithObjectWriter(counter))
	_, tree, err := st.Peel(commit)
	if err != nil {
		t.Fatal(err)
	}
	ov := gitfs.NewOverlay(st.FS(tree))
	if err := ov.WriteFile("a/b/c/d.txt", []byte("D\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	changes, err := ov.Changes()
	if err != nil {
		t.Fatal(err)
	}
	newTree, err := st.BuildTree(t.Context(), tree, changes)
	if err != nil {
		t.Fatal(err)
	}
	// One blob and the four trees root, a, a/b, a/b/c: nothing of big/ or a/other.
	if b, tr := counter.counts[plumbing.BlobObject].Load(), counter.counts[plumbing.TreeObject].Load(); b != 1 || tr != 4 {
		t.Fatalf("wrote %d blobs and %d trees, want 1 and 4", b, tr)
	}
	c, err := st.WriteCommit(&gitfs.Commit{
		Tree: newTree, Parents: []plumbing.Hash{commit},
		Author:    source.Signature{Name: "A", Email: "a@x", When: time.Unix(1700000000, 0).UTC()},
		Committer: source.Signature{Name: "C", Email: "c@x", When: time.Unix(1700000000, 0).UTC()},
		Message:   "change d\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	refs := gitfs.NewRefs(dir, dir)
	if err := refs.Update(t.Context(), "refs/heads/main", commit, c, nil); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, dir, "fsck", "--strict", "--no-dangling")
	if got := gitCmd(t, dir, "show", "main:a/b/c/d.txt"); got != "D\n" {
		t.Fatalf("git show = %q", got)
	}
}

func TestBuildGitOrderAcceptedByGit(t *testing.T) {
	t.Parallel()
	dir, st, commit := diskRepo(t, map[string][]byte{"seed": []byte("s")})
	_, tree, err := st.Peel(commit)
	if err != nil {
		t.Fatal(err)
	}
	ov := gitfs.NewOverlay(st.FS(tree))
	// "a" is a directory, so Git sorts it as "a/", after "a-b" and "a.b".
	for _, p := range []string{"a/x", "a-b", "a.b", "a0", "ab/y", "a/x-y", "a/x/z"[:3] + "0"} {
		if err := ov.WriteFile(p, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := ov.WriteFile("link", []byte("a/x"), 0o644); err != nil {
		t.Fatal(err)
	}
	changes, err := ov.Changes()
	if err != nil {
		t.Fatal(err)
	}
	newTree, err := st.BuildTree(t.Context(), tree, changes)
	if err != nil {
		t.Fatal(err)
	}
	sig := source.Signature{Name: "t", Email: "t@x", When: time.Now()}
	c, err := st.WriteCommit(&gitfs.Commit{Tree: newTree, Parents: []plumbing.Hash{commit}, Author: sig, Committer: sig, Message: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := gitfs.NewRefs(dir, dir).Update(t.Context(), "refs/heads/main", commit, c, nil); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, dir, "fsck", "--strict", "--no-dangling")
	got := gitCmd(t, dir, "ls-tree", "-r", "--name-only", "main")
	want := "a-b\na.b\na/x\na/x-y\na/x0\na0\nab/y\nlink\nseed\n"
	if got != want {
		t.Fatalf("git ls-tree:\n%s\nwant:\n%s", got, want)
	}
}

func TestBuildHonoursContext(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := st.BuildTree(ctx, plumbing.ZeroHash, []gitfs.Change{{Path: "a", Op: source.OpCreate, Mode: filemode.Regular, Data: []byte("a")}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestLooseWriterMatchesGit(t *testing.T) {
	t.Parallel()
	dir, st, _ := diskRepo(t, nil)
	for i, content := range []string{"", "hello\n", strings.Repeat("big ", 100000)} {
		h, err := st.WriteObject(plumbing.BlobObject, []byte(content))
		if err != nil {
			t.Fatal(err)
		}
		if want := plumbing.ComputeHash(plumbing.BlobObject, []byte(content)); h != want {
			t.Fatalf("object %d: id %s, want %s", i, h, want)
		}
		// Writing it again is fine.
		if _, err := st.WriteObject(plumbing.BlobObject, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if got := gitCmd(t, dir, "cat-file", "-p", h.String()); got != content {
			t.Fatalf("object %d: git cat-file gives %d bytes, want %d", i, len(got), len(content))
		}
	}
	gitCmd(t, dir, "fsck", "--strict")
}

func TestPeel(t *testing.T) {
	t.Parallel()
	dir, st, commit := diskRepo(t, map[string][]byte{"f": []byte("f")})
	tag, err := gitrepo.Tag(dir, "v1", "main", "release\n")
	if err != nil {
		t.Fatal(err)
	}
	blob := gitfs.HashObject(plumbing.BlobObject, []byte("f"))
	tests := []struct {
		name    string
		id      plumbing.Hash
		want    plumbing.Hash
		wantErr error
	}{
		{"commit", commit, commit, nil},
		{"annotated tag", plumbing.NewHash(tag), commit, nil},
		{"blob", blob, plumbing.ZeroHash, gitfs.ErrNotCommit},
		{"missing", plumbing.NewHash(strings.Repeat("ab", 20)), plumbing.ZeroHash, plumbing.ErrObjectNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, _, err := st.Peel(tt.id)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Fatalf("Peel = %s, %v; want %s, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestCommitEncodeSanitizesIdentities(t *testing.T) {
	t.Parallel()
	when := time.Date(2024, 5, 6, 7, 8, 9, 0, time.FixedZone("", 2*3600+30*60))
	c := gitfs.Commit{
		Tree:      gitfs.EmptyTree,
		Parents:   []plumbing.Hash{plumbing.NewHash(strings.Repeat("1", 40))},
		Author:    source.Signature{Name: "Eve <evil>\nparent 0000", Email: "e@x>\n", When: when},
		Committer: source.Signature{Name: " cup ", Email: "cup@localhost", When: when},
		Message:   "subject\n\nbody\n",
	}
	want := fmt.Sprintf("tree %s\nparent %s\nauthor Eve evil parent 0000 <e@x> %d +0230\ncommitter cup <cup@localhost> %[3]d +0230\n\nsubject\n\nbody\n",
		gitfs.EmptyTree, strings.Repeat("1", 40), when.Unix())
	if got := string(c.Encode()); got != want {
		t.Fatalf("Encode:\n%s\nwant:\n%s", got, want)
	}
}
