package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cup-dev/cup/internal/changeset"
	"github.com/cup-dev/cup/source"
)

// Tests of write modes, change sets and idempotency keys.

const appV3 = "name: app\nreplicas: 3\n"

// appV3Diff is the diff of changing config/app.yaml from appV2 to appV3.
const appV3Diff = "--- a/config/app.yaml\n+++ b/config/app.yaml\n@@ -1,2 +1,2 @@\n name: app\n-replicas: 2\n+replicas: 3\n"

// openMode returns a new source over the fixture's repository in mode,
// with change-set prefix prefix, skipping the test when the harness cannot
// make one.
func (f *fixture) openMode(t *testing.T, mode source.WriteMode, prefix string) source.Source {
	t.Helper()
	if f.h.OpenMode == nil {
		t.Skip("sourcetest: Harness.OpenMode is nil, so write modes and change sets cannot be tested")
	}
	if f.h.Proposals && mode != source.ModeBranch {
		t.Skipf("sourcetest: the harness writes in proposal mode, and this test needs a source in %s mode", mode)
	}
	return f.h.OpenMode(t, f.dir, mode, prefix)
}

// syncSource lets src see commits made directly to the repository or
// through other sources.
func (f *fixture) syncSource(t *testing.T, src source.Source) {
	t.Helper()
	if f.h.Sync != nil {
		f.h.Sync(t, src)
	}
}

// branches returns the branches of the repository whose names start with
// prefix, by short name, with the commits they hold.
func (f *fixture) branches(t *testing.T, prefix string) map[string]string {
	t.Helper()
	out, err := f.repo.Branches(prefix)
	must(t, err)
	return out
}

// commitKeyed commits files ("" content removes) to branch behind the
// source's back with a
// message that records an idempotency key, as an update whose caller
// never saw the answer would have left it.
func (f *fixture) commitKeyed(branch, key, fingerprint string, files map[string]string) (string, error) {
	m := make(map[string][]byte, len(files))
	for p, d := range files {
		if d != "" { // "" removes
			m[p] = []byte(d)
		} else {
			m[p] = nil
		}
	}
	return f.repo.Commit(branch, m, changeset.Message("landed elsewhere\n", changeset.Trailers{IdempotencyKey: key, Fingerprint: fingerprint}))
}

func (f *fixture) updateOn(t *testing.T, src source.Source, req *source.UpdateRequest) *source.UpdateResult {
	t.Helper()
	res, err := src.Update(t.Context(), req)
	if err != nil {
		t.Fatalf("Update(revision %q, change set %q, key %q): %v", req.Revision, req.ChangeSet, req.IdempotencyKey, err)
	}
	f.checkProposal(t, req, res)
	return res
}

// checkHeads fails t unless each branch holds the given commit.
func (f *fixture) checkHeads(t *testing.T, want map[string]string) {
	t.Helper()
	for branch, c := range want {
		if head := f.head(t, branch); head != c {
			t.Errorf("%s = %s, want %s", branch, head, c)
		}
	}
}

func testBranchModeCreatesChangeSet(t *testing.T, f *fixture) {
	src := f.openMode(t, source.ModeBranch, "cup/")
	res := f.updateOn(t, src, &source.UpdateRequest{Message: "scale\n", Apply: writes(map[string]string{appPath: appV3})})
	if !strings.HasPrefix(res.Branch, "cup/") || !changeset.IsChangeSet("cup/", res.Branch) {
		t.Fatalf("Branch = %q, want a change set cup/<id>", res.Branch)
	}
	want := []source.FileChange{{Path: appPath, Op: source.OpUpdate, Diff: appV3Diff}}
	if res.Unchanged || res.Replayed || res.Base != f.c2 || res.Commit == "" || !slices.Equal(res.Changes, want) {
		t.Fatalf("result = %+v, want a commit over %s changing %s", res, f.c2, appPath)
	}
	f.checkHeads(t, map[string]string{"main": f.c2, "dev": f.dev, res.Branch: res.Commit})
	log, err := f.repo.Log(res.Branch)
	must(t, err)
	if len(log) != 3 || !slices.Equal(log[0].Parents, []string{f.c2}) || log[0].Message != "scale\n" {
		t.Fatalf("history of %s: %+v", res.Branch, log)
	}
	snap, err := src.View(t.Context(), res.Branch)
	must(t, err)
	if snap.Commit != res.Commit || readFile(t, snap.FS, appPath) != appV3 {
		t.Fatalf("View(%q) = %s, want %s with the change", res.Branch, snap.Commit, res.Commit)
	}
	snap, err = src.View(t.Context(), "")
	must(t, err)
	if snap.Commit != f.c2 {
		t.Fatalf("View of the default branch = %s, want it unmoved at %s", snap.Commit, f.c2)
	}

	// From another branch, and another prefix.
	other := f.openMode(t, source.ModeBranch, "proposals/")
	res2 := f.updateOn(t, other, &source.UpdateRequest{Revision: "dev", Message: "on dev", Apply: writes(map[string]string{"dev.txt": "more\n"})})
	if !changeset.IsChangeSet("proposals/", res2.Branch) || res2.Base != f.dev {
		t.Fatalf("result = %+v, want a change set proposals/<id> over %s", res2, f.dev)
	}
	f.checkHeads(t, map[string]string{"main": f.c2, "dev": f.dev, res2.Branch: res2.Commit})
	if got := f.branches(t, "cup/"); len(got) != 1 {
		t.Fatalf("change sets cup/*: %v, want just %s", got, res.Branch)
	}
}

func testBranchModeWritesNothingForNothing(t *testing.T, f *fixture) {
	src := f.openMode(t, source.ModeBranch, "cup/")
	dry := f.updateOn(t, src, &source.UpdateRequest{DryRun: true, Message: "dry", Apply: writes(map[string]string{appPath: appV3})})
	want := []source.FileChange{{Path: appPath, Op: source.OpUpdate, Diff: appV3Diff}}
	if dry.Branch != "" || dry.Commit != "" || dry.Base != f.c2 || !slices.Equal(dry.Changes, want) {
		t.Fatalf("dry run = %+v, want the changes over %s and no branch", dry, f.c2)
	}
	same := f.updateOn(t, src, &source.UpdateRequest{Message: "same", Apply: writes(map[string]string{appPath: appV2})})
	if !same.Unchanged || same.Branch != "" || same.Commit != "" {
		t.Fatalf("unchanged update = %+v, want no branch", same)
	}
	if got := f.branches(t, "cup/"); len(got) != 0 {
		t.Fatalf("change sets made by updates that wrote nothing: %v", got)
	}
	f.checkHeads(t, map[string]string{"main": f.c2})
}

func testChangeSetAddsCommits(t *testing.T, f *fixture) {
	src := f.openMode(t, source.ModeBranch, "cup/")
	first := f.updateOn(t, src, &source.UpdateRequest{Message: "one", Apply: writes(map[string]string{appPath: appV3})})
	cs := first.Branch
	second := f.updateOn(t, src, &source.UpdateRequest{
		Revision:  "dev", // ignored
		ChangeSet: cs,
		Message:   "two",
		Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			if got, err := readString(base.FS, appPath); got != appV3 {
				return fmt.Errorf("the change set's base reads %q, %v; want the first change", got, err)
			}
			return w.Remove(dbPath)
		},
	})
	if second.Branch != cs || second.Base != first.Commit || second.Commit == "" || second.Replayed {
		t.Fatalf("update of %s = %+v, want a commit over %s", cs, second, first.Commit)
	}
	f.checkHeads(t, map[string]string{"main": f.c2, "dev": f.dev, cs: second.Commit})

	// Whatever the source's mode.
	direct := f.openMode(t, source.ModeDirect, "cup/")
	f.syncSource(t, direct)
	dry := f.updateOn(t, direct, &source.UpdateRequest{ChangeSet: cs, DryRun: true, Message: "dry", Apply: writes(map[string]string{"x.txt": "x\n"})})
	if dry.Branch != cs || dry.Base != second.Commit || dry.Commit != "" {
		t.Fatalf("dry run on %s = %+v, want it over %s", cs, dry, second.Commit)
	}
	third := f.updateOn(t, direct, &source.UpdateRequest{ChangeSet: cs, Message: "three", Apply: writes(map[string]string{"x.txt": "x\n"})})
	if third.Branch != cs || third.Base != second.Commit {
		t.Fatalf("update of %s through a direct-mode source = %+v, want a commit over %s", cs, third, second.Commit)
	}
	f.checkHeads(t, map[string]string{"main": f.c2, cs: third.Commit})

	f.syncSource(t, src)
	snap, err := src.View(t.Context(), cs)
	must(t, err)
	if snap.Commit != third.Commit || readFile(t, snap.FS, appPath) != appV3 || readFile(t, snap.FS, "x.txt") != "x\n" {
		t.Fatalf("View(%q) = %s, want %s with every change", cs, snap.Commit, third.Commit)
	}
	if _, err := fs.Stat(snap.FS, dbPath); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("View(%q): Stat(%s) err = %v, want it removed", cs, dbPath, err)
	}
	if got := f.branches(t, "cup/"); len(got) != 1 {
		t.Fatalf("change sets: %v, want just %s", got, cs)
	}
}

func testChangeSetNotFound(t *testing.T, f *fixture) {
	src := f.openMode(t, source.ModeBranch, "cup/")
	must(t, f.repo.Branch("proposals/abc", f.c2))
	f.syncSource(t, src)
	for _, cs := range []string{
		"cup/nope", "main", "dev", "v1", "proposals/abc", "cup/", "cup", "refs/heads/main",
		"cup/a..b", "cup/x y", "cup/x\n", "cup/../main",
	} {
		called := false
		_, err := src.Update(t.Context(), &source.UpdateRequest{
			ChangeSet: cs,
			Message:   "nope",
			Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
				called = true
				return w.WriteFile("x", []byte("x"), 0o644)
			},
		})
		if !errors.Is(err, source.ErrChangeSetNotFound) {
			t.Errorf("Update(change set %q) err = %v, want ErrChangeSetNotFound", cs, err)
		}
		if called {
			t.Errorf("Update(change set %q) called Apply", cs)
		}
	}
	f.checkHeads(t, map[string]string{"main": f.c2, "dev": f.dev, "proposals/abc": f.c2})
	if got := f.branches(t, "cup/"); len(got) != 0 {
		t.Fatalf("change sets made: %v", got)
	}
}

func testBranchModeConcurrent(t *testing.T, f *fixture) {
	src := f.openMode(t, source.ModeBranch, "cup/")
	const n = 8
	var wg sync.WaitGroup
	results := make([]*source.UpdateResult, n)
	for i := range n {
		wg.Go(func() {
			res, err := src.Update(t.Context(), &source.UpdateRequest{
				Message: fmt.Sprintf("writer %d\n", i),
				Apply:   writes(map[string]string{"file.txt": fmt.Sprint(i)}),
			})
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
				return
			}
			results[i] = res
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	got := f.branches(t, "cup/")
	if len(got) != n {
		t.Fatalf("%d writers made change sets %v, want %d", n, got, n)
	}
	for i, res := range results {
		if got[res.Branch] != res.Commit || res.Base != f.c2 {
			t.Errorf("writer %d: %+v; %s holds %s", i, res, res.Branch, got[res.Branch])
		}
	}
	f.checkHeads(t, map[string]string{"main": f.c2})
}

// keyed returns a request with an idempotency key that changes app.yaml.
func keyed(key, fingerprint string) *source.UpdateRequest {
	return &source.UpdateRequest{
		Message:        "scale\n",
		IdempotencyKey: key,
		Fingerprint:    fingerprint,
		Apply:          writes(map[string]string{appPath: appV3}),
	}
}

// checkReplay fails t unless res repeats first.
func checkReplay(t *testing.T, res, first *source.UpdateResult) {
	t.Helper()
	if !res.Replayed || res.Unchanged || res.Commit != first.Commit || res.Base != first.Base ||
		res.Branch != first.Branch || !slices.Equal(res.Changes, first.Changes) {
		t.Fatalf("repeat = %+v\nwant the result of the first update with Replayed: %+v", res, first)
	}
}

func testIdempotentDirect(t *testing.T, f *fixture) {
	first := update(t, f, keyed("order-1", "fp-1"))
	if first.Replayed || first.Branch != "main" || first.Base != f.c2 || first.Commit == "" {
		t.Fatalf("first update = %+v", first)
	}
	log, err := f.repo.Log("main")
	must(t, err)
	msg := log[0].Message
	if !strings.HasPrefix(msg, "scale\n") {
		t.Fatalf("message %q does not start with the request's", msg)
	}
	for name, want := range map[string]string{source.TrailerIdempotencyKey: "order-1", source.TrailerRequest: "fp-1"} {
		if got, ok := changeset.Trailer(msg, name); got != want || !ok {
			t.Fatalf("message %q: trailer %s = %q, %v; want %q", msg, name, got, ok, want)
		}
	}

	checkReplay(t, update(t, f, keyed("order-1", "fp-1")), first)
	f.checkHeads(t, map[string]string{"main": first.Commit})
	// A dry run computes the change as usual and reports no commit.
	dry := keyed("order-1", "fp-1")
	dry.DryRun = true
	if res := update(t, f, dry); res.Replayed || res.Commit != "" || res.Base != first.Commit {
		t.Fatalf("dry run with a used key = %+v, want it computed over %s", res, first.Commit)
	}

	// Still recognised once other commits landed on top.
	c := f.external(t, "main", map[string]string{"external.txt": "ext\n"})
	f.sync(t)
	checkReplay(t, update(t, f, keyed("order-1", "fp-1")), first)
	f.checkHeads(t, map[string]string{"main": c})

	// A key is not recognised on another branch.
	other := keyed("order-1", "fp-1")
	other.Revision = "dev"
	if res := update(t, f, other); res.Replayed || res.Branch != "dev" || res.Base != f.dev {
		t.Fatalf("update of dev with a key used on main = %+v, want a new commit on dev", res)
	}
}

func testIdempotencyKeyReused(t *testing.T, f *fixture) {
	first := update(t, f, keyed("order-1", "fp-1"))
	for _, fp := range []string{"fp-2", ""} {
		called := false
		req := keyed("order-1", fp)
		req.Apply = func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			called = true
			return w.WriteFile("other.txt", []byte("other"), 0o644)
		}
		if _, err := f.src.Update(t.Context(), req); !errors.Is(err, source.ErrIdempotencyKeyReused) {
			t.Errorf("Update with a used key and fingerprint %q: err = %v, want ErrIdempotencyKeyReused", fp, err)
		}
		if called {
			t.Errorf("Update with a used key and fingerprint %q called Apply", fp)
		}
	}
	f.checkHeads(t, map[string]string{"main": first.Commit})
}

func testIdempotentBranchMode(t *testing.T, f *fixture) {
	src := f.openMode(t, source.ModeBranch, "cup/")
	first := f.updateOn(t, src, keyed("order-1", "fp-1"))
	if first.Branch != changeset.BranchName("cup/", "order-1") || first.Replayed || first.Base != f.c2 {
		t.Fatalf("first update = %+v, want change set %s over %s", first, changeset.BranchName("cup/", "order-1"), f.c2)
	}
	checkReplay(t, f.updateOn(t, src, keyed("order-1", "fp-1")), first)
	if got := f.branches(t, "cup/"); len(got) != 1 || got[first.Branch] != first.Commit {
		t.Fatalf("change sets: %v, want just %s at %s", got, first.Branch, first.Commit)
	}

	// Still recognised once the change set has more commits.
	more := f.updateOn(t, src, &source.UpdateRequest{ChangeSet: first.Branch, Message: "more", Apply: writes(map[string]string{"more.txt": "more\n"})})
	checkReplay(t, f.updateOn(t, src, keyed("order-1", "fp-1")), first)
	if _, err := src.Update(t.Context(), keyed("order-1", "fp-2")); !errors.Is(err, source.ErrIdempotencyKeyReused) {
		t.Fatalf("Update with a used key and another fingerprint: err = %v, want ErrIdempotencyKeyReused", err)
	}

	// Keyed updates of a change set.
	onCS := keyed("order-2", "fp-2")
	onCS.ChangeSet = first.Branch
	onCS.Apply = writes(map[string]string{"cs.txt": "cs\n"})
	second := f.updateOn(t, src, onCS)
	if second.Branch != first.Branch || second.Base != more.Commit || second.Replayed {
		t.Fatalf("keyed update of %s = %+v, want a commit over %s", first.Branch, second, more.Commit)
	}
	checkReplay(t, f.updateOn(t, src, onCS), second)
	f.checkHeads(t, map[string]string{"main": f.c2, first.Branch: second.Commit})
	if got := f.branches(t, "cup/"); len(got) != 1 {
		t.Fatalf("change sets: %v, want just %s", got, first.Branch)
	}
}

func testIdempotentBranchModeConcurrent(t *testing.T, f *fixture) {
	src := f.openMode(t, source.ModeBranch, "cup/")
	const n = 8
	var (
		wg       sync.WaitGroup
		replayed atomic.Int32
	)
	results := make([]*source.UpdateResult, n)
	for i := range n {
		wg.Go(func() {
			res, err := src.Update(t.Context(), keyed("order-1", "fp-1"))
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
				return
			}
			if res.Replayed {
				replayed.Add(1)
			}
			results[i] = res
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if replayed.Load() != n-1 {
		t.Fatalf("%d of %d updates with one key were replays, want all but one", replayed.Load(), n)
	}
	for i, res := range results {
		if res.Branch != results[0].Branch || res.Commit != results[0].Commit {
			t.Errorf("writer %d: %+v, want %s at %s", i, res, results[0].Branch, results[0].Commit)
		}
	}
	if got := f.branches(t, "cup/"); len(got) != 1 {
		t.Fatalf("change sets: %v, want one", got)
	}
}

func testIdempotentKeyLandedElsewhere(t *testing.T, f *fixture) {
	// The first attempt committed, but its caller never saw the answer.
	landed, err := f.commitKeyed("main", "order-1", "fp-1", map[string]string{appPath: appV3, "NEW.md": ""})
	must(t, err)
	f.sync(t)
	res := update(t, f, keyed("order-1", "fp-1"))
	want := &source.UpdateResult{
		Branch: "main",
		Base:   f.c2,
		Commit: landed,
		Changes: []source.FileChange{
			{Path: "NEW.md", Op: source.OpDelete, Diff: "--- a/NEW.md\n+++ b/NEW.md\n@@ -1 +0,0 @@\n-new\n"},
			{Path: appPath, Op: source.OpUpdate, Diff: appV3Diff},
		},
	}
	checkReplay(t, res, want)
	f.checkHeads(t, map[string]string{"main": landed})

	// A source that never saw the first update recognises it too.
	fresh := f.h.Open(t, f.dir)
	checkReplay(t, f.updateOn(t, fresh, keyed("order-1", "fp-1")), want)
	if _, err := fresh.Update(t.Context(), keyed("order-1", "fp-2")); !errors.Is(err, source.ErrIdempotencyKeyReused) {
		t.Fatalf("Update with a used key and another fingerprint: err = %v, want ErrIdempotencyKeyReused", err)
	}
	f.checkHeads(t, map[string]string{"main": landed})
}

func testIdempotentKeyLandsDuringUpdate(t *testing.T, f *fixture) {
	var (
		calls  atomic.Int32
		landed atomic.Value
	)
	req := keyed("order-1", "fp-1")
	req.Apply = func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
		if calls.Add(1) == 1 {
			// Another process makes the same update meanwhile.
			c, err := f.commitKeyed("main", "order-1", "fp-1", map[string]string{appPath: appV3})
			if err != nil {
				return err
			}
			landed.Store(c)
		}
		return w.WriteFile(appPath, []byte(appV3), 0o644)
	}
	res := update(t, f, req)
	c, _ := landed.Load().(string)
	if !res.Replayed || res.Commit != c || res.Base != f.c2 {
		t.Fatalf("result = %+v, want a replay of %s, which landed during the update", res, c)
	}
	f.checkHeads(t, map[string]string{"main": c})
}

func testIdempotentUnchanged(t *testing.T, f *fixture) {
	req := keyed("order-1", "fp-1")
	req.Apply = writes(map[string]string{appPath: appV2})
	for i := range 2 {
		res := update(t, f, req)
		if !res.Unchanged || res.Replayed || res.Commit != "" {
			t.Fatalf("update %d = %+v, want unchanged", i+1, res)
		}
	}
	f.checkHeads(t, map[string]string{"main": f.c2})
	if f.h.OpenMode == nil {
		return
	}
	src := f.openMode(t, source.ModeBranch, "cup/")
	for i := range 2 {
		res := f.updateOn(t, src, req)
		if !res.Unchanged || res.Replayed || res.Commit != "" || res.Branch != "" {
			t.Fatalf("update %d in branch mode = %+v, want unchanged", i+1, res)
		}
	}
	if got := f.branches(t, "cup/"); len(got) != 0 {
		t.Fatalf("change sets made by updates that changed nothing: %v", got)
	}
}

func testIdempotencyKeyInvalid(t *testing.T, f *fixture) {
	for _, key := range []string{"with space", "new\nline", "tab\tkey", "ünïcode", strings.Repeat("k", 129)} {
		called := false
		req := keyed(key, "fp")
		req.Apply = func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			called = true
			return w.WriteFile("x", []byte("x"), 0o644)
		}
		if _, err := f.src.Update(t.Context(), req); err == nil || called {
			t.Errorf("Update with key %q: err = %v, Apply called: %v; want an error before Apply", key, err, called)
		}
	}
	f.checkHeads(t, map[string]string{"main": f.c2})
}

func testIdempotentBranchTaken(t *testing.T, f *fixture) {
	src := f.openMode(t, source.ModeBranch, "cup/")
	// A branch of the name the key gives, made by something else.
	name := changeset.BranchName("cup/", "order-1")
	must(t, f.repo.Branch(name, f.c2))
	f.syncSource(t, src)
	if _, err := src.Update(t.Context(), keyed("order-1", "fp-1")); !errors.Is(err, source.ErrIdempotencyKeyReused) {
		t.Fatalf("Update with a key whose change set exists without it: err = %v, want ErrIdempotencyKeyReused", err)
	}
	f.checkHeads(t, map[string]string{"main": f.c2, name: f.c2})
}
