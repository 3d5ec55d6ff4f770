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
	"go.opentelemetry.io/otel/attribute"

	"github.com/cup-dev/cup/internal/changeset"
	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/writes"
	"github.com/cup-dev/cup/source"
)

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
//
// An update with an idempotency key fetches first, since an earlier
// attempt may have landed without its caller knowing.
func (s *Source) Update(ctx context.Context, req *source.UpdateRequest) (*source.UpdateResult, error) {
	if req == nil || req.Apply == nil {
		return nil, errors.New("git: update request without Apply")
	}
	res, err := s.eng.Update(ctx, (*refStore)(s), s.store, req)
	return res, s.outOfSpace(err)
}

// refStore gives the write engine the branches of the last fetched state:
// objects are written to the local store as the commit is made, and a
// compare-and-swap pushes the new ones and moves the remote branch.
type refStore Source

var (
	_ writes.RefStore = (*refStore)(nil)
	_ writes.Syncer   = (*refStore)(nil)
)

func (rs *refStore) Resolve(_ context.Context, rev string) (writes.Ref, error) {
	s := (*Source)(rs)
	st, err := s.current()
	if err != nil {
		return writes.Ref{}, err
	}
	if name, ok := strings.CutPrefix(rev, "refs/heads/"); ok {
		h, ok := st.heads[name]
		if !ok {
			return writes.Ref{}, fmt.Errorf("%w: branch %q", source.ErrRevisionNotFound, name)
		}
		res, err := s.peelAs(rev, h, name)
		if err != nil {
			return writes.Ref{}, err
		}
		return writes.Ref{Commit: res.commit, Tree: res.tree, Branch: rev}, nil
	}
	res, err := s.resolve(st, rev)
	if err != nil {
		return writes.Ref{}, err
	}
	ref := writes.Ref{Commit: res.commit, Tree: res.tree}
	if res.branch != "" {
		ref.Branch = "refs/heads/" + res.branch
	}
	return ref, nil
}

// Sync fetches.
func (rs *refStore) Sync(ctx context.Context) error { return (*Source)(rs).Fetch(ctx) }

// CompareAndSwap pushes the new objects of u's commits and moves the
// remote branch, then records the branch's new value for reads.
func (rs *refStore) CompareAndSwap(ctx context.Context, u writes.Swap) error {
	s := (*Source)(rs)
	objects := s.newObjects(u.Links())
	branch := strings.TrimPrefix(u.Branch, "refs/heads/")
	if err := s.push(ctx, branch, u.Old, u.New, objects); err != nil {
		return err
	}
	s.setHead(ctx, branch, u.New)
	return nil
}

// newObjects lists the objects commits may add to what the first one's
// parent holds: each commit, the trees along every path it changes and
// the files it writes. The remote has everything else, since it has the
// parent.
func (s *Source) newObjects(links []writes.Link) []plumbing.Hash {
	seen := map[plumbing.Hash]bool{}
	var out []plumbing.Hash
	add := func(h plumbing.Hash) {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	for _, l := range links {
		fsys := s.store.FS(l.Tree)
		add(l.Commit)
		add(l.Tree)
		for i := range l.Changes {
			c := &l.Changes[i]
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
	}
	return out
}

// errMoved reports that the remote branch was not where the push expected.
var errMoved = writes.ErrMoved

// push sends objects and moves the remote branch name from old to new
// (creates it when old is zero). It returns an error wrapping errMoved
// when the branch was elsewhere, source.ErrRejected when the remote
// refused the update for another reason, and source.ErrUnavailable when
// the remote could not be reached. When the answer is lost after the
// request was sent, the outcome is settled with a fetch.
func (s *Source) push(ctx context.Context, name string, old, new plumbing.Hash, objects []plumbing.Hash) (err error) {
	ctx, o := s.startOp(ctx, "git.push", attribute.String("cup.git.branch", name))
	defer func() {
		outcome := pushOutcome(ctx, err)
		s.metrics.pushed(outcome, o.end(outcome, err))
	}()
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
	var popts []gitfs.PackOption
	if adv != nil && adv.Capabilities.Supports(capability.OFSDelta) {
		popts = append(popts, gitfs.WithTreeDeltas()) // a group's trees, each a delta of the one before
	}
	if err := s.store.WritePack(&pack, objects, popts...); err != nil {
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
		s.cfg.Logger.DebugContext(ctx, "fetch after a moved branch failed", "error", err)
	}
}

func short(h plumbing.Hash) string {
	if h.IsZero() {
		return "nothing"
	}
	return h.String()[:12]
}
