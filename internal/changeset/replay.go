package changeset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

// HistoryLimit is how many commits of a branch the sources search for an
// earlier update with the same idempotency key. A key is recognised while
// its commit is among the last HistoryLimit commits of the branch's
// first-parent history; a repeat that comes later is applied again.
const HistoryLimit = 200

// Reaches reports whether target is among the first limit commits of
// head's first-parent history (head itself included): whether a commit
// landed on a branch that has moved on since. A history cut short (a
// shallow clone) does not reach.
func Reaches(ctx context.Context, store *gitfs.Store, head, target plumbing.Hash, limit int) (bool, error) {
	c, err := walk(ctx, store, head, limit, func(c *gitfs.CommitInfo) bool { return c.Hash == target })
	return c != nil, err
}

// Find walks the first-parent history of head, newest first, through at
// most limit commits, and returns the first commit whose message records
// the idempotency key key for requester ("" for none), as [Recorded]
// reads them. A commit that records the key for another requester, or
// that carries the key anywhere but in the trailers an update records, is
// not a match: a key is the requester's own. It reports false when there
// is none, when key is empty, or when the history ends: at a root commit,
// or at a parent that the store does not hold (the edge of a shallow
// clone).
func Find(ctx context.Context, store *gitfs.Store, head plumbing.Hash, key, requester string, limit int) (*gitfs.CommitInfo, bool, error) {
	if key == "" {
		return nil, false, nil
	}
	requester = value(requester)
	c, err := walk(ctx, store, head, limit, func(c *gitfs.CommitInfo) bool {
		if !strings.Contains(c.Message, key) {
			return false
		}
		t := Recorded(c.Message)
		return t.IdempotencyKey == key && t.RequestedBy == requester
	})
	return c, c != nil, err
}

// Owner returns the owner of the change set whose head is head, as the
// commits an update made on it record it ([Trailers].ChangeSetOwner):
// walking head's first-parent history through at most limit commits, the
// first commit that records a requester or an owner decides; commits that
// record neither (pushed by other means, or made without a requester) are
// passed over. The owner is returned as it was requested, decoded from
// the form [Message] records. It returns "" when that commit records no
// owner (a change set made without a requester, or before owners were
// recorded), or when there is no such commit.
func Owner(ctx context.Context, store *gitfs.Store, head plumbing.Hash, limit int) (string, error) {
	c, err := walk(ctx, store, head, limit, func(c *gitfs.CommitInfo) bool {
		t := Recorded(c.Message)
		return t.RequestedBy != "" || t.ChangeSetOwner != ""
	})
	if c == nil || err != nil {
		return "", err
	}
	owner := Recorded(c.Message).ChangeSetOwner
	if name, err := url.PathUnescape(owner); err == nil {
		return name, nil
	}
	return owner, nil // not written by Message; compared as it is
}

// walk follows the first-parent history of head, newest first, through at
// most limit commits, and returns the first for which match reports true.
// It returns nil when there is none, or when the history ends: at a root
// commit, or at a parent that the store does not hold (the edge of a
// shallow clone; head itself must be there).
func walk(ctx context.Context, store *gitfs.Store, head plumbing.Hash, limit int, match func(*gitfs.CommitInfo) bool) (*gitfs.CommitInfo, error) {
	h := head
	for i := 0; i < limit && !h.IsZero(); i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := store.ReadCommit(h)
		if i > 0 && errors.Is(err, plumbing.ErrObjectNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if match(c) {
			return c, nil
		}
		h = c.FirstParent()
	}
	return nil, nil
}

// Replay returns the result of the earlier update that made commit c on
// branch (a short or full branch name), as [Find] found it, for a repeat
// of that update with the request fingerprint fingerprint: Branch, Base
// (c's first parent), Commit and Changes (c's changes to that parent's
// tree, diffs included) as the update returned them, and Replayed set.
// When c records another fingerprint the key was reused for a different
// request, and Replay fails with an error wrapping
// source.ErrIdempotencyKeyReused.
func Replay(ctx context.Context, store *gitfs.Store, branch string, c *gitfs.CommitInfo, fingerprint string) (*source.UpdateResult, error) {
	if t := Recorded(c.Message); t.Fingerprint != fingerprintValue(fingerprint) {
		return nil, fmt.Errorf("%w: key %q made commit %s for another request; use a new key for a new request",
			source.ErrIdempotencyKeyReused, t.IdempotencyKey, c.Hash)
	}
	res := &source.UpdateResult{
		Branch:   strings.TrimPrefix(branch, "refs/heads/"),
		Commit:   c.Hash.String(),
		Replayed: true,
	}
	var baseTree plumbing.Hash
	if parent := c.FirstParent(); !parent.IsZero() {
		p, err := store.ReadCommit(parent)
		if err != nil {
			return nil, err
		}
		res.Base, baseTree = parent.String(), p.Tree
	}
	changes, err := store.DiffTrees(ctx, baseTree, c.Tree)
	if err != nil {
		return nil, err
	}
	res.Changes = FileChanges(changes)
	return res, nil
}

// Lookup looks among the last [HistoryLimit] commits of branch (a short or
// full branch name), whose head is head, for the commit an earlier update
// with req's idempotency key and requester made ([Find]), and returns
// that update's result ([Replay]). It returns nil when req has no key or
// no commit records it. keyBranch says that branch is the change set named
// after the key ([KeyBranchName]), which only an update with the key
// makes: when none of its commits records the key, Lookup fails with an
// error wrapping source.ErrIdempotencyKeyReused.
func Lookup(ctx context.Context, store *gitfs.Store, req *source.UpdateRequest, branch string, head plumbing.Hash, keyBranch bool) (*source.UpdateResult, error) {
	if req.IdempotencyKey == "" {
		return nil, nil
	}
	c, found, err := Find(ctx, store, head, req.IdempotencyKey, req.Requester, HistoryLimit)
	switch {
	case err != nil:
		return nil, err
	case found:
		return Replay(ctx, store, branch, c, req.Fingerprint)
	case keyBranch:
		return nil, fmt.Errorf("%w: branch %s, named after the key, exists but none of its last %d commits records the key",
			source.ErrIdempotencyKeyReused, strings.TrimPrefix(branch, "refs/heads/"), HistoryLimit)
	}
	return nil, nil
}

// Bounds on the diffs an UpdateResult holds, so that an answer costs no
// more than a small multiple of what was asked, whatever the files hold.
const (
	// MaxFileDiffInput is the most bytes a file's old and new content may
	// hold together for its diff to be computed.
	MaxFileDiffInput = 1 << 20
	// MaxDiffBytes is the most bytes the diffs of one result hold together.
	MaxDiffBytes = 2 << 20
)

// FileChanges converts changes, as [gitfs.Overlay.Changes] and
// [gitfs.Store.DiffTrees] report them, to the changes an UpdateResult
// lists, computing their diffs. A diff past [MaxFileDiffInput] or
// [MaxDiffBytes] is replaced by a line saying so. It returns nil for no
// changes.
func FileChanges(changes []gitfs.Change) []source.FileChange {
	if len(changes) == 0 {
		return nil
	}
	out := make([]source.FileChange, len(changes))
	budget := MaxDiffBytes
	for i := range changes {
		c := &changes[i]
		out[i] = source.FileChange{Path: c.Path, Op: c.Op}
		if n := len(c.OldData) + len(c.Data); n > MaxFileDiffInput {
			out[i].Diff = fmt.Sprintf("diff of %s omitted: its old and new content hold %d bytes, more than the %d an answer diffs; read the file at the commit\n", c.Path, n, MaxFileDiffInput)
			continue
		}
		// A diff holds at least its two headers, and all of a file added
		// or deleted: past the budget, it is not computed at all (a
		// commit that deletes 10,000 files diffs ~500 of them).
		if diffAtLeast(c) > budget {
			out[i].Diff = fmt.Sprintf("diff of %s omitted: the answer's diffs would pass %d bytes; read the file at the commit\n", c.Path, MaxDiffBytes)
			continue
		}
		d := c.Diff()
		if len(d) > budget {
			out[i].Diff = fmt.Sprintf("diff of %s omitted: the answer's diffs would pass %d bytes; read the file at the commit\n", c.Path, MaxDiffBytes)
			continue
		}
		budget -= len(d)
		out[i].Diff = d
	}
	return out
}

// diffAtLeast is a lower bound of the size of c's diff: nothing when the
// content is the same, else the two header lines ("--- a/<path>" and
// "+++ b/<path>"), and for a text file added or deleted all its content.
func diffAtLeast(c *gitfs.Change) int {
	if bytes.Equal(c.OldData, c.Data) {
		return 0
	}
	least := 2*len(c.Path) + 14
	if len(c.OldData) > 0 && len(c.Data) > 0 {
		return least
	}
	content := c.Data
	if len(content) == 0 {
		content = c.OldData
	}
	if bytes.IndexByte(content[:min(len(content), 8000)], 0) < 0 { // text, diffed line by line
		least += len(content)
	}
	return least
}
