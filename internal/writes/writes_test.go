package writes_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/writes"
	"github.com/cup-dev/cup/source"
)

// refs is an in-memory RefStore over a store, with hooks.
type refs struct {
	store *gitfs.Store

	mu       sync.Mutex
	heads    map[string]plumbing.Hash
	swaps    []string // branches of the swaps asked for
	syncs    int
	refuse   string                    // branch CheckWritable refuses
	override func(u writes.Swap) error // runs before a swap; an error fails it
	gate     func(u writes.Swap)       // runs before a swap takes the lock
	groups   []int                     // the commits each swap asked for published
	ctxSeen  func(ctx context.Context) // sees each swap's context
}

func newRefs(t *testing.T) *refs {
	t.Helper()
	r := &refs{store: gitfs.NewStore(memory.NewStorage()), heads: map[string]plumbing.Hash{}}
	tree, err := r.store.BuildTree(t.Context(), plumbing.ZeroHash,
		[]gitfs.Change{{Path: "a.txt", Op: source.OpCreate, Mode: filemode.Regular, Data: []byte("a\n")}})
	if err != nil {
		t.Fatal(err)
	}
	sig := source.Signature{Name: "t", Email: "t@localhost", When: time.Unix(1700000000, 0).UTC()}
	c, err := r.store.WriteCommit(&gitfs.Commit{Tree: tree, Author: sig, Committer: sig, Message: "initial\n"})
	if err != nil {
		t.Fatal(err)
	}
	r.heads["refs/heads/main"] = c
	return r
}

func (r *refs) Resolve(_ context.Context, rev string) (writes.Ref, error) {
	name := rev
	if rev == "" {
		name = "refs/heads/main"
	}
	r.mu.Lock()
	h, ok := r.heads[name]
	r.mu.Unlock()
	if !ok {
		return writes.Ref{}, fmt.Errorf("%w: %q", source.ErrRevisionNotFound, rev)
	}
	c, err := r.store.ReadCommit(h)
	if err != nil {
		return writes.Ref{}, err
	}
	return writes.Ref{Commit: h, Tree: c.Tree, Branch: name}, nil
}

func (r *refs) CompareAndSwap(ctx context.Context, u writes.Swap) error {
	if r.ctxSeen != nil {
		r.ctxSeen(ctx)
	}
	if r.gate != nil {
		r.gate(u)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.swaps = append(r.swaps, u.Branch)
	r.groups = append(r.groups, len(u.Links()))
	if r.override != nil {
		if err := r.override(u); err != nil {
			return err
		}
	}
	if r.heads[u.Branch] != u.Old {
		return fmt.Errorf("%w: %s", writes.ErrMoved, u.Branch)
	}
	r.heads[u.Branch] = u.New
	return nil
}

func (r *refs) Sync(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.syncs++
	return nil
}

func (r *refs) CheckWritable(branch string) error {
	if branch == r.refuse {
		return fmt.Errorf("%w: %s is checked out", source.ErrNotWritable, branch)
	}
	return nil
}

// counting returns an ApplyFunc writing b.txt and a count of its calls.
func counting() (source.ApplyFunc, *int) {
	n := new(int)
	return func(_ context.Context, _ *source.Snapshot, w source.Writer) error {
		*n++
		return w.WriteFile("b.txt", []byte(fmt.Sprintf("b%d\n", *n)), 0o644)
	}, n
}

func engine(t *testing.T, mutate func(*writes.Config)) *writes.Engine {
	t.Helper()
	cfg := writes.DefaultConfig()
	cfg.MaxRetries = 2
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := writes.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestNewChecksConfig(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		mutate func(*writes.Config)
	}{
		{"empty author", func(c *writes.Config) { c.AuthorName = "\n" }},
		{"negative retries", func(c *writes.Config) { c.MaxRetries = -1 }},
		{"nil clock", func(c *writes.Config) { c.Clock = nil }},
		{"unknown mode", func(c *writes.Config) { c.Mode = 9 }},
		{"bad prefix", func(c *writes.Config) { c.BranchPrefix = "cup.." }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := writes.DefaultConfig()
			tt.mutate(&cfg)
			if _, err := writes.New(cfg); err == nil {
				t.Fatal("New accepted the configuration")
			}
		})
	}
}

func TestMovedBranchIsRetriedThenConflicts(t *testing.T) {
	t.Parallel()
	r := newRefs(t)
	moves := 0
	r.override = func(u writes.Swap) error {
		moves++
		r.heads["refs/heads/main"] = u.New // another writer got there first
		return fmt.Errorf("%w: main", writes.ErrMoved)
	}
	apply, calls := counting()
	_, err := engine(t, nil).Update(t.Context(), r, r.store, &source.UpdateRequest{Message: "m", Apply: apply})
	if !errors.Is(err, source.ErrConflict) {
		t.Fatalf("Update err = %v, want ErrConflict", err)
	}
	if *calls != 3 || moves != 3 {
		t.Fatalf("Apply ran %d times, %d swaps; want 3 of each (MaxRetries 2)", *calls, moves)
	}
}

func TestTakenRandomNameIsNotAppliedAgain(t *testing.T) {
	t.Parallel()
	r := newRefs(t)
	taken := 0
	r.override = func(u writes.Swap) error {
		if taken < 3 {
			taken++
			return fmt.Errorf("%w: %s exists", writes.ErrMoved, u.Branch)
		}
		return nil
	}
	apply, calls := counting()
	res, err := engine(t, func(c *writes.Config) { c.Mode = source.ModeBranch }).
		Update(t.Context(), r, r.store, &source.UpdateRequest{Message: "m", Apply: apply})
	if err != nil {
		t.Fatal(err)
	}
	if *calls != 1 || len(r.swaps) != 4 || "refs/heads/"+res.Branch != r.swaps[3] || !strings.HasPrefix(res.Branch, "cup/") {
		t.Fatalf("Apply ran %d times, swaps %v, result %+v; want one Apply and the fourth name", *calls, r.swaps, res)
	}
	if r.heads["refs/heads/main"] == r.heads["refs/heads/"+res.Branch] {
		t.Fatal("main moved in branch mode")
	}
}

func TestKeyedUpdateSyncsAndReplays(t *testing.T) {
	t.Parallel()
	r := newRefs(t)
	e := engine(t, nil)
	apply, calls := counting()
	req := &source.UpdateRequest{Message: "m", IdempotencyKey: "k-1", Fingerprint: "fp", Apply: apply}
	first, err := e.Update(t.Context(), r, r.store, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.Update(t.Context(), r, r.store, req)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.Commit != first.Commit || *calls != 1 {
		t.Fatalf("repeat = %+v after %+v, Apply ran %d times; want a replay", again, first, *calls)
	}
	dry := *req
	dry.DryRun = true
	if _, err := e.Update(t.Context(), r, r.store, &dry); err != nil {
		t.Fatal(err)
	}
	plain := &source.UpdateRequest{Message: "m", Apply: apply}
	if _, err := e.Update(t.Context(), r, r.store, plain); err != nil {
		t.Fatal(err)
	}
	if r.syncs != 2 {
		t.Fatalf("Sync ran %d times, want once per keyed update that writes (2)", r.syncs)
	}
}

func TestWritableCheckerInDirectModeOnly(t *testing.T) {
	t.Parallel()
	r := newRefs(t)
	r.refuse = "refs/heads/main"
	apply, calls := counting()
	req := &source.UpdateRequest{Message: "m", Apply: apply}
	if _, err := engine(t, nil).Update(t.Context(), r, r.store, req); !errors.Is(err, source.ErrNotWritable) || *calls != 0 {
		t.Fatalf("direct update of a refused branch: err = %v, Apply ran %d times", err, *calls)
	}
	res, err := engine(t, func(c *writes.Config) { c.Mode = source.ModeBranch }).Update(t.Context(), r, r.store, req)
	if err != nil || res.Branch == "main" {
		t.Fatalf("branch-mode update from a refused branch = %+v, %v; want a change set", res, err)
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	now := func() time.Time { return time.Unix(1, 0) }
	cfg := writes.DefaultConfig()
	for _, o := range []writes.Option{
		writes.WithMode(source.ModeBranch), writes.WithBranchPrefix("p/"), writes.WithAuthor("a", "a@x"),
		writes.WithMaxRetries(2), writes.WithLogger(nil), writes.WithClock(now),
	} {
		o(&cfg)
	}
	e, err := writes.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := e.Config()
	if got.Mode != source.ModeBranch || got.BranchPrefix != "p/" || got.AuthorName != "a" || got.AuthorEmail != "a@x" ||
		got.MaxRetries != 2 || got.Logger == nil || !got.Clock().Equal(now()) || got.Signer != nil {
		t.Errorf("config = %+v", got)
	}
}
