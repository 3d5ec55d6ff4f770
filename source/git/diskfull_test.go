package git_test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/gittest"
	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/git"
)

// fullFS is a billy.Filesystem whose writes fail with ENOSPC, as on a
// full disk, once a byte budget is spent. Creating, opening, renaming and
// removing files still works, as it does on a full ext4 file system;
// writing a byte beyond the budget and making a new directory do not. A
// write that crosses the budget writes what fits and fails. It is safe for
// concurrent use.
type fullFS struct {
	billy.Filesystem
	left    *atomic.Int64 // bytes that may still be written; < 0: unlimited
	written *atomic.Int64 // bytes written so far
}

func newFullFS(dir string) *fullFS {
	f := &fullFS{Filesystem: osfs.New(dir), left: new(atomic.Int64), written: new(atomic.Int64)}
	f.left.Store(-1)
	return f
}

// setBudget lets n more bytes be written; n < 0 lifts the limit.
func (f *fullFS) setBudget(n int64) { f.left.Store(n) }

// take reserves up to n bytes and returns how many it got.
func (f *fullFS) take(n int) int {
	for {
		left := f.left.Load()
		if left < 0 {
			return n
		}
		got := min(int64(n), left)
		if f.left.CompareAndSwap(left, left-got) {
			return int(got)
		}
	}
}

func (f *fullFS) full() bool { return f.left.Load() == 0 }

func enospc(op, name string) error { return &os.PathError{Op: op, Path: name, Err: syscall.ENOSPC} }

func (f *fullFS) Capabilities() billy.Capability { return billy.Capabilities(f.Filesystem) }

func (f *fullFS) Create(name string) (billy.File, error) {
	return f.wrap(f.Filesystem.Create(name))
}

func (f *fullFS) Open(name string) (billy.File, error) {
	return f.wrap(f.Filesystem.Open(name))
}

func (f *fullFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	return f.wrap(f.Filesystem.OpenFile(name, flag, perm))
}

func (f *fullFS) TempFile(dir, prefix string) (billy.File, error) {
	if err := f.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return f.wrap(f.Filesystem.TempFile(dir, prefix))
}

func (f *fullFS) MkdirAll(name string, perm os.FileMode) error {
	if _, err := f.Filesystem.Stat(name); err != nil && f.full() {
		return enospc("mkdir", name)
	}
	return f.Filesystem.MkdirAll(name, perm)
}

func (f *fullFS) Chroot(path string) (billy.Filesystem, error) {
	sub, err := f.Filesystem.Chroot(path)
	if err != nil {
		return nil, err
	}
	return &fullFS{Filesystem: sub, left: f.left, written: f.written}, nil
}

func (f *fullFS) wrap(file billy.File, err error) (billy.File, error) {
	if err != nil {
		return nil, err
	}
	return &fullFile{File: file, fs: f}, nil
}

type fullFile struct {
	billy.File
	fs *fullFS
}

func (f *fullFile) Write(p []byte) (int, error) {
	n := f.fs.take(len(p))
	written, err := f.File.Write(p[:n])
	f.fs.written.Add(int64(written))
	if err == nil && written < len(p) {
		err = enospc("write", f.Name())
	}
	return written, err
}

// fsck runs git fsck --strict on a repository and fails the test on any
// complaint. Dangling objects, which writes cut short leave behind, are
// not complaints.
func fsck(t *testing.T, dir string) {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", dir, "fsck", "--strict", "--no-dangling").CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("git fsck --strict %s: %v\n%s", dir, err, out)
	}
}

// wantOutOfSpace checks that err says the cache is out of space, and maps
// to UNAVAILABLE.
func wantOutOfSpace(t *testing.T, what string, err error, cache string) {
	t.Helper()
	t.Logf("%s: %v", what, err)
	if !errors.Is(err, source.ErrUnavailable) || !strings.Contains(fmt.Sprint(err), "out of space") || !strings.Contains(fmt.Sprint(err), cache) {
		t.Errorf("%s: %v, want ErrUnavailable saying the cache %s is out of space", what, err, cache)
	}
}

// TestCacheDiskFull fills the cache directory's disk: writes and fetches
// fail saying so, nothing reaches the remote, reads go on from the last
// good state, and once there is space again everything works, across a
// restart too.
func TestCacheDiskFull(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	cache := t.TempDir()
	disk := newFullFS(cache)
	src := r.start(t, git.WithCacheDir(cache), git.WithCacheFilesystem(disk))
	pushes := r.srv.Count(gittest.ReceivePack)

	disk.setBudget(0)
	for _, key := range []string{"", "full-1"} {
		_, err := src.Update(t.Context(), &source.UpdateRequest{Message: "x\n", IdempotencyKey: key, Fingerprint: "fp",
			Apply: write("config/a.yaml", "a: 2\n")})
		wantOutOfSpace(t, fmt.Sprintf("Update with key %q on a full disk", key), err, cache)
	}
	if n := r.srv.Count(gittest.ReceivePack) - pushes; n != 0 {
		t.Errorf("%d pushes with a full cache, want none", n)
	}
	if got := r.branchHead(t, "main"); got != r.head {
		t.Errorf("the remote moved to %s", got)
	}
	if got := readFile(t, src, "main", "config/a.yaml"); got != "a: 1\n" {
		t.Errorf("read %q with a full disk", got)
	}

	// Someone else pushes; the fetch cannot store it.
	elsewhere, err := gitrepo.Commit(r.dir, "main", map[string][]byte{"config/b.yaml": []byte("b: 1\n")}, "b\n")
	if err != nil {
		t.Fatal(err)
	}
	wantOutOfSpace(t, "Fetch on a full disk", src.Fetch(t.Context()), cache)
	if snap, err := src.View(t.Context(), ""); err != nil || snap.Commit != r.head {
		t.Errorf("View after a failed fetch = %v, %v; want the last good state %s", snap, err, r.head)
	}
	if got := readFile(t, src, "main", "config/a.yaml"); got != "a: 1\n" {
		t.Errorf("read %q after a failed fetch", got)
	}

	// Space again.
	disk.setBudget(-1)
	if err := src.Fetch(t.Context()); err != nil {
		t.Fatalf("Fetch with space again: %v", err)
	}
	if got := readFile(t, src, "", "config/b.yaml"); got != "b: 1\n" {
		t.Errorf("read %q after the fetch", got)
	}
	res, err := src.Update(t.Context(), &source.UpdateRequest{Message: "x\n", IdempotencyKey: "full-1", Fingerprint: "fp",
		Apply: write("config/a.yaml", "a: 2\n")})
	if err != nil {
		t.Fatalf("Update with space again: %v", err)
	}
	if res.Replayed {
		t.Error("the update made on a full disk was replayed: it landed after all")
	}
	if got := r.branchHead(t, "main"); got != res.Commit {
		t.Errorf("remote at %s, want %s", got, res.Commit)
	}
	log, err := gitrepo.Log(r.dir, "main")
	if err != nil || len(log) != 3 || log[1].ID != elsewhere {
		t.Errorf("remote history %v (%v), want the write on top of the other push", log, err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	fsck(t, r.dir)

	// The cache reopens: with the remote up, and from the cache alone.
	restarted := r.start(t, git.WithCacheDir(cache))
	if got := readFile(t, restarted, "", "config/a.yaml"); got != "a: 2\n" {
		t.Errorf("read %q after a restart", got)
	}
	restarted.Close()
	r.srv.SetFault(gittest.FaultRefuse)
	offline := r.start(t, git.WithCacheDir(cache))
	if snap, err := offline.View(t.Context(), ""); err != nil || snap.Commit != res.Commit {
		t.Errorf("View of the cache alone = %v, %v; want %s", snap, err, res.Commit)
	}
	offline.Close()
	fsck(t, cache)
}

// TestCacheDiskFillsDuringPush lets the disk fill up while a push is on
// its way, so that the source cannot record the branch it pushed: the
// update landed and is reported so, reads see it, and once there is space
// again the source records it and a restart serves it, with the remote
// down too.
func TestCacheDiskFillsDuringPush(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	cache := t.TempDir()
	disk := newFullFS(cache)
	src := r.start(t, git.WithCacheDir(cache), git.WithCacheFilesystem(disk))
	r.srv.OnRequest(func(req *http.Request) {
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, gittest.ReceivePack) {
			disk.setBudget(0)
		}
	})
	res, err := src.Update(t.Context(), &source.UpdateRequest{Message: "x\n", Apply: write("config/a.yaml", "a: 2\n")})
	r.srv.OnRequest(nil)
	if err != nil {
		t.Fatalf("Update that landed while the disk filled up: %v", err)
	}
	if got := r.branchHead(t, "main"); got != res.Commit {
		t.Errorf("remote at %s, want %s", got, res.Commit)
	}
	if got := readFile(t, src, "", "config/a.yaml"); got != "a: 2\n" {
		t.Errorf("read %q after the update", got)
	}
	_, err = src.Update(t.Context(), &source.UpdateRequest{Message: "y\n", Apply: write("config/a.yaml", "a: 3\n")})
	wantOutOfSpace(t, "the next Update on a full disk", err, cache)

	// Space again: the same source fetches and writes.
	disk.setBudget(-1)
	if err := src.Fetch(t.Context()); err != nil {
		t.Fatalf("Fetch with space again: %v", err)
	}
	res, err = src.Update(t.Context(), &source.UpdateRequest{Message: "y\n", Apply: write("config/a.yaml", "a: 3\n")})
	if err != nil {
		t.Fatalf("Update with space again: %v", err)
	}
	if got := r.branchHead(t, "main"); got != res.Commit {
		t.Errorf("remote at %s, want %s", got, res.Commit)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	fsck(t, cache)
	fsck(t, r.dir)

	// A restart while the remote is down serves what the cache holds.
	r.srv.SetFault(gittest.FaultRefuse)
	offline := r.start(t, git.WithCacheDir(cache))
	if snap, err := offline.View(t.Context(), ""); err != nil || snap.Commit != res.Commit {
		t.Errorf("View of the cache alone = %v, %v; want %s", snap, err, res.Commit)
	}
}

// TestCacheRepairsTornReferences starts a source on a cache directory
// whose references a crash or a full disk left empty or cut short, as
// go-git, which writes them in place, can: it starts, fetches them again
// and serves.
func TestCacheRepairsTornReferences(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	if err := gitrepo.Branch(r.dir, "other", "main"); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	r.start(t, git.WithCacheDir(cache)).Close()
	for name, content := range map[string]string{
		"HEAD":             "",
		"refs/heads/main":  "",
		"refs/heads/other": r.head[:17],
	} {
		if err := os.WriteFile(filepath.Join(cache, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := r.start(t, git.WithCacheDir(cache))
	for _, rev := range []string{"", "main", "other"} {
		if snap, err := src.View(t.Context(), rev); err != nil || snap.Commit != r.head {
			t.Errorf("View(%q) = %v, %v; want %s", rev, snap, err, r.head)
		}
	}
	res, err := src.Update(t.Context(), &source.UpdateRequest{Message: "x\n", Apply: write("config/a.yaml", "a: 2\n")})
	if err != nil {
		t.Fatal(err)
	}
	src.Close()
	fsck(t, cache)
	r.srv.SetFault(gittest.FaultRefuse)
	offline := r.start(t, git.WithCacheDir(cache))
	if snap, err := offline.View(t.Context(), ""); err != nil || snap.Commit != res.Commit {
		t.Errorf("View of the cache alone = %v, %v; want %s", snap, err, res.Commit)
	}
}

// TestCacheDiskFullAtFirstClone starts a source on an empty cache
// directory whose disk is full: Start fails saying so, and succeeds once
// there is space.
func TestCacheDiskFullAtFirstClone(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	cache := t.TempDir()
	disk := newFullFS(cache)
	src := r.open(t, git.WithCacheDir(cache), git.WithCacheFilesystem(disk))
	disk.setBudget(0)
	wantOutOfSpace(t, "Start on a full disk", src.Start(t.Context()), cache)
	if src.Ready() {
		t.Error("ready after a failed start")
	}
	disk.setBudget(-1)
	if err := src.Start(t.Context()); err != nil {
		t.Fatalf("Start with space again: %v", err)
	}
	if got := readFile(t, src, "", "config/a.yaml"); got != "a: 1\n" {
		t.Errorf("read %q", got)
	}
	src.Close()
	fsck(t, cache)
}

// TestCacheDiskFullAtAnyPoint lets the disk fill up at every point of a
// keyed update that first fetches someone else's commit, a twenty-fourth
// of what it writes apart: the update either lands and says so, or fails
// saying the cache is out of space with nothing pushed; either way, once
// there is space again the same source fetches and writes, and the cache
// reopens.
func TestCacheDiskFullAtAnyPoint(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	cache := t.TempDir()
	disk := newFullFS(cache)
	src := r.start(t, git.WithCacheDir(cache), git.WithCacheFilesystem(disk))
	landed, cost := 0, int64(0)
	for i, budget := 0, int64(-1); budget <= cost+cost/10; i++ {
		n := fmt.Sprint(i)
		// Both commits change one file each, so that each update costs
		// about the same.
		if _, err := gitrepo.Commit(r.dir, "main", map[string][]byte{"other/theirs.yaml": []byte(n + "\n")}, "elsewhere "+n+"\n"); err != nil {
			t.Fatal(err)
		}
		before := r.branchHead(t, "main")
		req := func() *source.UpdateRequest {
			return &source.UpdateRequest{Message: "write " + n + "\n", IdempotencyKey: "any-" + n, Fingerprint: "fp",
				Apply: write("config/mine.yaml", n+"\n")}
		}
		disk.setBudget(budget)
		written := disk.written.Load()
		res, err := src.Update(t.Context(), req())
		disk.setBudget(-1)
		if budget < 0 {
			// The first update, with room, tells what one costs; the
			// others get from nothing to a little more than that.
			cost = disk.written.Load() - written
			t.Logf("an update writes %d bytes to the cache", cost)
		}
		switch {
		case err == nil:
			landed++
			if got := r.branchHead(t, "main"); got != res.Commit {
				t.Errorf("budget %d: remote at %s, want %s", budget, got, res.Commit)
			}
		case errors.Is(err, source.ErrUnavailable) && strings.Contains(err.Error(), "out of space"):
			if got := r.branchHead(t, "main"); got != before {
				t.Errorf("budget %d: the update failed (%v) but the remote moved to %s", budget, err, got)
			}
		default:
			t.Errorf("budget %d: Update: %v, want success or out of space", budget, err)
		}
		if err := src.Fetch(t.Context()); err != nil {
			t.Fatalf("budget %d: Fetch with space again: %v", budget, err)
		}
		if err != nil {
			again, err := src.Update(t.Context(), req())
			if err != nil || again.Replayed {
				t.Fatalf("budget %d: Update with space again = %+v, %v; want a new commit", budget, again, err)
			}
		}
		if snap, err := src.View(t.Context(), ""); err != nil || snap.Commit != r.branchHead(t, "main") {
			t.Fatalf("budget %d: View = %v, %v; want the remote's head", budget, snap, err)
		}
		if budget < 0 {
			budget = 0
		} else {
			budget += max(cost/24, 1)
		}
	}
	t.Logf("%d updates landed although the disk filled up during them", landed-1)
	head := r.branchHead(t, "main")
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	fsck(t, cache)
	fsck(t, r.dir)
	r.srv.SetFault(gittest.FaultRefuse)
	offline := r.start(t, git.WithCacheDir(cache))
	if snap, err := offline.View(t.Context(), ""); err != nil || snap.Commit != head {
		t.Errorf("View of the cache alone = %v, %v; want %s", snap, err, head)
	}
}
