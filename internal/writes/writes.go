package writes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/internal/changeset"
	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

// ErrMoved reports a compare-and-swap that found the branch elsewhere
// than expected, or a branch to create that exists. It is
// gitfs.ErrRefMoved, so that the local RefStore can return what
// gitfs.Refs.Update returns.
var ErrMoved = gitfs.ErrRefMoved

// Ref is what a revision resolves to.
type Ref struct {
	// Commit and Tree are the commit the revision names and its tree.
	Commit, Tree plumbing.Hash
	// Branch is the full name (refs/heads/...) of the branch the
	// revision names (after following symbolic references), or "" when it
	// names a tag, a commit or a relative revision.
	Branch string
}

// RefStore is how an engine reads and moves a repository's branches. It
// must be safe for concurrent use.
type RefStore interface {
	// Resolve resolves rev ("" for the default branch; the engine names
	// branches in full, "refs/heads/<name>"). A revision that names nothing fails with an
	// error wrapping source.ErrRevisionNotFound.
	Resolve(ctx context.Context, rev string) (Ref, error)
	// CompareAndSwap moves u.Branch from u.Old to u.New, or creates it at
	// u.New when u.Old is zero, after making u.New's objects available
	// wherever the branch lives. When the branch is not at u.Old (or
	// exists, when creating) it fails with an error wrapping ErrMoved
	// and moves nothing. When it returns nil the branch is at u.New, and
	// Resolve says so.
	CompareAndSwap(ctx context.Context, u Swap) error
}

// Swap is one move of a branch.
type Swap struct {
	// Branch is the full name of the branch (refs/heads/...).
	Branch string
	// Old is where the branch must be; zero when it must not exist.
	Old plumbing.Hash
	// New is the commit it moves to, and Tree that commit's tree. Its
	// first parent is the last of Earlier, or Old when there are none.
	New, Tree plumbing.Hash
	// Changes are the files New changes against its parent: with Tree,
	// all the objects New adds to what its parent reaches.
	Changes []gitfs.Change
	// Earlier are the commits between Old and New, oldest first, when a
	// group of updates is published at once (group commit): the oldest's
	// first parent is Old, and each is the first parent of the next.
	Earlier []Link
	// Committer and Message describe the move, for a reflog.
	Committer source.Signature
	Message   string
}

// Link is one commit a swap publishes besides its New.
type Link struct {
	// Commit and Tree are the commit and its tree.
	Commit, Tree plumbing.Hash
	// Changes are the files Commit changes against its first parent.
	Changes []gitfs.Change
}

// Links returns the commits u publishes, oldest first: Earlier, then
// New.
func (u *Swap) Links() []Link {
	return append(u.Earlier[:len(u.Earlier):len(u.Earlier)], Link{Commit: u.New, Tree: u.Tree, Changes: u.Changes})
}

// Syncer is a RefStore whose branches may lag the repository's (a clone
// of a remote). An update with an idempotency key calls Sync before it
// looks for an earlier attempt, which may have landed without its caller
// knowing.
type Syncer interface {
	Sync(ctx context.Context) error
}

// WritableChecker is a RefStore that refuses to move some branches in
// source.ModeDirect. CheckWritable fails, with an error wrapping
// source.ErrNotWritable, for a branch (full name) that must not move.
type WritableChecker interface {
	CheckWritable(branch string) error
}

// maxNameAttempts bounds how many random change-set names an update tries
// before giving up; a name is tried again only when a branch of that name
// exists.
const maxNameAttempts = 8

// Engine applies updates through RefStores. It is safe for concurrent
// use; a source keeps one, so that its updates of one branch take turns.
type Engine struct {
	cfg   Config
	locks changeset.Locks

	mu     sync.Mutex
	queues map[string]*queue // branch → updates waiting to be committed on it

	metrics *metrics // nil without Config.Metrics
}

// New returns an engine configured by cfg, after checking it.
func New(cfg Config) (*Engine, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, metrics: m}, nil
}

// Config returns the engine's configuration, defaults filled in.
func (e *Engine) Config() Config { return e.cfg }

// Update applies req.Apply on top of a branch of refs, whose objects are
// in objects, and commits the result, as source.Source's Update
// describes:
//
//   - req.ChangeSet set: on that change set, in either mode. A name that
//     lacks the change-set prefix or names no branch fails with
//     source.ErrChangeSetNotFound.
//   - source.ModeDirect: on the branch req.Revision names, which moves.
//   - source.ModeBranch: on a new change set, <prefix><id>, made from the
//     head of the branch req.Revision names, which does not move; its id
//     is derived from req.IdempotencyKey (and req.Requester) when set,
//     random otherwise.
//
// Revisions that name anything but a branch fail with
// source.ErrNotWritable. An update with an idempotency key first looks
// for a commit recording it on the branch it would write
// (changeset.Lookup) and answers with its result, Replayed set. Updates of
// one branch take turns; one that loses to another writer is applied
// again on the new head, up to Config.MaxRetries times, and then fails
// with source.ErrConflict. Nothing is written on a dry run, when the
// change leaves the tree as it was, or when Apply fails; Apply's error is
// returned as it is.
//
// Updates of a branch that exists queue while an earlier group is
// published, and are then committed together (see group.go): each is
// applied on the one before it and makes a commit of its own, and one
// compare-and-swap publishes them all. Each answers when that lands.
func (e *Engine) Update(ctx context.Context, refs RefStore, objects *gitfs.Store, req *source.UpdateRequest) (*source.UpdateResult, error) {
	if req == nil || req.Apply == nil {
		return nil, errors.New("update request without Apply")
	}
	if err := changeset.CheckRequest(req); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.IdempotencyKey != "" && !req.DryRun {
		if s, ok := refs.(Syncer); ok {
			if err := s.Sync(ctx); err != nil {
				return nil, err
			}
		}
	}
	w := &write{Engine: e, refs: refs, objects: objects, req: req}
	if err := w.target(ctx); err != nil {
		return nil, err
	}
	if req.DryRun {
		result, _, err := w.attempt(ctx)
		return result, err
	}
	if !w.create {
		return e.grouped(ctx, w)
	}
	if w.write != "" {
		unlock, err := e.locks.Lock(ctx, w.write)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	for attempt := 0; ; attempt++ {
		result, applyErr, err := w.attempt(ctx)
		if applyErr {
			return nil, err
		}
		if !errors.Is(err, ErrMoved) {
			return result, err
		}
		if attempt >= e.cfg.MaxRetries {
			return nil, fmt.Errorf("%w: %s moved %d times while the change was being made; try again", source.ErrConflict, short(w.write), attempt+1)
		}
		e.cfg.Logger.DebugContext(ctx, "branch moved during update; applying again", "branch", short(w.write), "attempt", attempt+1, "reason", err)
	}
}

// write is one update under way.
type write struct {
	*Engine
	refs    RefStore
	objects *gitfs.Store
	req     *source.UpdateRequest

	// rev is the revision the base snapshot is resolved from: the change
	// set, or req.Revision.
	rev string
	// base is the full name of the branch whose head the change is
	// applied on.
	base string
	// write is the full name of the branch the commit goes on: base, or
	// a change set to create; "" for a change set with a random name.
	write string
	// create says that write (or the random branch) is made by the
	// update, expecting it not to exist.
	create bool
	// changeSet says that base is the change set the request names.
	changeSet bool
}

// target works out where w.req goes.
func (w *write) target(ctx context.Context) error {
	req, prefix := w.req, w.cfg.BranchPrefix
	if cs := req.ChangeSet; cs != "" {
		if !changeset.IsChangeSet(prefix, cs) {
			return fmt.Errorf("%w: %q is not a change-set branch (%s<id>)", source.ErrChangeSetNotFound, cs, prefix)
		}
		name := branchPrefix + cs
		w.rev, w.base, w.write, w.changeSet = cs, name, name, true
		_, err := w.head(ctx)
		return err
	}
	ref, err := w.refs.Resolve(ctx, req.Revision)
	if err != nil {
		return err
	}
	if ref.Branch == "" {
		what := fmt.Sprintf("%q names a tag or commit", req.Revision)
		if req.Revision == "" {
			what = "HEAD is detached"
		}
		return fmt.Errorf("%w: %s; only branches can be updated", source.ErrNotWritable, what)
	}
	w.rev, w.base, w.write = req.Revision, ref.Branch, ref.Branch
	switch w.cfg.Mode {
	case source.ModeDirect:
		if c, ok := w.refs.(WritableChecker); ok {
			if err := c.CheckWritable(ref.Branch); err != nil {
				return err
			}
		}
	case source.ModeBranch:
		w.create, w.write = true, ""
		if req.IdempotencyKey != "" {
			w.write = branchPrefix + changeset.KeyBranchName(prefix, req.Requester, req.IdempotencyKey)
		}
	}
	return nil
}

// head resolves the head of w's base branch.
func (w *write) head(ctx context.Context) (Ref, error) {
	ref, err := w.refs.Resolve(ctx, w.base)
	switch {
	case w.changeSet && errors.Is(err, source.ErrRevisionNotFound):
		return Ref{}, fmt.Errorf("%w: %q: no such branch", source.ErrChangeSetNotFound, w.rev)
	case err != nil:
		return Ref{}, err
	case w.changeSet && ref.Branch != w.base:
		return Ref{}, fmt.Errorf("%w: %q is a symbolic reference", source.ErrChangeSetNotFound, w.rev)
	}
	return ref, nil
}

// attempt applies the request on the current head of w's base and,
// unless it is a dry run or changes nothing, commits and moves or creates
// w's branch. applyErr reports that err came from req.Apply.
func (w *write) attempt(ctx context.Context) (_ *source.UpdateResult, applyErr bool, _ error) {
	head, err := w.head(ctx)
	if err != nil {
		return nil, false, err
	}
	if result, err := w.replay(ctx, head.Commit); result != nil || err != nil {
		return result, false, err
	}
	committer := source.Signature{Name: w.cfg.AuthorName, Email: w.cfg.AuthorEmail, When: w.cfg.Clock()}
	p, applyErr, err := changeset.Prepare(ctx, w.objects,
		changeset.Base{Revision: w.rev, Commit: head.Commit, Tree: head.Tree, NewChangeSet: w.create},
		w.req, committer, w.cfg.Signer)
	if err != nil {
		return nil, applyErr, err
	}
	result := p.Result
	if result.Unchanged || w.req.DryRun {
		if !w.create { // else no change set is made
			result.Branch = short(w.write)
		}
		return result, false, nil
	}
	branch, err := w.move(ctx, Swap{
		Old: head.Commit, New: p.Commit, Tree: p.Tree, Changes: p.Changes,
		Committer: committer, Message: "commit: " + w.req.Message,
	})
	if err != nil {
		return nil, false, err
	}
	result.Branch, result.Commit = short(branch), p.Commit.String()
	return result, false, nil
}

// move points w's branch at u.New, made on u.Old, and returns the
// branch's full name. A branch that moved, or a change set named after a
// key that exists, gives an error wrapping ErrMoved.
func (w *write) move(ctx context.Context, u Swap) (string, error) {
	switch {
	case !w.create:
		u.Branch = w.write
		return u.Branch, w.refs.CompareAndSwap(ctx, u)
	case w.write != "":
		u.Branch, u.Old = w.write, plumbing.ZeroHash
		return u.Branch, w.refs.CompareAndSwap(ctx, u)
	}
	u.Old = plumbing.ZeroHash
	for range maxNameAttempts {
		u.Branch = branchPrefix + changeset.BranchName(w.cfg.BranchPrefix, "")
		if err := w.refs.CompareAndSwap(ctx, u); !errors.Is(err, ErrMoved) {
			return u.Branch, err
		}
	}
	return "", fmt.Errorf("%w: %d random change-set names in a row were taken", source.ErrConflict, maxNameAttempts)
}

// replay returns the result of an earlier update with the request's
// idempotency key on the branch w writes, if there is one, and nil
// otherwise (always on a dry run). head is the head of w's base, which is
// the branch w writes unless w creates it.
func (w *write) replay(ctx context.Context, head plumbing.Hash) (*source.UpdateResult, error) {
	if w.req.IdempotencyKey == "" || w.write == "" || w.req.DryRun {
		return nil, nil
	}
	if w.create {
		ref, err := w.refs.Resolve(ctx, w.write)
		if errors.Is(err, source.ErrRevisionNotFound) {
			return nil, nil // the key's change set is still to be made
		}
		if err != nil {
			return nil, err
		}
		head = ref.Commit
	}
	return changeset.Lookup(ctx, w.objects, w.req, w.write, head, w.create)
}

// branchPrefix begins the full names of branches.
const branchPrefix = "refs/heads/"

// short returns a branch's short name.
func short(name string) string {
	return strings.TrimPrefix(name, branchPrefix)
}
