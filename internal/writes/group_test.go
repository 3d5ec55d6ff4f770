package writes_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/writes"
	"github.com/cup-dev/cup/source"
)

const mainBranch = "refs/heads/main"

// held makes r's first swap wait until release is called, so that the
// updates started meanwhile queue behind it.
func held(r *refs) (release func()) {
	gate := make(chan struct{})
	var once sync.Once
	r.gate = func(writes.Swap) { once.Do(func() { <-gate }) }
	return func() { close(gate) }
}

// writing returns an ApplyFunc writing name with data.
func writing(name, data string) source.ApplyFunc {
	return func(_ context.Context, _ *source.Snapshot, w source.Writer) error {
		return w.WriteFile(name, []byte(data), 0o644)
	}
}

// behindFirst starts an update whose swap is held until release is
// called, so that the updates started next queue behind it. Call it in a
// synctest bubble.
func behindFirst(t *testing.T) (r *refs, e *writes.Engine, release func(), first <-chan outcome) {
	r = newRefs(t)
	e = engine(t, nil)
	release = held(r)
	first = start(t.Context(), e, r, &source.UpdateRequest{Message: "first\n", Apply: writing("other.txt", "x")})
	synctest.Wait()
	return r, e, release, first
}

type outcome struct {
	res *source.UpdateResult
	err error
}

// start runs an update in the background; its outcome arrives on the
// channel.
func start(ctx context.Context, e *writes.Engine, r *refs, req *source.UpdateRequest) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		res, err := e.Update(ctx, r, r.store, req)
		ch <- outcome{res, err}
	}()
	return ch
}

// history returns the first-parent history of main, newest first, down to
// (not including) the initial commit.
func history(t *testing.T, r *refs) []plumbing.Hash {
	t.Helper()
	var out []plumbing.Hash
	for h := r.heads[mainBranch]; ; {
		c, err := r.store.ReadCommit(h)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Parents) == 0 {
			return out
		}
		out = append(out, h)
		h = c.Parents[0]
	}
}

func readFile(t *testing.T, r *refs, commit plumbing.Hash, name string) string {
	t.Helper()
	c, err := r.store.ReadCommit(commit)
	if err != nil {
		t.Fatal(err)
	}
	data, err := fs.ReadFile(r.store.FS(c.Tree), name)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestGroupCommit queues 40 updates behind a swap in flight: they are
// published together with one more swap, each its own commit with its
// own message, and each answers with its commit.
func TestGroupCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRefs(t)
		reg := prometheus.NewRegistry()
		e := engine(t, func(c *writes.Config) { c.Metrics = reg })
		release := held(r)
		const n = 40
		outs := make([]<-chan outcome, n)
		req := func(i int) *source.UpdateRequest {
			return &source.UpdateRequest{Message: fmt.Sprintf("write %d\n", i), Apply: writing(fmt.Sprintf("f%02d.txt", i), fmt.Sprint(i))}
		}
		outs[0] = start(t.Context(), e, r, req(0))
		synctest.Wait() // the first swap is held
		for i := 1; i < n; i++ {
			outs[i] = start(t.Context(), e, r, req(i))
		}
		synctest.Wait()
		if q := e.Queued(mainBranch); q != n-1 {
			t.Fatalf("%d updates queued, want %d", q, n-1)
		}
		release()
		commits := map[string]int{}
		for i, ch := range outs {
			o := <-ch
			if o.err != nil || o.res.Commit == "" || o.res.Branch != "main" {
				t.Fatalf("update %d = %+v, %v", i, o.res, o.err)
			}
			commits[o.res.Commit] = i
		}
		if !slices.Equal(r.groups, []int{1, n - 1}) {
			t.Fatalf("swaps published %v commits, want [1 %d]", r.groups, n-1)
		}
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			h := f.GetMetric()[0].GetHistogram()
			switch f.GetName() {
			case "cup_write_group_commits":
				if h.GetSampleCount() != 2 || h.GetSampleSum() != n {
					t.Errorf("cup_write_group_commits: %d swaps of %v commits in all, want 2 of %d", h.GetSampleCount(), h.GetSampleSum(), n)
				}
			case "cup_write_queue_seconds":
				if h.GetSampleCount() != n {
					t.Errorf("cup_write_queue_seconds: %d updates, want %d", h.GetSampleCount(), n)
				}
			}
		}
		hist := history(t, r)
		if len(hist) != n || len(commits) != n {
			t.Fatalf("%d commits on main and %d answered, want %d of each", len(hist), len(commits), n)
		}
		for _, h := range hist {
			i, ok := commits[h.String()]
			if !ok {
				t.Fatalf("commit %s on main answers no update", h)
			}
			c, err := r.store.ReadCommit(h)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("write %d\n", i); c.Message != want {
				t.Errorf("commit of update %d has message %q, want %q", i, c.Message, want)
			}
			changed, err := r.store.ChangedPaths(t.Context(), c.Parents[0].String(), h.String())
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("f%02d.txt", i); !slices.Equal(changed, []string{want}) {
				t.Errorf("commit of update %d changes %v, want [%s]", i, changed, want)
			}
		}
		for i := range n {
			if got := readFile(t, r, r.heads[mainBranch], fmt.Sprintf("f%02d.txt", i)); got != fmt.Sprint(i) {
				t.Errorf("f%02d.txt = %q at the head", i, got)
			}
		}
	})
}

// TestGroupAppliesInOrder: an update is applied on the commit the update
// before it in the group made, so its precondition sees that change.
func TestGroupAppliesInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, e, release, first := behindFirst(t)
		a := start(t.Context(), e, r, &source.UpdateRequest{Message: "a\n", Apply: writing("a.txt", "changed by a\n")})
		synctest.Wait()
		errStale := errors.New("a.txt is not as read")
		b := start(t.Context(), e, r, &source.UpdateRequest{Message: "b\n", Apply: func(_ context.Context, base *source.Snapshot, w source.Writer) error {
			data, err := fs.ReadFile(base.FS, "a.txt")
			if err != nil || string(data) != "a\n" {
				return errStale // as an If-Match on the initial a.txt
			}
			return w.WriteFile("a.txt", []byte("changed by b\n"), 0o644)
		}})
		synctest.Wait()
		release()
		if o := <-first; o.err != nil {
			t.Fatal(o.err)
		}
		if o := <-a; o.err != nil || o.res.Commit == "" {
			t.Fatalf("a = %+v, %v", o.res, o.err)
		}
		if o := <-b; !errors.Is(o.err, errStale) {
			t.Fatalf("b = %+v, %v; want its precondition to fail on a's commit", o.res, o.err)
		}
		if got := readFile(t, r, r.heads[mainBranch], "a.txt"); got != "changed by a\n" {
			t.Fatalf("a.txt = %q", got)
		}
	})
}

// TestGroupApplyPanics: an update whose Apply panics in the committer
// fails with the panic, and the updates of its group land.
func TestGroupApplyPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, e, release, first := behindFirst(t)
		a := start(t.Context(), e, r, &source.UpdateRequest{Message: "a\n", Apply: func(context.Context, *source.Snapshot, source.Writer) error {
			panic("controller bug")
		}})
		synctest.Wait()
		b := start(t.Context(), e, r, &source.UpdateRequest{Message: "b\n", Apply: writing("b.txt", "b\n")})
		synctest.Wait()
		release()
		if o := <-first; o.err != nil {
			t.Fatal(o.err)
		}
		if o := <-a; o.err == nil || !strings.Contains(o.err.Error(), "panic while applying the update: controller bug") {
			t.Fatalf("a = %+v, %v; want the panic as its error", o.res, o.err)
		}
		if o := <-b; o.err != nil {
			t.Fatalf("b = %+v, %v", o.res, o.err)
		}
		if got := readFile(t, r, r.heads[mainBranch], "b.txt"); got != "b\n" {
			t.Fatalf("b.txt = %q", got)
		}
	})
}

// TestGroupSwapFails: when a group's swap fails, every update applied on
// a commit of the group fails with it, and nothing moves; an update that
// failed on the branch's head keeps its own error.
func TestGroupSwapFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, e, release, first := behindFirst(t)
		errOwn := errors.New("bad request")
		own := start(t.Context(), e, r, &source.UpdateRequest{Message: "own\n", Apply: func(context.Context, *source.Snapshot, source.Writer) error { return errOwn }})
		synctest.Wait()
		b := start(t.Context(), e, r, &source.UpdateRequest{Message: "b\n", Apply: writing("b.txt", "b")})
		synctest.Wait()
		unchanged := start(t.Context(), e, r, &source.UpdateRequest{Message: "c\n", Apply: writing("b.txt", "b")})
		synctest.Wait()
		swaps := 0
		r.override = func(writes.Swap) error {
			if swaps++; swaps == 2 {
				return fmt.Errorf("%w: the remote hung up", source.ErrUnavailable)
			}
			return nil
		}
		release()
		if o := <-first; o.err != nil {
			t.Fatal(o.err)
		}
		head := r.heads[mainBranch]
		if o := <-own; !errors.Is(o.err, errOwn) {
			t.Fatalf("update failing on the head = %v, want its own error", o.err)
		}
		for name, ch := range map[string]<-chan outcome{"b": b, "unchanged on b's commit": unchanged} {
			if o := <-ch; !errors.Is(o.err, source.ErrUnavailable) {
				t.Errorf("%s = %+v, %v; want the swap's error", name, o.res, o.err)
			}
		}
		if r.heads[mainBranch] != head {
			t.Fatal("main moved")
		}
	})
}

// TestGroupAppliedAgainWhenMoved: a group that loses to another writer is
// applied again, whole, on the new head.
func TestGroupAppliedAgainWhenMoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, e, release, first := behindFirst(t)
		var calls [2]int
		var outs [2]<-chan outcome
		for i := range 2 {
			outs[i] = start(t.Context(), e, r, &source.UpdateRequest{Message: fmt.Sprintf("u%d\n", i), Apply: func(_ context.Context, _ *source.Snapshot, w source.Writer) error {
				calls[i]++
				return w.WriteFile(fmt.Sprintf("u%d.txt", i), []byte("u"), 0o644)
			}})
			synctest.Wait()
		}
		theirs := plumbing.ZeroHash
		r.override = func(u writes.Swap) error {
			if len(u.Links()) == 2 && theirs.IsZero() {
				// Another writer moves main to a commit of its own.
				c, err := r.store.ReadCommit(u.Old)
				if err != nil {
					return err
				}
				sig := source.Signature{Name: "o", Email: "o@localhost", When: time.Unix(1700000100, 0).UTC()}
				theirs, err = r.store.WriteCommit(&gitfs.Commit{Tree: c.Tree, Parents: []plumbing.Hash{u.Old}, Author: sig, Committer: sig, Message: "theirs\n"})
				if err != nil {
					return err
				}
				r.heads[mainBranch] = theirs
				return fmt.Errorf("%w: main", writes.ErrMoved)
			}
			return nil
		}
		release()
		<-first
		for i, ch := range outs {
			if o := <-ch; o.err != nil {
				t.Fatalf("u%d: %v", i, o.err)
			}
		}
		if calls != [2]int{2, 2} {
			t.Fatalf("Apply ran %v times, want twice each", calls)
		}
		hist := history(t, r)
		if len(hist) != 4 || hist[2] != theirs {
			t.Fatalf("history %v: want both updates on top of the other writer's %s", hist, theirs)
		}
	})
}

// TestGroupSameKeyReplays: an update repeated with the same key while the
// first is in the same group answers with the first's commit.
func TestGroupSameKeyReplays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, e, release, first := behindFirst(t)
		req := func() *source.UpdateRequest {
			return &source.UpdateRequest{Message: "keyed\n", IdempotencyKey: "k-1", Fingerprint: "fp", Apply: writing("k.txt", "k")}
		}
		a := start(t.Context(), e, r, req())
		synctest.Wait()
		b := start(t.Context(), e, r, req())
		synctest.Wait()
		release()
		<-first
		oa, ob := <-a, <-b
		if oa.err != nil || ob.err != nil || !ob.res.Replayed || ob.res.Commit != oa.res.Commit || oa.res.Replayed {
			t.Fatalf("a = %+v, %v; b = %+v, %v; want b to replay a", oa.res, oa.err, ob.res, ob.err)
		}
		if hist := history(t, r); len(hist) != 2 {
			t.Fatalf("%d commits, want 2", len(hist))
		}
	})
}

// TestGroupWithdrawn: an update whose caller leaves while it waits in the
// queue is never applied.
func TestGroupWithdrawn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, e, release, first := behindFirst(t)
		ctx, cancel := context.WithCancel(t.Context())
		applied := false
		gone := start(ctx, e, r, &source.UpdateRequest{Message: "gone\n", Apply: func(context.Context, *source.Snapshot, source.Writer) error {
			applied = true
			return nil
		}})
		synctest.Wait()
		cancel()
		if o := <-gone; !errors.Is(o.err, context.Canceled) {
			t.Fatalf("withdrawn update = %v", o.err)
		}
		release()
		if o := <-first; o.err != nil {
			t.Fatal(o.err)
		}
		if applied || e.Queued(mainBranch) != 0 {
			t.Fatalf("applied %v, %d still queued", applied, e.Queued(mainBranch))
		}
	})
}

// TestGroupMaxAndWait: GroupMax bounds a group, and GroupWait holds a
// group open for more updates.
func TestGroupMaxAndWait(t *testing.T) {
	t.Run("max 1", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRefs(t)
			e := engine(t, func(c *writes.Config) { c.GroupMax = 1 })
			release := held(r)
			var outs []<-chan outcome
			for i := range 4 {
				outs = append(outs, start(t.Context(), e, r, &source.UpdateRequest{Message: "m\n", Apply: writing(fmt.Sprint(i), "x")}))
				synctest.Wait()
			}
			release()
			for _, ch := range outs {
				if o := <-ch; o.err != nil {
					t.Fatal(o.err)
				}
			}
			if !slices.Equal(r.groups, []int{1, 1, 1, 1}) {
				t.Fatalf("swaps published %v commits, want one each", r.groups)
			}
		})
	})
	t.Run("wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRefs(t)
			e := engine(t, func(c *writes.Config) { c.GroupMax, c.GroupWait = 3, 50*time.Millisecond })
			begin := time.Now()
			var outs []<-chan outcome
			for i := range 5 {
				outs = append(outs, start(t.Context(), e, r, &source.UpdateRequest{Message: "m\n", Apply: writing(fmt.Sprint(i), "x")}))
			}
			for _, ch := range outs {
				if o := <-ch; o.err != nil {
					t.Fatal(o.err)
				}
			}
			// 5 updates at once: a full group of 3 at once, then the
			// other 2 after the wait.
			if !slices.Equal(r.groups, []int{3, 2}) || time.Since(begin) != 50*time.Millisecond {
				t.Fatalf("swaps published %v commits after %v, want [3 2] after 50ms", r.groups, time.Since(begin))
			}
		})
	})
}

func TestGroupConfig(t *testing.T) {
	for _, c := range []struct {
		max  int
		wait time.Duration
	}{{0, 0}, {1, -time.Millisecond}, {1, 2 * time.Second}} {
		cfg := writes.DefaultConfig()
		writes.WithGroup(c.max, c.wait)(&cfg)
		if _, err := writes.New(cfg); err == nil || !strings.Contains(err.Error(), "write group") {
			t.Errorf("group %d, wait %v: err = %v", c.max, c.wait, err)
		}
	}
}

// TestGroupContext: a group's swap runs until the last of its callers'
// deadlines, not the first's.
func TestGroupContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, e, release, first := behindFirst(t)
		short, cancelShort := context.WithTimeout(t.Context(), time.Second)
		long, cancelLong := context.WithTimeout(t.Context(), time.Minute)
		defer cancelLong()
		wantDeadline, _ := long.Deadline()
		a := start(short, e, r, &source.UpdateRequest{Message: "a\n", Apply: writing("a.txt", "a")})
		synctest.Wait()
		b := start(long, e, r, &source.UpdateRequest{Message: "b\n", Apply: writing("b.txt", "b")})
		synctest.Wait()
		var (
			swapDeadline time.Time
			hasDeadline  bool
			swapErr      error
		)
		r.gate = func(writes.Swap) {}
		r.ctxSeen = func(ctx context.Context) {
			swapDeadline, hasDeadline = ctx.Deadline()
			swapErr = ctx.Err()
		}
		defer cancelShort()
		release()
		<-first
		oa, ob := <-a, <-b
		if ob.err != nil || oa.err != nil {
			t.Fatalf("a: %v, b: %v", oa.err, ob.err)
		}
		if !hasDeadline || !swapDeadline.Equal(wantDeadline) || swapErr != nil {
			t.Fatalf("the group's swap ran with deadline %v (%v), err %v; want b's, %v", swapDeadline, hasDeadline, swapErr, wantDeadline)
		}
	})
}
