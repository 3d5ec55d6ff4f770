package gitfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/source"
)

// stagedRepo is a repository of a directory of 1,000 files (a tree of
// about 40 KB) whose store writes through a Staging.
type stagedRepo struct {
	dir     string
	store   *gitfs.Store
	objs    *gitfs.ObjectDir
	staging *gitfs.Staging
	head    plumbing.Hash
	n       int  // commits made
	oneTime bool // every commit made in the same second, as a busy server's, each changing another file
}

func newStagedRepo(t *testing.T) *stagedRepo {
	t.Helper()
	dir := t.TempDir()
	c, err := gitrepo.Init(dir, "main", gitrepo.Generate("big", 1000), "initial\n")
	if err != nil {
		t.Fatal(err)
	}
	objs := gitfs.NewObjectDir(filepath.Join(dir, "objects"))
	t.Cleanup(func() { objs.Close() })
	staging := gitfs.NewStaging(filepath.Join(dir, "objects"), objs)
	storage := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	t.Cleanup(func() { storage.Close() })
	st := gitfs.NewStore(storage, gitfs.WithObjectDir(objs), gitfs.WithObjectWriter(staging))
	return &stagedRepo{dir: dir, store: st, objs: objs, staging: staging, head: plumbing.NewHash(c)}
}

// commit changes one file on top of the last commit and returns the new
// commit, which only the staging holds until a flush.
func (r *stagedRepo) commit(t *testing.T) plumbing.Hash {
	t.Helper()
	_, tree, err := r.store.Peel(r.head)
	if err != nil {
		t.Fatal(err)
	}
	ov := gitfs.NewOverlay(r.store.FS(tree))
	r.n++
	file := 500
	if r.oneTime {
		file = r.n * 97 % 1000
	}
	if err := ov.WriteFile(fmt.Sprintf("big/file-%05d.yaml", file), fmt.Appendf(nil, "name: file-%05d\nvalue: %d\n", file, r.n), 0o644); err != nil {
		t.Fatal(err)
	}
	changes, err := ov.Changes()
	if err != nil {
		t.Fatal(err)
	}
	newTree, err := r.store.BuildTree(t.Context(), tree, changes)
	if err != nil {
		t.Fatal(err)
	}
	when := time.Unix(1700000000+int64(r.n), 0).UTC()
	if r.oneTime {
		when = time.Unix(1700000000, 0).UTC()
	}
	sig := source.Signature{Name: "t", Email: "t@x", When: when}
	c, err := r.store.WriteCommit(&gitfs.Commit{Tree: newTree, Parents: []plumbing.Hash{r.head}, Author: sig, Committer: sig, Message: fmt.Sprintf("change %d\n", r.n)})
	if err != nil {
		t.Fatal(err)
	}
	r.head = c
	return c
}

// publish flushes the staging and moves main to the last commit.
func (r *stagedRepo) publish(t *testing.T, old plumbing.Hash) gitfs.FlushResult {
	t.Helper()
	res, err := r.staging.Flush()
	if err != nil {
		t.Fatal(err)
	}
	if err := gitfs.NewRefs(r.dir, r.dir).Update(t.Context(), "refs/heads/main", old, r.head, nil); err != nil {
		t.Fatal(err)
	}
	return res
}

// groups publishes n groups of per commits each, each as a pack, and
// returns the packs and the commits.
func (r *stagedRepo) groups(t *testing.T, n, per int) (packs []string, commits []plumbing.Hash) {
	t.Helper()
	for range n {
		old := r.head
		for range per {
			commits = append(commits, r.commit(t))
		}
		packs = append(packs, r.publish(t, old).Pack)
	}
	return packs, commits
}

func packs(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "objects", "pack", "pack-*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestStagingWritesGroupsAsPacks: the objects of one commit are written
// loose, those of several as one pack with the trees after the first as
// deltas; until the flush only the store sees them, and git reads what
// the flush wrote.
func TestStagingWritesGroupsAsPacks(t *testing.T) {
	t.Parallel()
	r := newStagedRepo(t)
	start := r.head
	before := len(packs(t, r.dir))

	c := r.commit(t)
	if r.objs.Has(c) {
		t.Fatal("a staged commit is in the objects directory before the flush")
	}
	if _, err := r.store.ReadObject(plumbing.CommitObject, c); err != nil {
		t.Fatalf("the store does not read a staged commit: %v", err)
	}
	res := r.publish(t, start)
	if res.Pack != "" || res.Objects != 4 {
		t.Fatalf("one commit: %+v, want 4 loose objects (blob, two trees, commit)", res)
	}
	if !r.objs.Has(c) {
		t.Fatal("the flushed commit is not in the objects directory")
	}

	old := r.head
	for range 5 {
		r.commit(t)
	}
	res = r.publish(t, old)
	if res.Pack == "" || res.Objects != 20 {
		t.Fatalf("five commits: %+v, want one pack of 20 objects", res)
	}
	if got := len(packs(t, r.dir)); got != before+1 {
		t.Fatalf("%d packs, want %d", got, before+1)
	}
	// Four of the five trees are deltas: the pack is about one tree.
	tree := gitCmd(t, r.dir, "cat-file", "-s", "main:big")
	var treeSize int64
	fmt.Sscan(tree, &treeSize)
	if res.PackBytes > treeSize+4096 {
		t.Errorf("a pack of five commits is %d bytes, a tree %d: its trees are not deltas", res.PackBytes, treeSize)
	}
	gitCmd(t, r.dir, "verify-pack", res.Pack+".idx")
	gitCmd(t, r.dir, "fsck", "--strict", "--no-dangling")
	if got := gitCmd(t, r.dir, "show", "main:big/file-00500.yaml"); got != "name: file-00500\nvalue: 6\n" {
		t.Fatalf("git show = %q", got)
	}
	// A fresh reader reads every commit.
	fresh := gitfs.NewObjectDir(filepath.Join(r.dir, "objects"))
	defer fresh.Close()
	for h := r.head; h != start; {
		data, err := r.store.ReadObject(plumbing.CommitObject, h)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := fresh.Read(h); err != nil {
			t.Fatal(err)
		}
		h = plumbing.NewHash(strings.Fields(strings.SplitN(string(data), "\n", 3)[1])[1])
	}
	if res, err := r.staging.Flush(); err != nil || res.Objects != 0 {
		t.Fatalf("a flush of nothing: %+v, %v", res, err)
	}
}

// TestStagingKeepsWhatAFailedFlushHeld: a flush that cannot write keeps
// the objects, readable, for the next one.
func TestStagingKeepsWhatAFailedFlushHeld(t *testing.T) {
	t.Parallel()
	r := newStagedRepo(t)
	start := r.head
	r.commit(t)
	r.commit(t)
	packDir := filepath.Join(r.dir, "objects", "pack")
	// A file where the pack directory was: creating files in it fails,
	// even as root.
	if err := os.Rename(packDir, packDir+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(packDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.staging.Flush(); err == nil {
		t.Fatal("a flush into a missing pack directory succeeded")
	}
	if _, err := r.store.ReadObject(plumbing.CommitObject, r.head); err != nil {
		t.Fatalf("after a failed flush the commit cannot be read: %v", err)
	}
	if err := os.Remove(packDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(packDir+".away", packDir); err != nil {
		t.Fatal(err)
	}
	if res := r.publish(t, start); res.Objects != 8 || res.Pack == "" {
		t.Fatalf("the flush after: %+v, want a pack of 8 objects", res)
	}
	gitCmd(t, r.dir, "fsck", "--strict", "--no-dangling")
}

// TestMergePacks: packs merged into one keep every object readable, by
// cupd and by git, and are removed; packs that share an object, or that
// git is told to keep, are left as they are.
func TestMergePacks(t *testing.T) {
	t.Parallel()
	r := newStagedRepo(t)
	written, ids := r.groups(t, 4, 3)
	packDir := filepath.Join(r.dir, "objects", "pack")
	merged, size, err := gitfs.MergePacks(packDir, written)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(merged + ".pack")
	if err != nil || fi.Size() != size {
		t.Fatalf("merged pack: %v, %d bytes, said %d", err, fi.Size(), size)
	}
	for _, p := range written {
		if _, err := os.Stat(p + ".pack"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s.pack is still there: %v", p, err)
		}
		if _, err := os.Stat(p + ".idx"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s.idx is still there: %v", p, err)
		}
	}
	out := gitCmd(t, r.dir, "verify-pack", "-v", merged+".idx")
	if !strings.Contains(out, "chain length = 1:") {
		t.Errorf("no deltas in the merged pack:\n%s", out)
	}
	gitCmd(t, r.dir, "fsck", "--strict", "--no-dangling")
	fresh := gitfs.NewObjectDir(filepath.Join(r.dir, "objects"))
	defer fresh.Close()
	for _, id := range ids {
		if _, _, err := fresh.Read(id); err != nil {
			t.Fatalf("commit %s after the merge: %v", id, err)
		}
	}
	// The reader that had the old packs mapped finds the objects anew.
	r.objs.Refresh()
	for _, id := range ids {
		if !r.objs.Has(id) {
			t.Fatalf("commit %s missing after Refresh", id)
		}
	}

	// A pack of objects the merged one holds too.
	dup, err := os.CreateTemp(packDir, "copy")
	if err != nil {
		t.Fatal(err)
	}
	dup.Close()
	copyName := filepath.Join(packDir, "pack-copy")
	for _, ext := range []string{".pack", ".idx"} {
		data, err := os.ReadFile(merged + ext)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(copyName+ext, data, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(dup.Name())
	if _, _, err := gitfs.MergePacks(packDir, []string{merged, copyName}); !errors.Is(err, gitfs.ErrDuplicateObject) {
		t.Fatalf("merging packs that share objects: %v, want ErrDuplicateObject", err)
	}
	if err := os.WriteFile(merged+".keep", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := r.head
	r.commit(t)
	r.commit(t)
	another := r.publish(t, old).Pack
	if _, _, err := gitfs.MergePacks(packDir, []string{merged, another}); err == nil || !strings.Contains(err.Error(), ".keep") {
		t.Fatalf("merging a kept pack: %v", err)
	}
	for _, p := range []string{merged, copyName, another} {
		if _, err := os.Stat(p + ".idx"); err != nil {
			t.Errorf("a pack not merged is gone: %v", err)
		}
	}
}

// TestObjectDirFindsObjectsWhileMerged: a reader that lists the packs
// while they are merged reads every object all the same, listing them
// again when it misses one.
func TestObjectDirFindsObjectsWhileMerged(t *testing.T) {
	t.Parallel()
	r := newStagedRepo(t)
	written, ids := r.groups(t, 8, 2)
	packDir := filepath.Join(r.dir, "objects", "pack")
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				// A fresh reader lists the packs on its first read.
				od := gitfs.NewObjectDir(filepath.Join(r.dir, "objects"))
				for _, h := range ids {
					if _, _, err := od.Read(h); err != nil {
						t.Errorf("%s: %v", h, err)
						break
					}
				}
				od.Close()
			}
		})
	}
	for len(written) > 1 {
		merged, _, err := gitfs.MergePacks(packDir, written[:2])
		if err != nil {
			t.Error(err)
			break
		}
		written = append(written[2:], merged)
	}
	close(done)
	wg.Wait()
}

// TestStagingFreshensWhatExists: an object the repository holds is not
// kept again, and its file is freshened, so that a git gc under way keeps
// it.
func TestStagingFreshensWhatExists(t *testing.T) {
	t.Parallel()
	r := newStagedRepo(t)
	old := time.Now().Add(-30 * 24 * time.Hour)
	initial := packs(t, r.dir)
	for _, p := range initial {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	// The blob of a file of the initial commit, which is packed.
	h, err := r.staging.WriteObject(plumbing.BlobObject, []byte("name: file-00001\nvalue: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !r.objs.Has(h) {
		t.Fatal("the blob is not in the repository")
	}
	if res, err := r.staging.Flush(); err != nil || res.Objects != 0 {
		t.Fatalf("flush: %+v, %v; want nothing written", res, err)
	}
	fresh := false
	for _, p := range initial {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		fresh = fresh || fi.ModTime().After(old.Add(time.Hour))
	}
	if !fresh {
		t.Error("the pack that holds the blob was not freshened")
	}
}

// TestStagingFlushesWhenFull: a Staging that holds StagingFlushBytes
// writes what it holds as a pack at once, and says so; and the objects of
// one commit of many files are written as a pack too.
func TestStagingFlushesWhenFull(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := gitrepo.Init(dir, "main", map[string][]byte{"a": []byte("a\n")}, "initial\n"); err != nil {
		t.Fatal(err)
	}
	objs := gitfs.NewObjectDir(filepath.Join(dir, "objects"))
	defer objs.Close()
	var flushed []gitfs.FlushResult
	staging := gitfs.NewStaging(filepath.Join(dir, "objects"), objs, gitfs.StagingOnFlush(func(r gitfs.FlushResult) { flushed = append(flushed, r) }))
	blob := make([]byte, 4<<20)
	var ids []plumbing.Hash
	for i := range gitfs.StagingFlushBytes/len(blob) + 1 {
		blob[0] = byte(i)
		h, err := staging.WriteObject(plumbing.BlobObject, bytes.Clone(blob))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, h)
	}
	if len(flushed) != 1 || flushed[0].Pack == "" || flushed[0].Objects != gitfs.StagingFlushBytes/len(blob) {
		t.Fatalf("flushes %+v, want one pack of %d blobs", flushed, gitfs.StagingFlushBytes/len(blob))
	}
	for _, h := range ids[:len(ids)-1] {
		if !objs.Has(h) {
			t.Fatalf("blob %s is not in the repository after the flush", h)
		}
	}
	if objs.Has(ids[len(ids)-1]) {
		t.Fatal("the last blob, written after the flush, is in the repository")
	}

	// Many small files of one commit.
	for i := range 100 {
		if _, err := staging.WriteObject(plumbing.BlobObject, fmt.Appendf(nil, "file %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := staging.Flush()
	if err != nil || res.Pack == "" || res.Objects != 101 {
		t.Fatalf("flush of 101 objects: %+v, %v; want a pack", res, err)
	}
	gitCmd(t, dir, "verify-pack", res.Pack+".idx")
}
