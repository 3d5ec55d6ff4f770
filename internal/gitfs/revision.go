package gitfs

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/source"
)

// ResolveRevision resolves revision syntax beyond names and full ids (short
// ids, main~1, main^2) with go-git's parser over g. Revision syntax go-git
// rejects, or on which it panics, gives an error wrapping
// source.ErrInvalidRevision; a revision that names nothing, one wrapping
// source.ErrRevisionNotFound. The caller makes sure that nothing else uses
// g's storer meanwhile.
func ResolveRevision(g *git.Repository, rev string) (_ plumbing.Hash, err error) {
	var h *plumbing.Hash
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("%w %q: %v", source.ErrInvalidRevision, rev, p)
			}
		}()
		h, err = g.ResolveRevision(plumbing.Revision(rev))
	}()
	switch {
	case errors.Is(err, source.ErrInvalidRevision):
		return plumbing.ZeroHash, err
	case err != nil && strings.HasPrefix(err.Error(), "Revision invalid"):
		// go-git's parser error, whose type is internal to go-git.
		return plumbing.ZeroHash, fmt.Errorf("%w %q: %v", source.ErrInvalidRevision, rev, err)
	case errors.Is(err, plumbing.ErrReferenceNotFound), errors.Is(err, plumbing.ErrObjectNotFound), errors.Is(err, io.EOF):
		return plumbing.ZeroHash, fmt.Errorf("%w: %q: %v", source.ErrRevisionNotFound, rev, err)
	case err != nil:
		return plumbing.ZeroHash, fmt.Errorf("resolve %q: %w", rev, err)
	}
	return *h, nil
}

// RevisionNotFound wraps err, met while resolving rev, in
// source.ErrRevisionNotFound when it says that something rev leads to is
// missing or not a commit: a reference that does not exist, an object not
// in the store, or one that is no commit. Other errors are returned as
// they are. The revision "" is named as the default branch.
func RevisionNotFound(rev string, err error) error {
	if errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, ErrNotCommit) ||
		errors.Is(err, ErrRefNotFound) || errors.Is(err, plumbing.ErrReferenceNotFound) || errors.Is(err, io.EOF) {
		if rev == "" {
			rev = "the default branch"
		} else {
			rev = fmt.Sprintf("%q", rev)
		}
		return fmt.Errorf("%w: %s: %v", source.ErrRevisionNotFound, rev, err)
	}
	return err
}
