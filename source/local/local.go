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
//     trees along the changed paths, writes the commit as loose objects and
//     moves the branch with Git's lock file and a compare-and-swap. If the
//     branch moved meanwhile, the change is applied again on the new head.
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
// SHA-256 repositories. Loose objects accumulate until git gc packs them.
package local

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/internal/changeset"
	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

// Source is a source over a Git repository on disk. It is safe for
// concurrent use.
type Source struct {
	path string
	cfg  config

	openMu sync.Mutex
	opened atomic.Pointer[repo]

	locks changeset.Locks // one update of a branch at a time
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
	cfg.authorName, cfg.authorEmail = gitfs.SanitizeIdent(cfg.authorName), gitfs.SanitizeIdent(cfg.authorEmail)
	if cfg.authorName == "" || cfg.authorEmail == "" {
		return nil, errors.New("local: author name and email must not be empty")
	}
	if cfg.maxRetries < 0 {
		return nil, fmt.Errorf("local: negative number of retries %d", cfg.maxRetries)
	}
	if cfg.clock == nil {
		return nil, errors.New("local: nil clock")
	}
	if cfg.mode != source.ModeDirect && cfg.mode != source.ModeBranch {
		return nil, fmt.Errorf("local: unknown write mode %d", cfg.mode)
	}
	if !changeset.ValidPrefix(cfg.branchPrefix) {
		return nil, fmt.Errorf("local: invalid change-set branch prefix %q", cfg.branchPrefix)
	}
	return &Source{path: path, cfg: cfg}, nil
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
	if s.cfg.mode == source.ModeDirect {
		branch := s.defaultBranch(r)
		if where, ok := r.checkedOut(s.path)[branch]; ok {
			return nil, errors.Join(errCheckedOut(branch, where), r.storage.Close())
		}
	}
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
	return r.store.Exclusive(r.storage.Close)
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
	t, err := s.target(r, req)
	if err != nil {
		return nil, err
	}
	if req.DryRun {
		result, _, err := s.attempt(ctx, r, t, req)
		return result, err
	}
	if t.write != "" {
		unlock, err := s.locks.Lock(ctx, t.write)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	for attempt := 0; ; attempt++ {
		result, applyErr, err := s.attempt(ctx, r, t, req)
		if applyErr {
			return nil, err
		}
		if !errors.Is(err, gitfs.ErrRefMoved) {
			return result, err
		}
		if attempt >= s.cfg.maxRetries {
			return nil, fmt.Errorf("%w: %s moved %d times while the change was being made; try again", source.ErrConflict, t.write, attempt+1)
		}
		s.cfg.logger.DebugContext(ctx, "branch moved during update; applying again", "branch", t.write, "attempt", attempt+1)
	}
}

// target is where an update goes.
type target struct {
	// rev is the revision the base snapshot is resolved from: the change
	// set, or req.Revision.
	rev string
	// base is the full name of the branch whose head the change is
	// applied on.
	base string
	// write is the full name of the branch the commit goes on: base, or a
	// change set to create; "" for a change set with a random name.
	write string
	// create says that write (or the random branch) is made by the
	// update, expecting it not to exist.
	create bool
	// changeSet says that base is the change set the request names.
	changeSet bool
}

// target works out where req goes.
func (s *Source) target(r *repo, req *source.UpdateRequest) (target, error) {
	if cs := req.ChangeSet; cs != "" {
		if !changeset.IsChangeSet(s.cfg.branchPrefix, cs) {
			return target{}, fmt.Errorf("%w: %q is not a change-set branch (%s<id>)", source.ErrChangeSetNotFound, cs, s.cfg.branchPrefix)
		}
		name := "refs/heads/" + cs
		t := target{rev: cs, base: name, write: name, changeSet: true}
		if _, err := s.head(r, t); err != nil {
			return target{}, err
		}
		return t, nil
	}
	res, err := s.resolve(r, req.Revision)
	if err != nil {
		return target{}, err
	}
	if res.branch == "" {
		what := fmt.Sprintf("%q names a tag or commit", req.Revision)
		if req.Revision == "" {
			what = "HEAD is detached"
		}
		return target{}, fmt.Errorf("%w: %s; only branches can be updated", source.ErrNotWritable, what)
	}
	t := target{rev: req.Revision, base: res.branch, write: res.branch}
	if s.cfg.mode == source.ModeDirect {
		if where, ok := r.checkedOut(s.path)[res.branch]; ok {
			return target{}, errCheckedOut(res.branch, where)
		}
	}
	if s.cfg.mode == source.ModeBranch {
		t.create, t.write = true, ""
		if req.IdempotencyKey != "" {
			t.write = "refs/heads/" + changeset.KeyBranchName(s.cfg.branchPrefix, req.Requester, req.IdempotencyKey)
		}
	}
	return t, nil
}

// head returns the head of t's base branch.
func (s *Source) head(r *repo, t target) (resolved, error) {
	res, err := s.resolveRef(r, t.rev, t.base)
	switch {
	case t.changeSet && errors.Is(err, source.ErrRevisionNotFound):
		return resolved{}, fmt.Errorf("%w: %q: no such branch", source.ErrChangeSetNotFound, t.rev)
	case err != nil:
		return resolved{}, err
	case t.changeSet && res.branch != t.base:
		return resolved{}, fmt.Errorf("%w: %q is a symbolic reference", source.ErrChangeSetNotFound, t.rev)
	}
	return res, nil
}

// attempt applies req on the current head of t's base and, unless it is a
// dry run or changes nothing, commits and moves or creates t's branch.
// applyErr reports that err came from req.Apply.
func (s *Source) attempt(ctx context.Context, r *repo, t target, req *source.UpdateRequest) (_ *source.UpdateResult, applyErr bool, _ error) {
	res, err := s.head(r, t)
	if err != nil {
		return nil, false, err
	}
	if result, err := s.replay(ctx, r, t, res.commit, req); result != nil || err != nil {
		return result, false, err
	}
	head := res.commit
	committer := source.Signature{Name: s.cfg.authorName, Email: s.cfg.authorEmail, When: s.cfg.clock()}
	p, applyErr, err := changeset.Prepare(ctx, r.store, changeset.Base{Revision: t.rev, Commit: head, Tree: res.tree, NewChangeSet: t.create},
		req, committer, s.cfg.signer)
	if err != nil {
		return nil, applyErr, err
	}
	result, commit := p.Result, p.Commit
	if result.Unchanged || req.DryRun {
		if !t.create { // else no change set is made
			result.Branch = shortBranch(t.write)
		}
		return result, false, nil
	}
	branch, err := s.move(ctx, r, t, head, commit, &gitfs.ReflogEntry{Who: committer, Message: "commit: " + req.Message})
	if err != nil {
		if errors.Is(err, gitfs.ErrRefLocked) {
			err = fmt.Errorf("%w: %w", source.ErrUnavailable, err)
		}
		return nil, false, err
	}
	result.Branch = shortBranch(branch)
	result.Commit = commit.String()
	return result, false, nil
}

// maxNameAttempts bounds how many random change-set names an update tries
// before giving up; a name is tried again only when a branch of that name
// exists.
const maxNameAttempts = 8

// move points t's branch at commit, made on head, and returns the branch's
// full name. A branch that moved, or a change set named after a key that
// exists, gives an error wrapping gitfs.ErrRefMoved.
func (s *Source) move(ctx context.Context, r *repo, t target, head, commit plumbing.Hash, log *gitfs.ReflogEntry) (string, error) {
	switch {
	case !t.create:
		return t.write, r.refs.Update(ctx, t.write, head, commit, log)
	case t.write != "":
		return t.write, r.refs.Update(ctx, t.write, plumbing.ZeroHash, commit, log)
	}
	for range maxNameAttempts {
		name := "refs/heads/" + changeset.BranchName(s.cfg.branchPrefix, "")
		if err := r.refs.Update(ctx, name, plumbing.ZeroHash, commit, log); !errors.Is(err, gitfs.ErrRefMoved) {
			return name, err
		}
	}
	return "", fmt.Errorf("%w: %d random change-set names in a row were taken", source.ErrConflict, maxNameAttempts)
}

// replay returns the result of an earlier update with req's idempotency
// key on the branch t writes, if there is one, and nil otherwise (always
// on a dry run). head is the head of t's base, which is the branch t
// writes unless t creates it.
func (s *Source) replay(ctx context.Context, r *repo, t target, head plumbing.Hash, req *source.UpdateRequest) (*source.UpdateResult, error) {
	if req.IdempotencyKey == "" || t.write == "" || req.DryRun {
		return nil, nil
	}
	if t.create {
		res, err := s.resolveRef(r, t.rev, t.write)
		if errors.Is(err, source.ErrRevisionNotFound) {
			return nil, nil // the key's change set is still to be made
		}
		if err != nil {
			return nil, err
		}
		head = res.commit
	}
	return changeset.Lookup(ctx, r.store, req, t.write, head, t.create)
}

func shortBranch(name string) string {
	return strings.TrimPrefix(name, "refs/heads/")
}
