package git_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/gittest"
	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/git"
)

const (
	user, password = "alice", "s3cret"
	repoName       = "config.git"
)

// remote is a served repository holding config/a.yaml on main.
type remote struct {
	srv  *gittest.Server
	dir  string
	url  string
	head string
}

func newRemote(t *testing.T) *remote {
	t.Helper()
	srv := gittest.NewServer(t, gittest.WithBasicAuth(user, password))
	r := &remote{srv: srv, dir: srv.Path(repoName), url: srv.URL(repoName)}
	var err error
	r.head, err = gitrepo.Init(r.dir, "main", map[string][]byte{"config/a.yaml": []byte("a: 1\n")}, "initial\n")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *remote) open(t *testing.T, opts ...git.Option) *git.Source {
	t.Helper()
	src, err := git.Open(r.url, append([]git.Option{
		git.WithAuth(git.BasicAuth(user, password)),
		git.WithLogger(testLogger(t)),
		git.WithFetchInterval(-1),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

func (r *remote) start(t *testing.T, opts ...git.Option) *git.Source {
	t.Helper()
	src := r.open(t, opts...)
	if err := src.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return src
}

// branchHead returns the commit a branch of the served repository holds.
func (r *remote) branchHead(t *testing.T, branch string) string {
	t.Helper()
	h, err := gitrepo.Resolve(r.dir, branch)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func write(path, content string) source.ApplyFunc {
	return func(_ context.Context, _ *source.Snapshot, w source.Writer) error {
		return w.WriteFile(path, []byte(content), 0o644)
	}
}

func readFile(t *testing.T, src source.Source, rev, name string) string {
	t.Helper()
	snap, err := src.View(t.Context(), rev)
	if err != nil {
		t.Fatal(err)
	}
	b, err := fs.ReadFile(snap.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStart(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	cache := t.TempDir()
	warm := r.start(t, git.WithCacheDir(cache))
	if got := readFile(t, warm, "", "config/a.yaml"); got != "a: 1\n" {
		t.Fatalf("read %q", got)
	}
	warm.Close()
	r.srv.Close() // the remote is down from now on

	tests := []struct {
		name    string
		opts    []git.Option
		wantErr bool
	}{
		{"lenient with a warm cache serves it", []git.Option{git.WithCacheDir(cache)}, false},
		{"strict with a warm cache fails", []git.Option{git.WithCacheDir(cache), git.WithStrict(true)}, true},
		{"lenient without a cache fails", nil, true},
		{"lenient with an empty cache fails", []git.Option{git.WithCacheDir(t.TempDir())}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := r.open(t, tt.opts...)
			err := src.Start(t.Context())
			if tt.wantErr {
				if !errors.Is(err, source.ErrUnavailable) {
					t.Fatalf("Start: %v, want ErrUnavailable", err)
				}
				if src.Ready() {
					t.Error("ready after a failed start")
				}
				if _, err := src.View(t.Context(), ""); !errors.Is(err, source.ErrUnavailable) {
					t.Errorf("View: %v, want ErrUnavailable", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !src.Ready() {
				t.Error("not ready")
			}
			if got := readFile(t, src, "main", "config/a.yaml"); got != "a: 1\n" {
				t.Errorf("read %q from the cache", got)
			}
		})
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	for _, auth := range []git.Option{git.WithAuth(nil), git.WithAuth(git.BasicAuth(user, "wrong"))} {
		src := r.open(t, auth)
		if err := src.Start(t.Context()); !errors.Is(err, source.ErrUnavailable) || !strings.Contains(err.Error(), "auth") {
			t.Errorf("Start: %v, want ErrUnavailable naming authentication", err)
		}
	}
}

func TestCacheDirIsReused(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	cache := t.TempDir()
	r.start(t, git.WithCacheDir(cache)).Close()
	uploads := r.srv.Count(gittest.UploadPack)
	if _, err := gitrepo.Commit(r.dir, "main", map[string][]byte{"config/b.yaml": []byte("b: 1\n")}, "b\n"); err != nil {
		t.Fatal(err)
	}
	src := r.start(t, git.WithCacheDir(cache))
	if got := readFile(t, src, "", "config/b.yaml"); got != "b: 1\n" {
		t.Fatalf("read %q", got)
	}
	if n := r.srv.Count(gittest.UploadPack) - uploads; n != 1 {
		t.Errorf("restart made %d fetch requests, want 1", n)
	}
}

func TestReadsWhileRemoteDown(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	src := r.start(t)
	for _, f := range []gittest.Fault{gittest.FaultRefuse, gittest.FaultUnavailable} {
		r.srv.SetFault(f)
		if err := src.Fetch(t.Context()); !errors.Is(err, source.ErrUnavailable) {
			t.Errorf("%v: Fetch: %v, want ErrUnavailable", f, err)
		}
		if got := readFile(t, src, "main", "config/a.yaml"); got != "a: 1\n" {
			t.Errorf("%v: read %q", f, got)
		}
		_, err := src.Update(t.Context(), &source.UpdateRequest{Message: "x\n", Apply: write("config/a.yaml", "a: 2\n")})
		if !errors.Is(err, source.ErrUnavailable) {
			t.Errorf("%v: Update: %v, want ErrUnavailable", f, err)
		}
	}
	r.srv.SetFault(gittest.FaultNone)
	if got := r.branchHead(t, "main"); got != r.head {
		t.Fatalf("the remote moved to %s", got)
	}
	res, err := src.Update(t.Context(), &source.UpdateRequest{Message: "x\n", Apply: write("config/a.yaml", "a: 2\n")})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.branchHead(t, "main"); got != res.Commit {
		t.Errorf("remote at %s, want %s", got, res.Commit)
	}
}

func TestPushRejectedByHook(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	src := r.start(t)
	hook := r.dir + "/hooks/pre-receive"
	if err := os.MkdirAll(r.dir+"/hooks", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'main is protected: open a merge request' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := src.Update(t.Context(), &source.UpdateRequest{Message: "x\n", Apply: write("config/a.yaml", "a: 2\n")})
	if !errors.Is(err, source.ErrRejected) || !strings.Contains(err.Error(), "main is protected") {
		t.Fatalf("Update: %v, want ErrRejected with the hook's words", err)
	}
	if got := r.branchHead(t, "main"); got != r.head {
		t.Errorf("the remote moved to %s", got)
	}
	if got := readFile(t, src, "main", "config/a.yaml"); got != "a: 1\n" {
		t.Errorf("the source shows %q after a rejected push", got)
	}
}

func TestPushCut(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	src := r.start(t)
	r.srv.SetFault(gittest.FaultCutPush)
	_, err := src.Update(t.Context(), &source.UpdateRequest{Message: "x\n", Apply: write("config/a.yaml", "a: 2\n")})
	if !errors.Is(err, source.ErrUnavailable) {
		t.Fatalf("Update: %v, want ErrUnavailable", err)
	}
	if got := r.branchHead(t, "main"); got != r.head {
		t.Errorf("the remote moved to %s", got)
	}
	r.srv.SetFault(gittest.FaultNone)
	if _, err := src.Update(t.Context(), &source.UpdateRequest{Message: "x\n", Apply: write("config/a.yaml", "a: 2\n")}); err != nil {
		t.Fatal(err)
	}
	log, err := gitrepo.Log(r.dir, "main")
	if err != nil || len(log) != 2 {
		t.Fatalf("%d commits (%v), want 2", len(log), err)
	}
}

// TestAnswerLostAfterPush cuts the connection after the remote took the
// push: a fetch settles that it landed.
func TestAnswerLostAfterPush(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	src := r.start(t)
	r.srv.SetFault(gittest.FaultCutAfterPush)
	res, err := src.Update(t.Context(), &source.UpdateRequest{Message: "x\n", Apply: write("config/a.yaml", "a: 2\n")})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.branchHead(t, "main"); got != res.Commit {
		t.Errorf("remote at %s, want %s", got, res.Commit)
	}
	if log, _ := gitrepo.Log(r.dir, "main"); len(log) != 2 {
		t.Errorf("%d commits, want 2", len(log))
	}
}

// TestAnswerLostThenBranchMovedOn loses the answer of a push that landed,
// and another writer commits on top of it before the fetch that settles
// the outcome: the update landed, and is not applied a second time.
func TestAnswerLostThenBranchMovedOn(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	src := r.start(t)
	var pushed, moved atomic.Bool
	r.srv.OnRequest(func(req *http.Request) {
		switch {
		case req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, gittest.ReceivePack):
			r.srv.SetFault(gittest.FaultCutAfterPush)
			pushed.Store(true)
		case pushed.Load() && !moved.Swap(true):
			r.srv.SetFault(gittest.FaultNone)
			if _, err := gitrepo.Commit(r.dir, "main", map[string][]byte{"config/other.yaml": []byte("o: 1\n")}, "another writer\n"); err != nil {
				t.Error(err)
			}
		}
	})
	res, err := src.Update(t.Context(), &source.UpdateRequest{Message: "ours\n", Apply: write("config/a.yaml", "a: 2\n")})
	r.srv.OnRequest(nil)
	if err != nil {
		t.Fatal(err)
	}
	log, err := gitrepo.Log(r.dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 3 || log[1].ID != res.Commit || !moved.Load() {
		t.Fatalf("history %v (moved: %v), want the first commit, ours (%s), the other writer's", log, moved.Load(), res.Commit)
	}
}

// TestRetryAfterUnknownOutcome loses the answer of a push and the fetch
// that would settle it, so the update fails; the caller repeats it with
// the same idempotency key, through another source, and gets the first
// result without a second commit.
func TestRetryAfterUnknownOutcome(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	for _, mode := range []source.WriteMode{source.ModeDirect, source.ModeBranch} {
		t.Run(mode.String(), func(t *testing.T) {
			key := "retry-" + mode.String()
			req := func() *source.UpdateRequest {
				return &source.UpdateRequest{Message: "x\n", IdempotencyKey: key, Fingerprint: "fp1", Apply: write("config/"+key+".yaml", "x: 1\n")}
			}
			first := r.start(t, git.WithWriteMode(mode))
			var pushed atomic.Bool
			r.srv.OnRequest(func(req *http.Request) {
				switch {
				case req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, gittest.ReceivePack):
					r.srv.SetFault(gittest.FaultCutAfterPush)
					pushed.Store(true)
				case pushed.Load():
					r.srv.SetFault(gittest.FaultRefuse)
				}
			})
			_, err := first.Update(t.Context(), req())
			r.srv.OnRequest(nil)
			r.srv.SetFault(gittest.FaultNone)
			if !errors.Is(err, source.ErrUnavailable) {
				t.Fatalf("first Update: %v, want ErrUnavailable", err)
			}
			refsBefore := gittest.Refs(t, r.dir)
			for _, src := range []*git.Source{first, r.start(t, git.WithWriteMode(mode))} {
				res, err := src.Update(t.Context(), req())
				if err != nil {
					t.Fatal(err)
				}
				if !res.Replayed || res.Commit == "" {
					t.Fatalf("repeat: %+v, want the first result replayed", res)
				}
				if got := r.branchHead(t, res.Branch); got != res.Commit {
					t.Errorf("branch %s at %s, want %s", res.Branch, got, res.Commit)
				}
			}
			if after := gittest.Refs(t, r.dir); after != refsBefore {
				t.Errorf("references changed on repeats:\n%s\nto\n%s", refsBefore, after)
			}
			_, err = first.Update(t.Context(), &source.UpdateRequest{Message: "x\n", IdempotencyKey: key, Fingerprint: "other", Apply: write("config/z.yaml", "z\n")})
			if !errors.Is(err, source.ErrIdempotencyKeyReused) {
				t.Errorf("key reused for another request: %v, want ErrIdempotencyKeyReused", err)
			}
		})
	}
}

// TestConcurrentDirectWrites makes 50 writes to different files at once
// through two sources, as two cupd processes would: every one lands, none
// is lost, and the remote passes git fsck.
func TestConcurrentDirectWrites(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	srcs := []*git.Source{r.start(t, git.WithMaxRetries(100)), r.start(t, git.WithMaxRetries(100))}
	const n = 50
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = srcs[i%2].Update(t.Context(), &source.UpdateRequest{
				Message: fmt.Sprintf("write %d\n", i),
				Apply:   write(fmt.Sprintf("items/item-%02d.yaml", i), fmt.Sprintf("i: %d\n", i)),
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	files, err := gitrepo.Files(r.dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if got := string(files[fmt.Sprintf("items/item-%02d.yaml", i)]); got != fmt.Sprintf("i: %d\n", i) {
			t.Errorf("item %d: %q", i, got)
		}
	}
	if log, _ := gitrepo.Log(r.dir, "main"); len(log) != n+1 {
		t.Errorf("%d commits, want %d", len(log), n+1)
	}
	if out, err := exec.Command("git", "--git-dir", r.dir, "fsck", "--strict").CombinedOutput(); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
}

// TestConcurrentWritesSameFile races two sources on one file, each
// writing only if the file still holds what it read first (a
// resourceVersion precondition): one wins, the other fails.
func TestConcurrentWritesSameFile(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	srcs := []*git.Source{r.start(t), r.start(t)}
	errStale := errors.New("stale")
	var wg sync.WaitGroup
	errs := make([]error, len(srcs))
	start := make(chan struct{})
	for i, src := range srcs {
		wg.Go(func() {
			<-start
			_, errs[i] = src.Update(t.Context(), &source.UpdateRequest{
				Message: "race\n",
				Apply: func(_ context.Context, base *source.Snapshot, w source.Writer) error {
					if b, err := fs.ReadFile(base.FS, "config/a.yaml"); err != nil || string(b) != "a: 1\n" {
						return errStale
					}
					return w.WriteFile("config/a.yaml", fmt.Appendf(nil, "a: winner %d\n", i), 0o644)
				},
			})
		})
	}
	close(start)
	wg.Wait()
	won, lost := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, errStale):
			lost++
		default:
			t.Errorf("Update: %v", err)
		}
	}
	if won != 1 || lost != 1 {
		t.Errorf("%d won and %d lost, want one each", won, lost)
	}
	if log, _ := gitrepo.Log(r.dir, "main"); len(log) != 2 {
		t.Errorf("%d commits, want 2", len(log))
	}
}

// TestRunPolls sees a commit pushed behind the source's back after the
// next poll, without any call to Fetch.
func TestRunPolls(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	src := r.start(t, git.WithFetchInterval(20*time.Millisecond))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	if _, err := gitrepo.Commit(r.dir, "main", map[string][]byte{"config/a.yaml": []byte("a: 2\n")}, "elsewhere\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for readFile(t, src, "", "config/a.yaml") != "a: 2\n" {
		if time.Now().After(deadline) {
			t.Fatal("the commit was not seen after 10 s of polling")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGroupCommit: writes that queue while a push is in flight are
// pushed together, each its own commit, in a directory large enough for
// the pushed trees to travel as deltas; the remote takes the packs and
// fsck finds nothing wrong.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	srv := gittest.NewServer(t, gittest.WithBasicAuth(user, password))
	r := &remote{srv: srv, dir: srv.Path(repoName), url: srv.URL(repoName)}
	if _, err := gitrepo.Init(r.dir, "main", gitrepo.Generate("items", 2000), "initial\n"); err != nil {
		t.Fatal(err)
	}
	obs := newObserved(t)
	src := r.start(t, obs.opts...)
	const n = 40
	var wg sync.WaitGroup
	results := make([]*source.UpdateResult, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			results[i], errs[i] = src.Update(t.Context(), &source.UpdateRequest{
				Message: fmt.Sprintf("write %d\n", i),
				Apply:   write(fmt.Sprintf("items/file-%05d.yaml", i*37), fmt.Sprintf("i: %d\n", i)),
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	log, err := gitrepo.Log(r.dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != n+1 {
		t.Fatalf("%d commits, want %d", len(log), n+1)
	}
	answered := map[string]bool{}
	for _, res := range results {
		answered[res.Commit] = true
	}
	for _, c := range log[:n] {
		if !answered[c.ID] {
			t.Errorf("commit %s on the remote answers no write", c)
		}
	}
	if pushes := obs.count(t, "cup_git_pushes_total", "success"); pushes > n/2 {
		t.Errorf("%v pushes for %d concurrent writes: want them grouped", pushes, n)
	}
	if out, err := exec.Command("git", "--git-dir", r.dir, "fsck", "--strict").CombinedOutput(); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
}

// TestFetchesShared: fetches asked for while one is in flight share the
// next one (the keyed writes of a group each sync before they look for
// their key).
func TestFetchesShared(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	src := r.start(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var listings atomic.Int64
	r.srv.OnRequest(func(req *http.Request) {
		if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/info/refs") {
			listings.Add(1)
			once.Do(func() { close(entered); <-release })
		}
	})
	var wg sync.WaitGroup
	errs := make([]error, 21)
	wg.Go(func() { errs[0] = src.Fetch(t.Context()) })
	<-entered // the first fetch is listing the remote's references
	for i := 1; i < len(errs); i++ {
		wg.Go(func() { errs[i] = src.Fetch(t.Context()) })
	}
	time.Sleep(50 * time.Millisecond) // for the 20 to queue behind the first
	close(release)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := listings.Load(); n > 3 {
		t.Errorf("21 fetches, 20 of them asked for during the first, listed the remote %d times; want them to share", n)
	}
}

// TestFetchDuringPushKeepsNewerHead makes a fetch list the remote's
// references, then lets a push of the same source land before the fetch
// records what it listed. The branch must stay at the pushed commit: were
// the fetch's older value recorded after the push's, reads and watches
// would see the branch go back until the next fetch (several cupd
// replicas on one remote, each fetching on every webhook call, did). The
// push answers without waiting for the fetch. The remote gets a commit on
// another branch first, so that the fetch has something to bring.
func TestFetchDuringPushKeepsNewerHead(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	src := r.start(t)
	if err := gitrepo.Branch(r.dir, "other", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := gitrepo.Commit(r.dir, "other", map[string][]byte{"config/o.yaml": []byte("o: 1\n")}, "other\n"); err != nil {
		t.Fatal(err)
	}
	listed, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.srv.OnRequest(func(req *http.Request) {
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, gittest.UploadPack) {
			once.Do(func() { close(listed); <-release })
		}
	})
	defer r.srv.OnRequest(nil)
	fetched := make(chan error, 1)
	go func() { fetched <- src.Fetch(t.Context()) }()
	<-listed // the fetch has listed main at the initial commit

	type result struct {
		res *source.UpdateResult
		err error
	}
	updated := make(chan result, 1)
	go func() {
		res, err := src.Update(t.Context(), &source.UpdateRequest{Message: "ours\n", Apply: write("config/a.yaml", "a: 2\n")})
		updated <- result{res, err}
	}()
	// The push answers while the fetch is still held: it does not wait
	// for it.
	var up result
	select {
	case up = <-updated:
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("the push did not answer while a fetch was under way")
	}
	if up.err != nil {
		t.Fatalf("Update: %v", up.err)
	}
	if got := r.branchHead(t, "main"); got != up.res.Commit {
		t.Fatalf("the remote's main is %s after the push, want %s", got, up.res.Commit)
	}
	close(release)
	if err := <-fetched; err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	snap, err := src.View(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if snap.Commit != up.res.Commit {
		t.Errorf("after the fetch and the push, the source serves %s; want the pushed %s (the initial commit is %s)", snap.Commit, up.res.Commit, r.head)
	}
	if got := readFile(t, src, "", "config/a.yaml"); got != "a: 2\n" {
		t.Errorf("config/a.yaml = %q after the push, want a: 2", got)
	}
}
