package gitfs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/internal/gitfs"
)

// looseFiles returns the ids of the loose objects of a repository.
func looseFiles(t *testing.T, dir string) []plumbing.Hash {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "objects", "[0-9a-f][0-9a-f]", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []plumbing.Hash
	for _, n := range names {
		if h, ok := gitfs.ParseHash(filepath.Base(filepath.Dir(n)) + filepath.Base(n)); ok {
			ids = append(ids, h)
		}
	}
	return ids
}

// looseCommits is a stagedRepo with n commits made one at a time, their
// objects loose.
func looseCommits(t *testing.T, n int) *stagedRepo {
	t.Helper()
	r := newStagedRepo(t)
	for range n {
		old := r.head
		r.commit(t)
		r.publish(t, old)
	}
	return r
}

// freshReadsAll fails t unless a new reader of objectsDir reads every
// object of ids.
func freshReadsAll(t *testing.T, objectsDir string, ids []plumbing.Hash) {
	t.Helper()
	fresh := gitfs.NewObjectDir(objectsDir)
	defer fresh.Close()
	for _, id := range ids {
		if _, _, err := fresh.Read(id); err != nil {
			t.Fatalf("a fresh reader: %s: %v", id, err)
		}
	}
}

// TestPackLoose: the loose objects of single commits made in one second,
// trees of 40 KB included, go into one pack in which each commit's tree is
// a delta of its parent's; no loose file is left; git reads the pack and fsck is clean;
// a reader that had read them loose reads them still; a second call finds
// nothing to do; and a loose copy of an object a pack holds is removed and
// not packed again.
func TestPackLoose(t *testing.T) {
	t.Parallel()
	r := newStagedRepo(t)
	r.oneTime = true // the order of the commits is their parents'
	commits := []plumbing.Hash{r.head}
	for range 12 {
		old := r.head
		commits = append(commits, r.commit(t))
		if res := r.publish(t, old); res.Pack != "" {
			t.Fatalf("a single commit was packed: %+v", res)
		}
	}
	objects := filepath.Join(r.dir, "objects")
	loose := looseFiles(t, r.dir)
	if len(loose) != 12*4 {
		t.Fatalf("%d loose objects, want 4 a commit (blob, two trees, commit)", len(loose))
	}
	for _, id := range commits {
		if _, _, err := r.objs.Read(id); err != nil { // read loose
			t.Fatal(err)
		}
	}

	res, err := gitfs.PackLoose(t.Context(), objects, r.objs, gitfs.LooseBatch, gitfs.LooseBatchBytes)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pack == "" || res.Packed != len(loose) || res.Removed != len(loose) || res.More {
		t.Fatalf("PackLoose = %+v, want %d objects packed and removed", res, len(loose))
	}
	if left := looseFiles(t, r.dir); len(left) != 0 {
		t.Fatalf("%d loose objects left", len(left))
	}
	var treeSize int64
	fmt.Sscan(gitCmd(t, r.dir, "cat-file", "-s", "main:big"), &treeSize)
	// 12 trees of the directory stored whole would be 12 times that.
	if limit := treeSize + 8<<10; res.PackBytes > limit {
		t.Errorf("the pack is %d bytes, more than %d (a tree is %d): its trees are not deltas", res.PackBytes, limit, treeSize)
	}
	out := gitCmd(t, r.dir, "verify-pack", "-v", res.Pack+".idx")
	if !strings.Contains(out, "chain length = 11:") {
		t.Errorf("the 11 later trees of the directory are not one delta chain:\n%s", out[max(0, len(out)-600):])
	}
	gitCmd(t, r.dir, "fsck", "--strict", "--no-dangling")
	if got := gitCmd(t, r.dir, "rev-list", "--count", "main"); strings.TrimSpace(got) != "13" {
		t.Errorf("git rev-list --count main = %q, want 13", got)
	}
	for _, id := range commits {
		if _, _, err := r.objs.Read(id); err != nil {
			t.Fatalf("the reader that read it loose: commit %s: %v", id, err)
		}
	}
	freshReadsAll(t, objects, loose)

	if again, err := gitfs.PackLoose(t.Context(), objects, r.objs, gitfs.LooseBatch, gitfs.LooseBatchBytes); err != nil || again != (gitfs.LoosePacked{}) {
		t.Fatalf("a second PackLoose = %+v, %v; want nothing done", again, err)
	}
	// A loose copy of a packed object, as a kill between placing a pack and
	// removing its loose files leaves.
	h, err := gitfs.NewLooseWriter(objects).WriteObject(plumbing.BlobObject, []byte(gitCmd(t, r.dir, "show", "main:big/file-00001.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	if len(looseFiles(t, r.dir)) != 1 {
		t.Fatalf("no loose copy of %s was written", h)
	}
	if dup, err := gitfs.PackLoose(t.Context(), objects, r.objs, gitfs.LooseBatch, gitfs.LooseBatchBytes); err != nil || dup != (gitfs.LoosePacked{Removed: 1}) {
		t.Fatalf("PackLoose of a packed object's loose copy = %+v, %v; want it removed only", dup, err)
	}
}

// TestPackLooseInBatches: with a batch smaller than the loose objects, by
// count or by bytes, each call packs at most that much (but one object at
// least) and says there are more, until none are left; every object is
// read from the packs, and fsck is clean.
func TestPackLooseInBatches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		objects  int
		bytes    int64
		perBatch int // objects a batch packs at most
	}{
		{"objects", 5, gitfs.LooseBatchBytes, 5},
		{"bytes", gitfs.LooseBatch, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := looseCommits(t, 3)
			objects := filepath.Join(r.dir, "objects")
			loose := looseFiles(t, r.dir)
			calls, packed := 0, 0
			for {
				res, err := gitfs.PackLoose(t.Context(), objects, r.objs, tc.objects, tc.bytes)
				if err != nil {
					t.Fatal(err)
				}
				calls++
				packed += res.Packed
				if res.Packed > tc.perBatch || res.Packed == 0 {
					t.Fatalf("a call packed %d objects, want 1 to %d", res.Packed, tc.perBatch)
				}
				if !res.More {
					break
				}
			}
			if want := (len(loose) + tc.perBatch - 1) / tc.perBatch; calls != want || packed != len(loose) {
				t.Fatalf("%d calls packed %d objects; want %d calls for %d", calls, packed, want, len(loose))
			}
			if left := looseFiles(t, r.dir); len(left) != 0 {
				t.Fatalf("%d loose objects left", len(left))
			}
			gitCmd(t, r.dir, "fsck", "--strict", "--no-dangling")
			freshReadsAll(t, objects, loose)
		})
	}
}

// TestPackLooseStopsWhenCancelled: a cancelled packing leaves the loose
// objects as they were and no pack.
func TestPackLooseStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	r := looseCommits(t, 1)
	before, loose := packs(t, r.dir), looseFiles(t, r.dir)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := gitfs.PackLoose(ctx, filepath.Join(r.dir, "objects"), r.objs, gitfs.LooseBatch, gitfs.LooseBatchBytes); !errors.Is(err, context.Canceled) {
		t.Fatalf("PackLoose = %v, want context.Canceled", err)
	}
	if after := packs(t, r.dir); len(after) != len(before) {
		t.Errorf("%d packs, want %d", len(after), len(before))
	}
	if left := looseFiles(t, r.dir); len(left) != len(loose) {
		t.Errorf("%d loose objects, want %d", len(left), len(loose))
	}
	tmp, _ := filepath.Glob(filepath.Join(r.dir, "objects", "pack", "tmp_*"))
	if len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// TestEstimateLoose: the estimate is the objects of objects/17 times 256.
func TestEstimateLoose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if got := gitfs.EstimateLoose(dir); got != 0 {
		t.Fatalf("no objects directory: %d", got)
	}
	if err := os.MkdirAll(filepath.Join(dir, "17"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{strings.Repeat("a", 38), strings.Repeat("b", 38), "tmp_obj_123", strings.Repeat("c", 37)} {
		if err := os.WriteFile(filepath.Join(dir, "17", name), nil, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	if got := gitfs.EstimateLoose(dir); got != 2*256 {
		t.Fatalf("EstimateLoose = %d, want %d", got, 2*256)
	}
}

// TestPackLooseLeavesWhatItCannotRead: a file named as a loose object that
// is not one stays as it is, counted as left loose, and the rest is packed.
func TestPackLooseLeavesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	r := looseCommits(t, 1)
	objects := filepath.Join(r.dir, "objects")
	loose := looseFiles(t, r.dir)
	junk := filepath.Join(objects, "ab", strings.Repeat("c", 38))
	if err := os.MkdirAll(filepath.Dir(junk), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(junk, []byte("not zlib at all"), 0o444); err != nil {
		t.Fatal(err)
	}
	res, err := gitfs.PackLoose(t.Context(), objects, r.objs, gitfs.LooseBatch, gitfs.LooseBatchBytes)
	if err != nil || res.Packed != len(loose) || res.Skipped != 1 {
		t.Fatalf("PackLoose = %+v, %v; want %d packed and 1 left", res, err, len(loose))
	}
	if _, err := os.Stat(junk); err != nil {
		t.Errorf("the file that is no object: %v", err)
	}
	freshReadsAll(t, objects, loose)
}

// TestPackLooseTakesTurns: while another process holds the lock on packing
// the loose objects, PackLoose leaves them alone with ErrPackLooseBusy; a
// lock an hour old was left by a process that died, and is taken over;
// PackLoose leaves no lock behind.
func TestPackLooseTakesTurns(t *testing.T) {
	t.Parallel()
	r := looseCommits(t, 1)
	objects := filepath.Join(r.dir, "objects")
	loose := looseFiles(t, r.dir)
	lock := filepath.Join(objects, "cup-pack-loose.lock")
	if err := os.WriteFile(lock, []byte("12345\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := gitfs.PackLoose(t.Context(), objects, r.objs, gitfs.LooseBatch, gitfs.LooseBatchBytes); !errors.Is(err, gitfs.ErrPackLooseBusy) || res.Packed != 0 {
		t.Fatalf("PackLoose with the lock held = %+v, %v; want ErrPackLooseBusy", res, err)
	}
	if left := looseFiles(t, r.dir); len(left) != len(loose) {
		t.Fatalf("%d loose objects left of %d", len(left), len(loose))
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	if res, err := gitfs.PackLoose(t.Context(), objects, r.objs, gitfs.LooseBatch, gitfs.LooseBatchBytes); err != nil || res.Packed != len(loose) {
		t.Fatalf("PackLoose with a stale lock = %+v, %v; want %d packed", res, err, len(loose))
	}
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lock is left behind: %v", err)
	}
}
