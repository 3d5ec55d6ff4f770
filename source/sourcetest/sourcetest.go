// Package sourcetest is the conformance suite for [source.Source]
// implementations.
//
// Each implementation runs the suite from its own tests:
//
//	func TestConformance(t *testing.T) {
//		open := func(t *testing.T, dir string, opts ...mysource.Option) source.Source {
//			src, err := mysource.Open(dir, opts...)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return src
//		}
//		sourcetest.Run(t, sourcetest.Harness{
//			Open: func(t *testing.T, dir string) source.Source { return open(t, dir) },
//			OpenMode: func(t *testing.T, dir string, mode source.WriteMode, prefix string) source.Source {
//				return open(t, dir, mysource.WithWriteMode(mode), mysource.WithBranchPrefix(prefix))
//			},
//		})
//	}
//
// Wrappers that write in proposal mode, such as internal/proposals.Manager,
// run the suite with Harness.Proposals set: the suite then checks that
// every write that commits names its proposal, and skips the tests that
// need direct writes.
//
// Every test starts from a fresh bare repository on local disk, made with
// internal/gitrepo (or, with Harness.Repo, from a repository of the
// harness's own, such as one in memory), and asks the harness for a source
// over it. The suite
// changes that repository directly to play another writer, so a source over
// a remote repository implements the harness by serving the directory (over
// smart HTTP on 127.0.0.1, say) and returning a source over the served
// repository; its out-of-band commits then land upstream, as another
// user's push would.
//
// The repository of each test holds, on its default branch "main":
//
//	c1 "initial":  README.md, config/app.yaml, config/db.yaml, docs/guide/intro.md
//	c2 "second":   config/app.yaml changed, NEW.md added
//
// with a lightweight tag "v1" and an annotated tag "v1-annotated" at c1, and a
// branch "dev" holding one more commit on top of c1 (adding dev.txt).
package sourcetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/source"
)

// Harness adapts one Source implementation to the suite.
type Harness struct {
	// Open returns a new source over the bare repository at dir, whose HEAD
	// names the default branch. The source must retry conflicting updates at
	// least twice. Required.
	Open func(t *testing.T, dir string) source.Source
	// Sync, when not nil, makes src see commits made to its repository
	// directly (a source over a clone fetches). Sources that see such
	// commits at once, such as local, leave it nil; the suite then checks
	// that they do.
	Sync func(t *testing.T, src source.Source)
	// OpenMode, when not nil, returns a new source over the bare
	// repository at dir that writes in mode and names change sets with
	// prefix. Without it the tests of write modes and change sets are
	// skipped; those of idempotency keys in direct mode use Open.
	OpenMode func(t *testing.T, dir string, mode source.WriteMode, prefix string) source.Source
	// Repo, when not nil, returns the empty repository each test builds its
	// fixture in, plays other writers through and reads back what sources
	// wrote, in place of the bare repository on disk at dir: for sources
	// that keep their repository elsewhere, such as in memory. Open and
	// OpenMode are then given the same dir, to find that repository by.
	Repo func(t *testing.T, dir string) Repo

	// Proposals says that the harness's sources write in proposal mode:
	// wrappers (such as internal/proposals.Manager) over a source in
	// source.ModeBranch, which answer every write that commits with the
	// proposal that reviews its change set (UpdateResult.Proposal). Open
	// then returns such a source with the change-set prefix
	// source.DefaultBranchPrefix, OpenMode is only asked for
	// source.ModeBranch, and the tests that need a source writing in
	// source.ModeDirect are skipped.
	Proposals bool
}

// Run runs the conformance suite as parallel subtests of t.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Open == nil {
		t.Fatal("sourcetest: Harness.Open is nil")
	}
	// direct marks the tests whose source Open must write in
	// source.ModeDirect.
	const direct = true
	tests := []struct {
		name   string
		run    func(t *testing.T, f *fixture)
		direct bool
	}{
		{"ViewRevisions", testViewRevisions, false},
		{"ViewPassesTestFS", testViewPassesTestFS, false},
		{"ViewNotFound", testViewNotFound, false},
		{"ViewInvalid", testViewInvalid, false},
		{"ViewSeesExternalCommit", testViewSeesExternalCommit, false},
		{"SnapshotsAreImmutable", testSnapshotsAreImmutable, false},
		{"UpdateCreateModifyDelete", testUpdateCreateModifyDelete, direct},
		{"UpdateDropsEmptyDirectories", testUpdateDropsEmptyDirectories, false},
		{"UpdateOtherBranch", testUpdateOtherBranch, direct},
		{"UpdateAuthor", testUpdateAuthor, false},
		{"UpdateUnchanged", testUpdateUnchanged, direct},
		{"UpdateDryRun", testUpdateDryRun, direct},
		{"UpdateNotWritable", testUpdateNotWritable, false},
		{"UpdateApplyError", testUpdateApplyError, false},
		{"UpdateHostilePaths", testUpdateHostilePaths, false},
		{"UpdateWriterSeesWrites", testUpdateWriterSeesWrites, false},
		{"UpdateCanceled", testUpdateCanceled, false},
		{"UpdateConcurrent", testUpdateConcurrent, direct},
		{"UpdateAfterExternalCommit", testUpdateAfterExternalCommit, direct},
		{"UpdateRetriesWhenBranchMoves", testUpdateRetriesWhenBranchMoves, direct},
		{"UpdateConflict", testUpdateConflict, direct},
		{"BranchModeCreatesChangeSet", testBranchModeCreatesChangeSet, false},
		{"BranchModeWritesNothingForNothing", testBranchModeWritesNothingForNothing, false},
		{"BranchModeConcurrent", testBranchModeConcurrent, false},
		{"ChangeSetAddsCommits", testChangeSetAddsCommits, false},
		{"ChangeSetNotFound", testChangeSetNotFound, false},
		{"IdempotentDirect", testIdempotentDirect, direct},
		{"IdempotencyKeyReused", testIdempotencyKeyReused, direct},
		{"IdempotencyKeyInvalid", testIdempotencyKeyInvalid, false},
		{"IdempotentUnchanged", testIdempotentUnchanged, false},
		{"IdempotentKeyLandedElsewhere", testIdempotentKeyLandedElsewhere, direct},
		{"IdempotentKeyLandsDuringUpdate", testIdempotentKeyLandsDuringUpdate, direct},
		{"IdempotentBranchMode", testIdempotentBranchMode, false},
		{"IdempotentBranchModeConcurrent", testIdempotentBranchModeConcurrent, false},
		{"IdempotentBranchTaken", testIdempotentBranchTaken, false},
		{"ForgedKeyNotReplayed", testForgedKeyNotReplayed, direct},
		{"MessageRefused", testMessageRefused, false},
		{"ChangeSetOwner", testChangeSetOwner, false},
		{"KeyIsTheRequesters", testKeyIsTheRequesters, false},
		{"ProposalPerChangeSet", testProposalPerChangeSet, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.direct && h.Proposals {
				t.Skip("sourcetest: the harness writes in proposal mode, and this test needs direct writes")
			}
			tt.run(t, newFixture(t, h))
		})
	}
}

// Contents of the fixture repository.
const (
	readme     = "# demo\n"
	appV1      = "name: app\nreplicas: 1\n"
	appV2      = "name: app\nreplicas: 2\n"
	dbYAML     = "name: db\n"
	intro      = "intro\n"
	newMD      = "new\n"
	devTxt     = "dev\n"
	appPath    = "config/app.yaml"
	dbPath     = "config/db.yaml"
	introPath  = "docs/guide/intro.md"
	readmePath = "README.md"
)

// fixture is one test's repository and a source over it.
type fixture struct {
	h    Harness
	dir  string
	repo Repo
	src  source.Source
	// c1 and c2 are the commits of main, dev the head of dev.
	c1, c2, dev string
}

func newFixture(t *testing.T, h Harness) *fixture {
	t.Helper()
	f := &fixture{h: h, dir: t.TempDir()}
	f.repo = diskRepo(f.dir)
	if h.Repo != nil {
		f.repo = h.Repo(t, f.dir)
	}
	var err error
	f.c1, err = f.repo.Init("main", map[string][]byte{
		readmePath: []byte(readme),
		appPath:    []byte(appV1),
		dbPath:     []byte(dbYAML),
		introPath:  []byte(intro),
	}, "initial\n")
	must(t, err)
	_, err = f.repo.Tag("v1", f.c1, "")
	must(t, err)
	_, err = f.repo.Tag("v1-annotated", f.c1, "release 1\n")
	must(t, err)
	must(t, f.repo.Branch("dev", f.c1))
	f.dev, err = f.repo.Commit("dev", map[string][]byte{"dev.txt": []byte(devTxt)}, "dev work\n")
	must(t, err)
	f.c2, err = f.repo.Commit("main", map[string][]byte{appPath: []byte(appV2), "NEW.md": []byte(newMD)}, "second\n")
	must(t, err)
	f.src = h.Open(t, f.dir)
	return f
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// sync lets the source see commits made directly to the repository.
func (f *fixture) sync(t *testing.T) {
	if f.h.Sync != nil {
		f.h.Sync(t, f.src)
	}
}

// head returns the commit branch holds in the repository.
func (f *fixture) head(t *testing.T, branch string) string {
	t.Helper()
	c, err := f.repo.Resolve("refs/heads/" + branch)
	must(t, err)
	return c
}

// external commits files to branch behind the source's back.
func (f *fixture) external(t testing.TB, branch string, files map[string]string) string {
	t.Helper()
	c, err := f.commitExternal(branch, files)
	must(t, err)
	return c
}

// commitExternal is external for use inside an ApplyFunc, which may run on
// another goroutine than the test.
func (f *fixture) commitExternal(branch string, files map[string]string) (string, error) {
	m := make(map[string][]byte, len(files))
	for p, d := range files {
		m[p] = []byte(d)
	}
	return f.repo.Commit(branch, m, "external\n")
}

// readString reads a file, for use inside an ApplyFunc.
func readString(fsys fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(fsys, name)
	return string(b), err
}

func readFile(t *testing.T, fsys fs.FS, name string) string {
	t.Helper()
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

func update(t *testing.T, f *fixture, req *source.UpdateRequest) *source.UpdateResult {
	t.Helper()
	res, err := f.src.Update(t.Context(), req)
	if err != nil {
		t.Fatalf("Update(%q): %v", req.Revision, err)
	}
	f.checkProposal(t, req, res)
	return res
}

// checkProposal fails t when a source in proposal mode answers a write
// that committed (or replayed a commit) without naming its proposal, and
// when any other source names one.
func (f *fixture) checkProposal(t *testing.T, req *source.UpdateRequest, res *source.UpdateResult) {
	t.Helper()
	committed := res.Commit != "" && !req.DryRun
	switch {
	case f.h.Proposals && committed && (res.Proposal == nil || res.Proposal.ID == ""):
		t.Errorf("Update in proposal mode = %+v, committed on %s without naming a proposal", res, res.Branch)
	case f.h.Proposals && !committed && res.Proposal != nil:
		t.Errorf("Update in proposal mode = %+v, names proposal %+v for a write that committed nothing", res, res.Proposal)
	case !f.h.Proposals && res.Proposal != nil:
		t.Errorf("Update = %+v names a proposal, but the harness is not in proposal mode", res)
	}
}

// writes returns an ApplyFunc that writes files ("" content removes).
func writes(files map[string]string) source.ApplyFunc {
	return func(_ context.Context, _ *source.Snapshot, w source.Writer) error {
		for _, p := range slices.Sorted(maps.Keys(files)) {
			var err error
			if files[p] == "" {
				err = w.Remove(p)
			} else {
				err = w.WriteFile(p, []byte(files[p]), 0o644)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
}

func testViewRevisions(t *testing.T, f *fixture) {
	tests := []struct {
		rev      string
		commit   string
		app      string
		hasNewMD bool
	}{
		{rev: "", commit: f.c2, app: appV2, hasNewMD: true},
		{rev: "main", commit: f.c2, app: appV2, hasNewMD: true},
		{rev: "refs/heads/main", commit: f.c2, app: appV2, hasNewMD: true},
		{rev: "dev", commit: f.dev, app: appV1},
		{rev: "v1", commit: f.c1, app: appV1},
		{rev: "refs/tags/v1", commit: f.c1, app: appV1},
		{rev: "v1-annotated", commit: f.c1, app: appV1},
		{rev: f.c1, commit: f.c1, app: appV1},
		{rev: f.c2, commit: f.c2, app: appV2, hasNewMD: true},
	}
	for _, tt := range tests {
		snap, err := f.src.View(t.Context(), tt.rev)
		if err != nil {
			t.Errorf("View(%q): %v", tt.rev, err)
			continue
		}
		if snap.Revision != tt.rev || snap.Commit != tt.commit {
			t.Errorf("View(%q) = revision %q commit %s, want %q %s", tt.rev, snap.Revision, snap.Commit, tt.rev, tt.commit)
		}
		if got := readFile(t, snap.FS, appPath); got != tt.app {
			t.Errorf("View(%q): %s = %q, want %q", tt.rev, appPath, got, tt.app)
		}
		if _, err := fs.Stat(snap.FS, "NEW.md"); (err == nil) != tt.hasNewMD {
			t.Errorf("View(%q): Stat(NEW.md) err = %v, want the file present: %v", tt.rev, err, tt.hasNewMD)
		}
	}
}

func testViewPassesTestFS(t *testing.T, f *fixture) {
	for _, rev := range []string{"main", "v1", "dev"} {
		snap, err := f.src.View(t.Context(), rev)
		must(t, err)
		want := []string{readmePath, appPath, dbPath, introPath}
		if rev == "main" {
			want = append(want, "NEW.md")
		}
		if err := fstest.TestFS(snap.FS, want...); err != nil {
			t.Errorf("View(%q): %v", rev, err)
		}
		for _, iface := range []struct {
			name string
			ok   bool
		}{
			{"fs.ReadFileFS", implements[fs.ReadFileFS](snap.FS)},
			{"fs.ReadDirFS", implements[fs.ReadDirFS](snap.FS)},
			{"fs.StatFS", implements[fs.StatFS](snap.FS)},
		} {
			if !iface.ok {
				t.Errorf("snapshot FS does not implement %s", iface.name)
			}
		}
	}
}

func implements[T any](v any) bool {
	_, ok := v.(T)
	return ok
}

func testViewNotFound(t *testing.T, f *fixture) {
	for _, rev := range []string{
		"nope", "refs/heads/nope", "refs/tags/nope", "feature/nope",
		strings.Repeat("0123456789", 4),
	} {
		if _, err := f.src.View(t.Context(), rev); !errors.Is(err, source.ErrRevisionNotFound) {
			t.Errorf("View(%q) err = %v, want ErrRevisionNotFound", rev, err)
		}
	}
}

func testViewInvalid(t *testing.T, f *fixture) {
	for _, rev := range []string{
		"main..dev", "-rf", "main\x00", "main\nx", "ma\tin", "ma in", "main@{1}",
		"../../etc/passwd", "/abs", "a//b", strings.Repeat("a", 5000),
	} {
		if _, err := f.src.View(t.Context(), rev); !errors.Is(err, source.ErrInvalidRevision) {
			t.Errorf("View(%q) err = %v, want ErrInvalidRevision", rev, err)
		}
	}
}

func testViewSeesExternalCommit(t *testing.T, f *fixture) {
	// Read first, so that whatever the source caches is warm.
	snap, err := f.src.View(t.Context(), "")
	must(t, err)
	if snap.Commit != f.c2 {
		t.Fatalf("View = %s, want %s", snap.Commit, f.c2)
	}
	c3 := f.external(t, "main", map[string]string{"external.txt": "ext\n"})
	f.sync(t)
	for _, rev := range []string{"", "main"} {
		snap, err := f.src.View(t.Context(), rev)
		must(t, err)
		if snap.Commit != c3 {
			t.Fatalf("View(%q) after an external commit = %s, want %s", rev, snap.Commit, c3)
		}
		if got := readFile(t, snap.FS, "external.txt"); got != "ext\n" {
			t.Fatalf("external.txt = %q", got)
		}
	}
}

func testSnapshotsAreImmutable(t *testing.T, f *fixture) {
	before, err := f.src.View(t.Context(), "main")
	must(t, err)
	update(t, f, &source.UpdateRequest{Message: "change", Apply: writes(map[string]string{appPath: "changed\n", readmePath: ""})})
	if got := readFile(t, before.FS, appPath); got != appV2 {
		t.Fatalf("old snapshot reads %q after an update, want %q", got, appV2)
	}
	if got := readFile(t, before.FS, readmePath); got != readme {
		t.Fatalf("old snapshot reads %q after an update, want %q", got, readme)
	}
}

func testUpdateCreateModifyDelete(t *testing.T, f *fixture) {
	res := update(t, f, &source.UpdateRequest{
		Revision: "main",
		Message:  "change config\n",
		Apply: writes(map[string]string{
			"config/cache.yaml": "name: cache\n",
			appPath:             "name: app\nreplicas: 3\n",
			dbPath:              "",
			introPath:           intro, // the same content: no change
		}),
	})
	want := []source.FileChange{
		{Path: appPath, Op: source.OpUpdate, Diff: "--- a/config/app.yaml\n+++ b/config/app.yaml\n@@ -1,2 +1,2 @@\n name: app\n-replicas: 2\n+replicas: 3\n"},
		{Path: "config/cache.yaml", Op: source.OpCreate, Diff: "--- a/config/cache.yaml\n+++ b/config/cache.yaml\n@@ -0,0 +1 @@\n+name: cache\n"},
		{Path: dbPath, Op: source.OpDelete, Diff: "--- a/config/db.yaml\n+++ b/config/db.yaml\n@@ -1 +0,0 @@\n-name: db\n"},
	}
	if res.Unchanged || res.Branch != "main" || res.Base != f.c2 || res.Commit == "" || res.Commit == f.c2 {
		t.Fatalf("result = %+v, want a new commit on main over %s", res, f.c2)
	}
	if !slices.Equal(res.Changes, want) {
		t.Fatalf("changes:\n got %+v\nwant %+v", res.Changes, want)
	}
	if head := f.head(t, "main"); head != res.Commit {
		t.Fatalf("main = %s, want %s", head, res.Commit)
	}
	log, err := f.repo.Log("main")
	must(t, err)
	if len(log) != 3 || log[0].ID != res.Commit || !slices.Equal(log[0].Parents, []string{f.c2}) || log[0].Message != "change config\n" {
		t.Fatalf("history: %+v", log)
	}
	files, err := f.repo.Files("main")
	must(t, err)
	wantFiles := map[string]string{
		readmePath: readme, appPath: "name: app\nreplicas: 3\n", "config/cache.yaml": "name: cache\n",
		introPath: intro, "NEW.md": newMD,
	}
	if len(files) != len(wantFiles) {
		t.Fatalf("files at head: %v", slices.Sorted(maps.Keys(files)))
	}
	for p, d := range wantFiles {
		if string(files[p]) != d {
			t.Errorf("%s = %q, want %q", p, files[p], d)
		}
	}
	snap, err := f.src.View(t.Context(), "")
	must(t, err)
	if snap.Commit != res.Commit {
		t.Fatalf("View after update = %s, want %s", snap.Commit, res.Commit)
	}
	if got := readFile(t, snap.FS, appPath); got != "name: app\nreplicas: 3\n" {
		t.Fatalf("View after update reads %q", got)
	}
}

func testUpdateDropsEmptyDirectories(t *testing.T, f *fixture) {
	res := update(t, f, &source.UpdateRequest{Message: "rm docs", Apply: writes(map[string]string{introPath: ""})})
	snap, err := f.src.View(t.Context(), res.Commit)
	must(t, err)
	if _, err := fs.Stat(snap.FS, "docs"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat(docs) err = %v after removing its only file, want ErrNotExist", err)
	}
	if err := fstest.TestFS(snap.FS, readmePath, appPath, dbPath, "NEW.md"); err != nil {
		t.Fatal(err)
	}
}

func testUpdateOtherBranch(t *testing.T, f *fixture) {
	for _, rev := range []string{"dev", "refs/heads/dev"} {
		before := f.head(t, "dev")
		res := update(t, f, &source.UpdateRequest{Revision: rev, Message: "on dev", Apply: writes(map[string]string{"dev.txt": rev})})
		if res.Branch != "dev" || res.Base != before || f.head(t, "dev") != res.Commit {
			t.Fatalf("Update(%q) = %+v; dev at %s", rev, res, f.head(t, "dev"))
		}
	}
	if head := f.head(t, "main"); head != f.c2 {
		t.Fatalf("main moved to %s by updates of dev", head)
	}
}

func testUpdateAuthor(t *testing.T, f *fixture) {
	res := update(t, f, &source.UpdateRequest{
		Message: "by alice",
		Author:  &source.Signature{Name: "Alice", Email: "alice@example.com"},
		Apply:   writes(map[string]string{"alice.txt": "a"}),
	})
	log, err := f.repo.Log(res.Commit)
	must(t, err)
	if a := log[0].Author; a.Name != "Alice" || a.Email != "alice@example.com" {
		t.Fatalf("author = %+v, want Alice <alice@example.com>", a)
	}
}

func testUpdateUnchanged(t *testing.T, f *fixture) {
	tests := []struct {
		name   string
		dryRun bool
		apply  source.ApplyFunc
	}{
		{name: "no writes", apply: writes(nil)},
		{name: "no writes, dry run", dryRun: true, apply: writes(nil)},
		{name: "same content", apply: writes(map[string]string{appPath: appV2, readmePath: readme})},
		{name: "write then remove", apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			if err := w.WriteFile("tmp/new.txt", []byte("x"), 0o644); err != nil {
				return err
			}
			return w.Remove("tmp/new.txt")
		}},
		{name: "remove then write back", apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			if err := w.Remove(readmePath); err != nil {
				return err
			}
			return w.WriteFile(readmePath, []byte(readme), 0o644)
		}},
		{name: "modify then restore", apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			if err := w.WriteFile(appPath, []byte("other"), 0o644); err != nil {
				return err
			}
			return w.WriteFile(appPath, []byte(appV2), 0o644)
		}},
	}
	for _, tt := range tests {
		res := update(t, f, &source.UpdateRequest{Message: tt.name, DryRun: tt.dryRun, Apply: tt.apply})
		if !res.Unchanged || res.Commit != "" || len(res.Changes) != 0 || res.Base != f.c2 || res.Branch != "main" {
			t.Errorf("%s: result = %+v, want unchanged over %s", tt.name, res, f.c2)
		}
	}
	if head := f.head(t, "main"); head != f.c2 {
		t.Fatalf("main moved to %s by updates that changed nothing", head)
	}
}

func testUpdateDryRun(t *testing.T, f *fixture) {
	res := update(t, f, &source.UpdateRequest{
		DryRun:  true,
		Message: "dry",
		Apply:   writes(map[string]string{readmePath: "# demo\nmore\n", "added.txt": "added\n"}),
	})
	want := []source.FileChange{
		{Path: readmePath, Op: source.OpUpdate, Diff: "--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n # demo\n+more\n"},
		{Path: "added.txt", Op: source.OpCreate, Diff: "--- a/added.txt\n+++ b/added.txt\n@@ -0,0 +1 @@\n+added\n"},
	}
	if res.Unchanged || res.Commit != "" || res.Base != f.c2 || res.Branch != "main" || !slices.Equal(res.Changes, want) {
		t.Fatalf("dry run result = %+v\nwant changes %+v", res, want)
	}
	if head := f.head(t, "main"); head != f.c2 {
		t.Fatalf("main moved to %s by a dry run", head)
	}
	snap, err := f.src.View(t.Context(), "main")
	must(t, err)
	if _, err := fs.Stat(snap.FS, "added.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("dry run wrote added.txt: %v", err)
	}
}

func testUpdateNotWritable(t *testing.T, f *fixture) {
	tests := []struct {
		rev  string
		want error
	}{
		{"v1", source.ErrNotWritable},
		{"refs/tags/v1", source.ErrNotWritable},
		{"v1-annotated", source.ErrNotWritable},
		{f.c2, source.ErrNotWritable},
		{"main~1", source.ErrNotWritable},
		{"nope", source.ErrRevisionNotFound},
		{"refs/heads/nope", source.ErrRevisionNotFound},
		{"main..dev", source.ErrInvalidRevision},
		{"-x", source.ErrInvalidRevision},
	}
	for _, tt := range tests {
		called := false
		_, err := f.src.Update(t.Context(), &source.UpdateRequest{
			Revision: tt.rev,
			Message:  "nope",
			Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
				called = true
				return w.WriteFile("x", []byte("x"), 0o644)
			},
		})
		if !errors.Is(err, tt.want) {
			t.Errorf("Update(%q) err = %v, want %v", tt.rev, err, tt.want)
		}
		if called {
			t.Errorf("Update(%q) called Apply", tt.rev)
		}
	}
	for branch, want := range map[string]string{"main": f.c2, "dev": f.dev} {
		if head := f.head(t, branch); head != want {
			t.Errorf("%s moved to %s", branch, head)
		}
	}
}

// applyError is an error type Apply returns, to check errors.As.
type applyError struct{ code int }

func (e *applyError) Error() string { return fmt.Sprintf("apply failed with %d", e.code) }

func testUpdateApplyError(t *testing.T, f *fixture) {
	sentinel := errors.New("controller says no")
	for _, applyErr := range []error{sentinel, &applyError{code: 42}, fmt.Errorf("wrapped: %w", fs.ErrPermission)} {
		_, err := f.src.Update(t.Context(), &source.UpdateRequest{
			Message: "fails",
			Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
				if err := w.WriteFile("partial.txt", []byte("half"), 0o644); err != nil {
					return err
				}
				return applyErr
			},
		})
		if err != applyErr {
			t.Errorf("Update err = %v (%T), want Apply's error %v unchanged", err, err, applyErr)
		}
	}
	if head := f.head(t, "main"); head != f.c2 {
		t.Fatalf("main moved to %s by failed updates", head)
	}
}

func testUpdateHostilePaths(t *testing.T, f *fixture) {
	hostile := []string{
		"", ".", "/abs", "/etc/passwd", "../x", "../../outside", "a/../b", "a/./b", "a//b", "dir/",
		"x\x00y", `a\b`, ".git/config", ".git/hooks/pre-commit", "config/app.yaml/x", "config",
	}
	var mu sync.Mutex
	var failures []string
	res := update(t, f, &source.UpdateRequest{
		Message: "hostile",
		Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range hostile {
				if err := w.WriteFile(p, []byte("evil"), 0o644); !errors.Is(err, source.ErrInvalidPath) {
					failures = append(failures, fmt.Sprintf("WriteFile(%q) err = %v, want ErrInvalidPath", p, err))
				}
				if err := w.Remove(p); !errors.Is(err, source.ErrInvalidPath) && !errors.Is(err, fs.ErrNotExist) {
					failures = append(failures, fmt.Sprintf("Remove(%q) err = %v, want ErrInvalidPath or ErrNotExist", p, err))
				}
			}
			if err := w.Remove("missing.txt"); !errors.Is(err, fs.ErrNotExist) {
				failures = append(failures, fmt.Sprintf("Remove(missing.txt) err = %v, want ErrNotExist", err))
			}
			return nil
		},
	})
	for _, msg := range failures {
		t.Error(msg)
	}
	if !res.Unchanged {
		t.Fatalf("rejected writes changed the tree: %+v", res)
	}
	// An Apply that passes the error on aborts the update.
	_, err := f.src.Update(t.Context(), &source.UpdateRequest{
		Message: "hostile",
		Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			return w.WriteFile("../escape", []byte("evil"), 0o644)
		},
	})
	if !errors.Is(err, source.ErrInvalidPath) {
		t.Fatalf("Update err = %v, want ErrInvalidPath", err)
	}
	if head := f.head(t, "main"); head != f.c2 {
		t.Fatalf("main moved to %s", head)
	}
}

func testUpdateWriterSeesWrites(t *testing.T, f *fixture) {
	update(t, f, &source.UpdateRequest{
		Message: "reads",
		Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			for _, err := range []error{
				w.WriteFile("config/new.yaml", []byte("new: true\n"), 0o644),
				w.WriteFile(appPath, []byte("rewritten\n"), 0o644),
				w.Remove(dbPath),
				w.Remove(introPath),
			} {
				if err != nil {
					return err
				}
			}
			if got, err := readString(w, appPath); got != "rewritten\n" {
				t.Errorf("read after write = %q, %v", got, err)
			}
			if got, err := readString(base.FS, appPath); got != appV2 {
				t.Errorf("base reads %q, %v after a write, want %q", got, err, appV2)
			}
			entries, err := fs.ReadDir(w, "config")
			if err != nil {
				return err
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if got := strings.Join(names, " "); got != "app.yaml new.yaml" {
				t.Errorf("ReadDir(config) = %q, want %q", got, "app.yaml new.yaml")
			}
			if _, err := fs.Stat(w, "docs"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Stat(docs) err = %v after removing its only file, want ErrNotExist", err)
			}
			if err := fstest.TestFS(w, readmePath, appPath, "config/new.yaml", "NEW.md"); err != nil {
				t.Error(err)
			}
			return nil
		},
	})
}

func testUpdateCanceled(t *testing.T, f *fixture) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := f.src.Update(ctx, &source.UpdateRequest{Message: "canceled", Apply: writes(map[string]string{"x": "x"})})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Update err = %v, want context.Canceled", err)
	}
	// Canceled while applying.
	ctx, cancel = context.WithCancel(t.Context())
	_, err = f.src.Update(ctx, &source.UpdateRequest{
		Message: "canceled",
		Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			cancel()
			return w.WriteFile("x", []byte("x"), 0o644)
		},
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Update err = %v, want context.Canceled", err)
	}
	if head := f.head(t, "main"); head != f.c2 {
		t.Fatalf("main moved to %s by canceled updates", head)
	}
}

func testUpdateConcurrent(t *testing.T, f *fixture) {
	const n = 20
	var wg sync.WaitGroup
	commits := make([]string, n)
	for i := range n {
		wg.Go(func() {
			res, err := f.src.Update(t.Context(), &source.UpdateRequest{
				Message: fmt.Sprintf("writer %d\n", i),
				Apply:   writes(map[string]string{fmt.Sprintf("concurrent/file-%02d.txt", i): fmt.Sprint(i)}),
			})
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
				return
			}
			commits[i] = res.Commit
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	log, err := f.repo.Log("main")
	must(t, err)
	if len(log) != n+2 {
		t.Fatalf("main has %d commits, want %d", len(log), n+2)
	}
	seen := make(map[string]bool)
	for i, c := range log[:n] {
		if len(c.Parents) != 1 || c.Parents[0] != log[i+1].ID {
			t.Fatalf("history is not linear at %s: parents %v", c.ID, c.Parents)
		}
		seen[c.ID] = true
	}
	for i, c := range commits {
		if !seen[c] {
			t.Errorf("commit %s of writer %d is not on main", c, i)
		}
	}
	files, err := f.repo.Files("main")
	must(t, err)
	for i := range n {
		if p := fmt.Sprintf("concurrent/file-%02d.txt", i); string(files[p]) != fmt.Sprint(i) {
			t.Errorf("%s = %q, want %q", p, files[p], fmt.Sprint(i))
		}
	}
}

func testUpdateAfterExternalCommit(t *testing.T, f *fixture) {
	snap, err := f.src.View(t.Context(), "main")
	must(t, err)
	if snap.Commit != f.c2 {
		t.Fatalf("View = %s, want %s", snap.Commit, f.c2)
	}
	c3 := f.external(t, "main", map[string]string{"external.txt": "ext\n"})
	var base *source.Snapshot
	res := update(t, f, &source.UpdateRequest{
		Revision: "main",
		Message:  "mine",
		Apply: func(ctx context.Context, b *source.Snapshot, w source.Writer) error {
			base = b
			return w.WriteFile("mine.txt", []byte("mine\n"), 0o644)
		},
	})
	if res.Base != c3 || base.Commit != c3 {
		t.Fatalf("update applied on %s (Apply saw %s), want the external commit %s", res.Base, base.Commit, c3)
	}
	files, err := f.repo.Files("main")
	must(t, err)
	if string(files["external.txt"]) != "ext\n" || string(files["mine.txt"]) != "mine\n" {
		t.Fatalf("head lost a change: external.txt=%q mine.txt=%q", files["external.txt"], files["mine.txt"])
	}
}

func testUpdateRetriesWhenBranchMoves(t *testing.T, f *fixture) {
	var (
		calls    atomic.Int32
		mu       sync.Mutex
		bases    []string
		external string
	)
	res := update(t, f, &source.UpdateRequest{
		Message: "counted",
		Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			mu.Lock()
			bases = append(bases, base.Commit)
			mu.Unlock()
			if calls.Add(1) == 1 {
				// Another writer commits while this change is being made.
				var err error
				if external, err = f.commitExternal("main", map[string]string{"external.txt": "ext\n"}); err != nil {
					return err
				}
			}
			// Derive the write from the base, as ApplyFunc must.
			entries, err := fs.ReadDir(base.FS, ".")
			if err != nil {
				return err
			}
			if got, err := readString(base.FS, appPath); got != appV2 {
				return fmt.Errorf("base reads %q, %v", got, err)
			}
			return w.WriteFile("count.txt", []byte(fmt.Sprint(len(entries))), 0o644)
		},
	})
	if calls.Load() < 2 {
		t.Fatalf("Apply called %d times, want it applied again on the moved branch", calls.Load())
	}
	if bases[0] != f.c2 || bases[len(bases)-1] != external {
		t.Fatalf("Apply saw bases %v, want %s first and %s last", bases, f.c2, external)
	}
	if res.Base != external {
		t.Fatalf("result base %s, want %s", res.Base, external)
	}
	log, err := f.repo.Log("main")
	must(t, err)
	if log[0].ID != res.Commit || log[1].ID != external {
		t.Fatalf("history: %s then %s, want %s then %s", log[0].ID, log[1].ID, res.Commit, external)
	}
	files, err := f.repo.Files("main")
	must(t, err)
	// README.md, NEW.md, config, docs and external.txt.
	if string(files["count.txt"]) != "5" || string(files["external.txt"]) != "ext\n" {
		t.Fatalf("count.txt=%q external.txt=%q", files["count.txt"], files["external.txt"])
	}
}

func testUpdateConflict(t *testing.T, f *fixture) {
	var (
		calls atomic.Int32
		last  atomic.Value
	)
	_, err := f.src.Update(t.Context(), &source.UpdateRequest{
		Message: "always loses",
		Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			n := calls.Add(1)
			c, err := f.commitExternal("main", map[string]string{"external.txt": fmt.Sprint(n)})
			if err != nil {
				return err
			}
			last.Store(c)
			return w.WriteFile("mine.txt", []byte("mine"), 0o644)
		},
	})
	if !errors.Is(err, source.ErrConflict) {
		t.Fatalf("Update err = %v, want ErrConflict", err)
	}
	if calls.Load() < 3 {
		t.Fatalf("Apply called %d times, want at least 3 (two retries)", calls.Load())
	}
	if head := f.head(t, "main"); head != last.Load().(string) {
		t.Fatalf("main = %s, want the last external commit %s", head, last.Load())
	}
	files, err := f.repo.Files("main")
	must(t, err)
	if _, ok := files["mine.txt"]; ok {
		t.Fatal("the conflicting change was written")
	}
	if !bytes.Equal(files["external.txt"], []byte(fmt.Sprint(calls.Load()))) {
		t.Fatalf("external.txt = %q, want %d", files["external.txt"], calls.Load())
	}
}
