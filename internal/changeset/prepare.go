package changeset

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

// Base is the commit an update starts from.
type Base struct {
	// Revision is what the caller named (for the snapshot Apply sees).
	Revision string
	// Commit and Tree are the head commit of the branch and its tree.
	Commit, Tree plumbing.Hash
	// NewChangeSet says that the update makes a new change set from
	// Commit, which the request's requester will own.
	NewChangeSet bool
}

// Prepared is an update applied and committed to the object store but not
// yet published (by moving or pushing a branch).
type Prepared struct {
	// Result is the answer so far: Base and Changes. Branch and Commit are
	// empty until the source sets them.
	Result *source.UpdateResult
	// Commit and Tree are the new commit and its tree; zero when the update
	// is a dry run or changes nothing (see Result.Unchanged).
	Commit, Tree plumbing.Hash
	// Changes are the changed files.
	Changes []gitfs.Change
}

// Prepare runs req.Apply on base and, unless req is a dry run or changes
// nothing, writes the new tree and a commit on base to store: the step
// every source takes before publishing. The committer is committer; the
// author is req.Author where it is set; sign, when not nil, signs the
// commit. applyErr reports that err came from req.Apply, which is
// returned as it is.
//
// When req names a change set (base.Commit is its head), Prepare first
// checks that req may add to it ([CheckOwner]), dry runs included, and
// records the change set's owner in the new commit; a new change set
// (base.NewChangeSet) is recorded as req.Requester's.
func Prepare(ctx context.Context, store *gitfs.Store, base Base, req *source.UpdateRequest, committer source.Signature, sign source.Signer) (_ *Prepared, applyErr bool, _ error) {
	owner := ""
	switch {
	case req.ChangeSet != "":
		var err error
		if owner, err = CheckOwner(ctx, store, base.Commit, req); err != nil {
			return nil, false, err
		}
	case base.NewChangeSet:
		owner = req.Requester
	}
	snap := &source.Snapshot{Revision: base.Revision, Commit: base.Commit.String(), FS: store.FS(base.Tree)}
	ov := gitfs.NewOverlay(store.FS(base.Tree))
	if err := req.Apply(ctx, snap, ov); err != nil {
		return nil, true, err
	}
	changes, err := ov.Changes()
	if err != nil {
		return nil, false, err
	}
	p := &Prepared{
		Result: &source.UpdateResult{
			Unchanged: len(changes) == 0,
			Base:      base.Commit.String(),
			Changes:   FileChanges(changes),
		},
		Changes: changes,
	}
	if p.Result.Unchanged || req.DryRun {
		return p, false, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if p.Tree, err = store.BuildTree(ctx, base.Tree, changes); err != nil {
		return nil, false, fmt.Errorf("write tree: %w", err)
	}
	p.Commit, err = store.WriteCommit(&gitfs.Commit{
		Tree:      p.Tree,
		Parents:   []plumbing.Hash{base.Commit},
		Author:    Author(committer, req.Author),
		Committer: committer,
		Message: Message(req.Message, Trailers{
			RequestedBy: req.Requester, ChangeSetOwner: owner,
			IdempotencyKey: req.IdempotencyKey, Fingerprint: req.Fingerprint,
		}),
		Signer: sign,
	})
	if err != nil {
		return nil, false, fmt.Errorf("write commit: %w", err)
	}
	return p, false, nil
}

// CheckOwner returns the owner of req.ChangeSet, whose head is head
// ([Owner]), when req may add to it: the change set has no owner, req has
// no requester (no policy decides who writes), req's requester is the
// owner, or req.OverrideOwner is set. Otherwise it fails with an error
// wrapping source.ErrChangeSetOwner that names the change set but not its
// owner.
func CheckOwner(ctx context.Context, store *gitfs.Store, head plumbing.Hash, req *source.UpdateRequest) (string, error) {
	owner, err := Owner(ctx, store, head, HistoryLimit)
	if err != nil {
		return "", fmt.Errorf("read the owner of change set %q: %w", req.ChangeSet, err)
	}
	requester := req.Requester
	if strings.TrimSpace(requester) == "" {
		requester = "" // as Message records it: none
	}
	if owner == "" || requester == "" || requester == owner || req.OverrideOwner {
		return owner, nil
	}
	return "", fmt.Errorf("%w: %q; only the requester who started it may add to it", source.ErrChangeSetOwner, req.ChangeSet)
}

// Author returns the author of a commit by committer on behalf of a: each
// of a's fields that is set (after gitfs.SanitizeIdent) replaces
// committer's.
func Author(committer source.Signature, a *source.Signature) source.Signature {
	author := committer
	if a == nil {
		return author
	}
	if name := gitfs.SanitizeIdent(a.Name); name != "" {
		author.Name = name
	}
	if email := gitfs.SanitizeIdent(a.Email); email != "" {
		author.Email = email
	}
	if !a.When.IsZero() {
		author.When = a.When
	}
	return author
}
