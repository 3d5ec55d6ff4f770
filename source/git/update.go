package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"

	"github.com/cup-dev/cup/internal/changeset"
	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

// maxNameTries bounds how many random change-set names an update tries
// when the remote already has a branch of that name.
const maxNameTries = 5

// target is the branch an update writes and what it starts from.
type target struct {
	branch string // short name of the branch the push moves or creates
	base   string // short name of the branch whose head the change starts from
	create bool   // the push creates branch (ModeBranch without ChangeSet)
}

// Update applies req.Apply on top of a branch and pushes the result; see
// the package documentation for the write modes. Failures to reach the
// remote, and a cache directory out of space, wrap source.ErrUnavailable
// (the latter saying so), pushes the remote refuses for another
// reason than a concurrent change wrap source.ErrRejected, and losing to
// concurrent writers more than the configured number of times wraps
// source.ErrConflict. Nothing is pushed on a dry run, when the change
// leaves the tree as it was, or when Apply fails. A message that
// source.CheckMessage rejects fails with source.ErrInvalidMessage, and an
// update of a change set another requester owns, without
// req.OverrideOwner, with source.ErrChangeSetOwner.
func (s *Source) Update(ctx context.Context, req *source.UpdateRequest) (_ *source.UpdateResult, err error) {
	defer func() { err = s.outOfSpace(err) }()
	if req == nil || req.Apply == nil {
		return nil, errors.New("git: update request without Apply")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := req.IdempotencyKey
	if err := changeset.CheckRequest(req); err != nil {
		return nil, err
	}
	if key != "" && !req.DryRun {
		// An earlier attempt may have landed without its caller knowing.
		if err := s.Fetch(ctx); err != nil {
			return nil, err
		}
	}
	st, err := s.current()
	if err != nil {
		return nil, err
	}
	tg, err := s.target(st, req)
	if err != nil {
		return nil, err
	}
	if req.DryRun {
		res, _, err := s.attempt(ctx, tg, req, tg.branch)
		return res, err
	}
	lockName := tg.branch
	if tg.create {
		lockName = "" // new branches do not race with each other
		if key != "" {
			lockName = changeset.KeyBranchName(s.cfg.prefix, req.Requester, key)
		}
	}
	if lockName != "" {
		unlock, err := s.locks.Lock(ctx, lockName)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	for attempt := 0; ; attempt++ {
		if key != "" {
			if res, err := s.replay(ctx, tg, req); res != nil || err != nil {
				return res, err
			}
		}
		name := tg.branch
		if tg.create {
			name = changeset.KeyBranchName(s.cfg.prefix, req.Requester, key)
		}
		res, retry, err := s.attempt(ctx, tg, req, name)
		if !retry {
			return res, err
		}
		limit := s.cfg.maxRetries
		if tg.create && key == "" {
			limit = maxNameTries
		}
		if attempt >= limit {
			return nil, fmt.Errorf("%w: %s moved %d times while the change was being made; try again", source.ErrConflict, name, attempt+1)
		}
		s.cfg.logger.DebugContext(ctx, "branch moved during update; applying again", "branch", name, "attempt", attempt+1, "reason", err)
	}
}

// target works out which branch req writes.
func (s *Source) target(st *refState, req *source.UpdateRequest) (target, error) {
	if cs := req.ChangeSet; cs != "" {
		if _, ok := st.heads[cs]; !ok || !changeset.IsChangeSet(s.cfg.prefix, cs) {
			return target{}, fmt.Errorf("%w: %q", source.ErrChangeSetNotFound, cs)
		}
		return target{branch: cs, base: cs}, nil
	}
	res, err := s.resolve(st, req.Revision)
	if err != nil {
		return target{}, err
	}
	if res.branch == "" {
		return target{}, fmt.Errorf("%w: %q names a tag or commit; only branches can be updated", source.ErrNotWritable, req.Revision)
	}
	if s.cfg.mode == source.ModeBranch {
		return target{base: res.branch, create: true}, nil
	}
	return target{branch: res.branch, base: res.branch}, nil
}

// replay returns the result of an earlier update with req's idempotency
// key on the branch tg writes, if there is one, and nil otherwise.
func (s *Source) replay(ctx context.Context, tg target, req *source.UpdateRequest) (*source.UpdateResult, error) {
	st, err := s.current()
	if err != nil {
		return nil, err
	}
	branch := tg.branch
	if tg.create {
		branch = changeset.KeyBranchName(s.cfg.prefix, req.Requester, req.IdempotencyKey)
	}
	head, ok := st.heads[branch]
	if !ok {
		return nil, nil
	}
	return changeset.Lookup(ctx, s.store, req, branch, head, tg.create)
}

// attempt applies req on the head of tg.base and, unless it is a dry run
// or changes nothing, commits and pushes to the branch name. retry reports
// that the push lost to a concurrent change and the update may be tried
// again on a newer head.
func (s *Source) attempt(ctx context.Context, tg target, req *source.UpdateRequest, name string) (_ *source.UpdateResult, retry bool, _ error) {
	st, err := s.current()
	if err != nil {
		return nil, false, err
	}
	head, ok := st.heads[tg.base]
	if !ok {
		return nil, false, fmt.Errorf("%w: branch %q", source.ErrRevisionNotFound, tg.base)
	}
	p, err := s.peel(head)
	if err != nil {
		return nil, false, fmt.Errorf("git: read %s: %w", tg.base, err)
	}
	committer := source.Signature{Name: s.cfg.authorName, Email: s.cfg.authorEmail, When: s.cfg.clock()}
	prep, _, err := changeset.Prepare(ctx, s.store, changeset.Base{Revision: req.Revision, Commit: head, Tree: p.tree, NewChangeSet: tg.create},
		req, committer, s.cfg.signer)
	if err != nil {
		return nil, false, err // Apply's error as it is, or the store's
	}
	result, commit := prep.Result, prep.Commit
	if result.Unchanged || req.DryRun {
		if !tg.create { // else no change set was made
			result.Branch = name
		}
		return result, false, nil
	}
	objects, err := s.newObjects(commit, prep.Tree, prep.Changes)
	if err != nil {
		return nil, false, err
	}
	old := head
	if tg.create {
		old = plumbing.ZeroHash
	}
	if err := s.push(ctx, name, old, commit, objects); err != nil {
		return nil, errors.Is(err, errMoved), err
	}
	s.setHead(ctx, name, commit)
	result.Branch, result.Commit = name, commit.String()
	return result, false, nil
}

// newObjects lists the objects a commit may add to what its parent holds:
// the commit, the trees along every changed path and the changed files.
// The remote has everything else, since it has the parent.
func (s *Source) newObjects(commit, tree plumbing.Hash, changes []gitfs.Change) ([]plumbing.Hash, error) {
	fsys := s.store.FS(tree)
	seen := map[plumbing.Hash]bool{commit: true, tree: true}
	out := []plumbing.Hash{commit, tree}
	add := func(h plumbing.Hash) {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	for i := range changes {
		c := &changes[i]
		if c.Op != source.OpDelete {
			add(c.Hash)
		}
		for dir := path.Dir(c.Path); dir != "."; dir = path.Dir(dir) {
			h, err := fsys.ObjectID(dir)
			if err != nil {
				continue // the directory went away with the change
			}
			add(h)
		}
	}
	return out, nil
}

// errMoved reports that the remote branch was not where the push expected.
var errMoved = errors.New("the branch moved")

// push sends objects and moves the remote branch name from old to new
// (creates it when old is zero). It returns an error wrapping errMoved
// when the branch was elsewhere, source.ErrRejected when the remote
// refused the update for another reason, and source.ErrUnavailable when
// the remote could not be reached. When the answer is lost after the
// request was sent, the outcome is settled with a fetch.
func (s *Source) push(ctx context.Context, name string, old, new plumbing.Hash, objects []plumbing.Hash) error {
	ref := plumbing.NewBranchReferenceName(name)
	// The HTTP transport rewrites the endpoint it is given on redirects, so
	// each session gets its own copy.
	ep := *s.endpoint
	cl, err := client.NewClient(&ep)
	if err != nil {
		return fmt.Errorf("git: %w", err)
	}
	sess, err := cl.NewReceivePackSession(&ep, s.cfg.auth)
	if err != nil {
		return s.unavailable(ctx, "push to", err)
	}
	defer sess.Close()
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return s.unavailable(ctx, "push to", err)
	}
	if adv != nil {
		cur := adv.References[ref.String()]
		if cur != old {
			s.noteMoved(ctx)
			return fmt.Errorf("%w: %s is at %s, not %s", errMoved, name, short(cur), short(old))
		}
	}
	var pack bytes.Buffer
	if err := s.store.WritePack(&pack, objects); err != nil {
		return fmt.Errorf("git: pack objects: %w", err)
	}
	req := packp.NewReferenceUpdateRequest()
	if adv != nil {
		req = packp.NewReferenceUpdateRequestFromCapabilities(adv.Capabilities)
		if adv.Capabilities.Supports(capability.Sideband64k) {
			_ = req.Capabilities.Set(capability.Sideband64k)
		}
	}
	var remoteSays bytes.Buffer
	req.Progress = &remoteSays
	req.Commands = []*packp.Command{{Name: ref, Old: old, New: new}}
	req.Packfile = io.NopCloser(&pack)
	report, err := sess.ReceivePack(ctx, req)
	if report != nil && err != nil {
		return s.refused(ctx, name, old, new, report, strings.TrimSpace(remoteSays.String()))
	}
	if err != nil {
		return s.settle(ctx, name, old, new, err)
	}
	return nil
}

// refused explains a push the remote answered with a failure for the
// branch: lost to a concurrent change, or rejected.
func (s *Source) refused(ctx context.Context, name string, old, new plumbing.Hash, report *packp.ReportStatus, remoteSays string) error {
	why := report.UnpackStatus
	for _, cs := range report.CommandStatuses {
		if cs.Status != "ok" {
			why = cs.Status
		}
	}
	if err := s.Fetch(ctx); err == nil {
		if st, err := s.current(); err == nil {
			cur := st.heads[name]
			if cur == new {
				return nil
			}
			if cur != old {
				return fmt.Errorf("%w: %s", errMoved, why)
			}
		}
	}
	if remoteSays != "" {
		why += ": " + remoteSays
	}
	return fmt.Errorf("%w: push to %s: %s", source.ErrRejected, name, why)
}

// settle finds out whether a push whose answer was lost landed.
func (s *Source) settle(ctx context.Context, name string, old, new plumbing.Hash, pushErr error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := s.Fetch(ctx); err != nil {
		return fmt.Errorf("%w: push to %s failed and its outcome is unknown (%v); repeat the request with the same idempotency key: %w",
			source.ErrUnavailable, Redact(s.url), pushErr, err)
	}
	st, err := s.current()
	if err != nil {
		return err
	}
	switch cur := st.heads[name]; cur {
	case new:
		return nil // it landed
	case old:
		return fmt.Errorf("%w: push to %s failed before it landed; nothing was written: %v", source.ErrUnavailable, Redact(s.url), pushErr)
	default:
		// Another writer moved the branch: on top of ours, when ours
		// landed first; otherwise ours did not land, and is tried again.
		landed, err := changeset.Reaches(ctx, s.store, cur, new, changeset.HistoryLimit)
		if err != nil {
			return fmt.Errorf("%w: push to %s failed and its outcome is unknown (%v); repeat the request with the same idempotency key: %w",
				source.ErrUnavailable, Redact(s.url), pushErr, err)
		}
		if landed {
			return nil
		}
		return fmt.Errorf("%w: %v", errMoved, pushErr)
	}
}

// noteMoved fetches after the remote showed a branch elsewhere than
// expected, so that the next attempt starts from the new head.
func (s *Source) noteMoved(ctx context.Context) {
	if err := s.Fetch(ctx); err != nil {
		s.cfg.logger.DebugContext(ctx, "fetch after a moved branch failed", "error", err)
	}
}

func short(h plumbing.Hash) string {
	if h.IsZero() {
		return "nothing"
	}
	return h.String()[:12]
}
