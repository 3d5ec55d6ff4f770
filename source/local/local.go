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
//
// Not supported: repositories whose references are kept in a reftable,
// SHA-256 repositories, and creating branches (Update needs an existing
// branch). Loose objects accumulate until git gc packs them.
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

	locksMu sync.Mutex
	locks   map[string]chan struct{} // branch → one-slot semaphore
}

var _ source.Source = (*Source)(nil)

// Open returns a source over the Git repository at path: a bare repository,
// a Git directory, or the working tree of a non-bare one. It checks its
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
	return &Source{path: path, cfg: cfg, locks: make(map[string]chan struct{})}, nil
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

// Update applies req.Apply on top of the branch req.Revision names and
// commits the result. Revisions that name anything but a branch fail with
// source.ErrNotWritable.
//
// Updates of one branch through one Source take turns; if another process
// moves the branch between reading its head and moving it, the change is
// applied again on the new head, up to the configured number of retries,
// and then fails with source.ErrConflict. Nothing is written on a dry run,
// when the change leaves the tree as it was, or when Apply fails; Apply's
// error is returned as it is.
//
// The commit's committer is the source's identity (see WithAuthor), dated
// by its clock; its author is req.Author where set, and the committer
// otherwise.
func (s *Source) Update(ctx context.Context, req *source.UpdateRequest) (*source.UpdateResult, error) {
	if req == nil || req.Apply == nil {
		return nil, errors.New("local: update request without Apply")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := s.repo()
	if err != nil {
		return nil, err
	}
	res, err := s.resolve(r, req.Revision)
	if err != nil {
		return nil, err
	}
	if res.branch == "" {
		what := fmt.Sprintf("%q names a tag or commit", req.Revision)
		if req.Revision == "" {
			what = "HEAD is detached"
		}
		return nil, fmt.Errorf("%w: %s; only branches can be updated", source.ErrNotWritable, what)
	}
	if req.DryRun {
		result, _, err := s.attempt(ctx, r, res.branch, req)
		return result, err
	}
	unlock, err := s.lock(ctx, res.branch)
	if err != nil {
		return nil, err
	}
	defer unlock()
	for attempt := 0; ; attempt++ {
		result, applyErr, err := s.attempt(ctx, r, res.branch, req)
		if applyErr {
			return nil, err
		}
		if !errors.Is(err, gitfs.ErrRefMoved) {
			return result, err
		}
		if attempt >= s.cfg.maxRetries {
			return nil, fmt.Errorf("%w: %s moved %d times while the change was being made; try again", source.ErrConflict, res.branch, attempt+1)
		}
		s.cfg.logger.DebugContext(ctx, "branch moved during update; applying again", "branch", res.branch, "attempt", attempt+1)
	}
}

// attempt applies req on the current head of branch and, unless it is a
// dry run or changes nothing, commits and moves the branch. applyErr
// reports that err came from req.Apply.
func (s *Source) attempt(ctx context.Context, r *repo, branch string, req *source.UpdateRequest) (_ *source.UpdateResult, applyErr bool, _ error) {
	res, err := s.resolveRef(r, req.Revision, branch)
	if err != nil {
		return nil, false, err
	}
	head := res.commit
	base := &source.Snapshot{Revision: req.Revision, Commit: head.String(), FS: r.store.FS(res.tree)}
	ov := gitfs.NewOverlay(r.store.FS(res.tree))
	if err := req.Apply(ctx, base, ov); err != nil {
		return nil, true, err
	}
	changes, err := ov.Changes()
	if err != nil {
		return nil, false, err
	}
	result := &source.UpdateResult{
		Unchanged: len(changes) == 0,
		Branch:    strings.TrimPrefix(branch, "refs/heads/"),
		Base:      head.String(),
		Changes:   fileChanges(changes),
	}
	if result.Unchanged || req.DryRun {
		return result, false, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	tree, err := r.store.BuildTree(ctx, res.tree, changes)
	if err != nil {
		return nil, false, fmt.Errorf("write tree: %w", err)
	}
	now := s.cfg.clock()
	committer := source.Signature{Name: s.cfg.authorName, Email: s.cfg.authorEmail, When: now}
	author := committer
	if a := req.Author; a != nil {
		if name := gitfs.SanitizeIdent(a.Name); name != "" {
			author.Name = name
		}
		if email := gitfs.SanitizeIdent(a.Email); email != "" {
			author.Email = email
		}
		if !a.When.IsZero() {
			author.When = a.When
		}
	}
	commit, err := r.store.WriteCommit(&gitfs.Commit{
		Tree:      tree,
		Parents:   []plumbing.Hash{head},
		Author:    author,
		Committer: committer,
		Message:   req.Message,
	})
	if err != nil {
		return nil, false, fmt.Errorf("write commit: %w", err)
	}
	if err := r.refs.Update(ctx, branch, head, commit, &gitfs.ReflogEntry{Who: committer, Message: "commit: " + req.Message}); err != nil {
		if errors.Is(err, gitfs.ErrRefLocked) {
			err = fmt.Errorf("%w: %w", source.ErrUnavailable, err)
		}
		return nil, false, err
	}
	result.Commit = commit.String()
	return result, false, nil
}

func fileChanges(changes []gitfs.Change) []source.FileChange {
	if len(changes) == 0 {
		return nil
	}
	out := make([]source.FileChange, len(changes))
	for i := range changes {
		c := &changes[i]
		out[i] = source.FileChange{Path: c.Path, Op: c.Op, Diff: c.Diff()}
	}
	return out
}

// lock takes the in-process lock of branch, waiting until ctx is done.
func (s *Source) lock(ctx context.Context, branch string) (unlock func(), err error) {
	s.locksMu.Lock()
	sem, ok := s.locks[branch]
	if !ok {
		sem = make(chan struct{}, 1)
		s.locks[branch] = sem
	}
	s.locksMu.Unlock()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
