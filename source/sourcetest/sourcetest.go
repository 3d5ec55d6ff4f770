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
	"context"
	"io/fs"
	"maps"
	"slices"
	"testing"

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
		{"History", testHistory, false},
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
