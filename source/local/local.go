// Package local is a [source.Source] over a Git repository on disk.
//
// The repository may be bare or not; only its Git directory is used, and
// the working tree and index of a non-bare repository are never read or
// written. Reads come from commits, never from files on disk, and updates
// write objects and move branches the way git does, so the git command and
// other programs can work on the same repository at the same time:
//
//   - Every View resolves its revision afresh. References are cached and
//     revalidated with a stat of their files, so resolving a branch costs a
//     few microseconds, yet a commit made behind the source's back (by git
//     commit, git push or another cup) is seen by the very next View.
//   - An update builds the new tree from the old one, replacing only the
//     trees along the changed paths, writes the commit as loose objects (a
//     group of commits as one pack) and moves the branch with Git's lock
//     file and a compare-and-swap. If the branch moved meanwhile, the
//     change is applied again on the new head.
//   - Once there are more loose objects than the repository's gc.auto
//     (git's default, 6,700, when it sets none; 0 turns this off), the
//     source moves them into a pack and removes them, as git gc --auto
//     would after git commit: nothing else packs a bare repository that
//     only cup writes to. It packs a batch as it opens the repository (on
//     first use), before its first read, and the rest, and what later
//     writes leave, in the background.
//   - Objects that git gc moves into new packs are found by reading the
//     pack indexes again when an object is missing.
//   - In source.ModeBranch an update creates a change-set branch with the
//     same compare-and-swap, expecting the branch not to exist, so two
//     processes can never both create it.
//   - An update with an idempotency key records the key in its commit
//     message and looks for it in the branch's history first, so a repeat
//     is recognised whichever process made the first attempt.
//
// Not supported: repositories whose references are kept in a reftable, and
// SHA-256 repositories.
package local

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cup-dev/cup/internal/changeset"
	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/writes"
	"github.com/cup-dev/cup/source"
)

// Source is a source over a Git repository on disk. It is safe for
// concurrent use.
type Source struct {
	path string
	cfg  config

	openMu sync.Mutex
	opened atomic.Pointer[repo]

	eng *writes.Engine // target resolution, locking, retries, replay
}

var _ source.Source = (*Source)(nil)

// Open returns a source over the Git repository at path: a bare repository,
// a Git directory, or the working tree of a non-bare one. In direct write
// mode the source refuses (with errors wrapping source.ErrNotWritable) to
// serve a default branch that a work tree of the repository has checked
// out, and to write to any branch checked out: moving it under the work
// tree would show cup's writes undone there, and a commit made there would
// revert them. Serve a bare clone, another branch ([WithBranch]), or use
// [source.ModeBranch]. It checks its
// arguments but does no I/O: the repository is opened on first use, and a
// path that holds no repository shows as errors wrapping
// source.ErrUnavailable.
func Open(path string, opts ...Option) (*Source, error) {
	if path == "" {
		return nil, errors.New("local: empty repository path")
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	cfg := defaultConfig()
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.branch != "" && !gitfs.ValidRefName("refs/heads/"+cfg.branch) {
		return nil, fmt.Errorf("local: invalid branch name %q", cfg.branch)
	}
	eng, err := writes.New(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	cfg.Config = eng.Config()
	return &Source{path: path, cfg: cfg, eng: eng}, nil
}

// repo returns the opened repository, opening it on first use. A failure
// is not remembered: the next call tries again.
func (s *Source) repo() (*repo, error) {
	if r := s.opened.Load(); r != nil {
		return r, nil
	}
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if r := s.opened.Load(); r != nil {
		return r, nil
	}
	r, err := openRepo(s.path, &s.cfg)
	if err != nil {
		return nil, err
	}
	// Direct writes to the branch a work tree has checked out would lose
	// work: refuse to serve it at all, so that cupd stops at start-up.
	if s.cfg.Mode == source.ModeDirect {
		branch := s.defaultBranch(r)
		if where, ok := r.checkedOut(s.path)[branch]; ok {
			r.packer.close()
			return nil, errors.Join(errCheckedOut(branch, where), r.storage.Close(), r.objects.Close())
		}
	}
	r.writes = &refStore{s: s, r: r}
	s.opened.Store(r)
	return r, nil
}

// Close releases the files the source keeps open. The source must not be
// used afterwards.
func (s *Source) Close() error {
	r := s.opened.Load()
	if r == nil {
		return nil
	}
	r.packer.close()
	return errors.Join(r.store.Exclusive(r.storage.Close), r.objects.Close())
}

// DefaultBranch returns the branch the revision "" names: the configured
// branch, or the one HEAD points to. It is empty when HEAD is detached.
func (s *Source) DefaultBranch() (string, error) {
	r, err := s.repo()
	if err != nil {
		return "", err
	}
	name, ok := strings.CutPrefix(s.defaultBranch(r), "refs/heads/")
	if !ok {
		return "", nil
	}
	return name, nil
}

// View resolves rev to a snapshot. rev may be "" (the default branch), a
// branch or tag name (branches win), a full reference name, a full commit
// id, or other revision syntax go-git understands (short ids, main~1).
// Annotated tags are peeled to their commit.
func (s *Source) View(ctx context.Context, rev string) (*source.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := s.repo()
	if err != nil {
		return nil, err
	}
	res, err := s.resolve(r, rev)
	if err != nil {
		return nil, err
	}
	return &source.Snapshot{Revision: rev, Commit: res.commit.String(), FS: r.store.FS(res.tree)}, nil
}

// Update applies req.Apply on top of a branch and commits the result.
//
// Where the commit goes depends on the request and the source's write
// mode (see WithWriteMode):
//
//   - req.ChangeSet set: on that change set, in either mode. A name that
//     lacks the source's change-set prefix (see WithBranchPrefix) or names
//     no branch fails with source.ErrChangeSetNotFound.
//   - source.ModeDirect: on the branch req.Revision names, which moves.
//   - source.ModeBranch: on a new change-set branch, <prefix><id>, made
//     from the head of the branch req.Revision names, which does not move.
//     The result's Branch names the new branch; on a dry run or when
//     nothing changed no branch is made and Branch is empty.
//
// Revisions that name anything but a branch fail with
// source.ErrNotWritable.
//
// An update with req.IdempotencyKey first looks for a commit recording the
// key among the last changeset.HistoryLimit commits of the branch it would
// write (in ModeBranch, the change set whose name the key gives); if there
// is one, it returns that commit's result with Replayed set and writes
// nothing, or fails with source.ErrIdempotencyKeyReused when the commit was
// made for another req.Fingerprint (or when the key's change set exists
// without such a commit). Otherwise the key and fingerprint go into the
// commit message's trailers. A dry run does not look for the key: it
// computes the change as usual, and reports no commit. A key that
// changeset.ValidKey rejects fails the update, and so does a message that
// source.CheckMessage rejects (with source.ErrInvalidMessage).
//
// An update with req.Requester that names a change set another requester
// owns fails with source.ErrChangeSetOwner unless req.OverrideOwner is
// set (see changeset.CheckOwner); a new change set is recorded as
// req.Requester's.
//
// Updates of one branch through one Source take turns; if another process
// moves the branch between reading its head and moving it, the change is
// applied again on the new head (after looking for the key again), up to
// the configured number of retries, and then fails with source.ErrConflict.
// Nothing is written on a dry run, when the change leaves the tree as it
// was, or when Apply fails; Apply's error is returned as it is.
//
// The commit's committer is the source's identity (see WithAuthor), dated
// by its clock; its author is req.Author where set, and the committer
// otherwise.
func (s *Source) Update(ctx context.Context, req *source.UpdateRequest) (*source.UpdateResult, error) {
	if req == nil || req.Apply == nil {
		return nil, errors.New("local: update request without Apply")
	}
	if err := changeset.CheckRequest(req); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := s.repo()
	if err != nil {
		return nil, err
	}
	return s.eng.Update(ctx, r.writes, r.store, req)
}

// refStore gives the write engine the branches of an opened repository:
// the objects of the commits it publishes are written (the repository's
// packer) and then the branch moves, a compare-and-swap of its file under
// Git's lock.
type refStore struct {
	s *Source
	r *repo
}

var (
	_ writes.RefStore        = (*refStore)(nil)
	_ writes.WritableChecker = (*refStore)(nil)
)

func (rs *refStore) Resolve(_ context.Context, rev string) (writes.Ref, error) {
	var (
		res resolved
		err error
	)
	if name, ok := strings.CutPrefix(rev, "refs/heads/"); ok && gitfs.ValidRefName(rev) && name != "" {
		res, err = rs.s.resolveRef(rs.r, rev, rev)
	} else {
		res, err = rs.s.resolve(rs.r, rev)
	}
	if err != nil {
		return writes.Ref{}, err
	}
	return writes.Ref{Commit: res.commit, Tree: res.tree, Branch: res.branch}, nil
}

func (rs *refStore) CompareAndSwap(ctx context.Context, u writes.Swap) error {
	if err := rs.r.packer.flush(ctx); err != nil {
		return fmt.Errorf("%w: write the objects of %s: %w", source.ErrUnavailable, u.New, err)
	}
	err := rs.r.refs.Update(ctx, u.Branch, u.Old, u.New, &gitfs.ReflogEntry{Who: u.Committer, Message: u.Message})
	if errors.Is(err, gitfs.ErrRefLocked) {
		err = fmt.Errorf("%w: %w", source.ErrUnavailable, err)
	}
	return err
}

// CheckWritable refuses, in direct mode, a branch that a work tree has
// checked out (see Open).
func (rs *refStore) CheckWritable(branch string) error {
	if where, ok := rs.r.checkedOut(rs.s.path)[branch]; ok {
		return errCheckedOut(branch, where)
	}
	return nil
}

var _ source.History = (*Source)(nil)

// Commit returns the commit id; see source.History.
func (s *Source) Commit(ctx context.Context, id string) (*source.Commit, error) {
	r, err := s.repo()
	if err != nil {
		return nil, err
	}
	return r.store.Commit(ctx, id)
}

// ChangedPaths returns the files that differ between two commits; see
// source.History.
func (s *Source) ChangedPaths(ctx context.Context, from, to string) ([]string, error) {
	r, err := s.repo()
	if err != nil {
		return nil, err
	}
	return r.store.ChangedPaths(ctx, from, to)
}

// ContentID returns the id of a file's content in a commit; see
// source.History.
func (s *Source) ContentID(ctx context.Context, commit, path string) (string, error) {
	r, err := s.repo()
	if err != nil {
		return "", err
	}
	return r.store.ContentID(ctx, commit, path)
}
