package local

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

// resolved is what a revision names.
type resolved struct {
	peeled
	// branch is the full name of the branch the revision names, or "" when
	// it names something else (a tag, a commit, a relative revision).
	branch string
}

// resolve finds what rev names. Names are looked up as branches first,
// then tags; full commit ids directly; anything else with go-git's
// revision parser.
func (s *Source) resolve(r *repo, rev string) (resolved, error) {
	if err := source.CheckRevision(rev); err != nil {
		return resolved{}, err
	}
	if rev == "" {
		return s.resolveRef(r, rev, s.defaultBranch(r))
	}
	if h, ok := gitfs.ParseHash(rev); ok {
		p, err := r.peel(h)
		if err != nil {
			return resolved{}, gitfs.RevisionNotFound(rev, err)
		}
		return resolved{peeled: p}, nil
	}
	if !strings.ContainsAny(rev, "~^") {
		var candidates []string
		switch {
		case rev == "HEAD" || strings.HasPrefix(rev, "refs/"):
			candidates = []string{rev}
		default:
			candidates = []string{"refs/heads/" + rev, "refs/tags/" + rev}
		}
		for _, name := range candidates {
			if !gitfs.ValidRefName(name) {
				continue
			}
			res, err := s.resolveRef(r, rev, name)
			if errors.Is(err, source.ErrRevisionNotFound) {
				continue
			}
			return res, err
		}
	}
	return s.resolveOther(r, rev)
}

// resolveRef resolves the reference name.
func (s *Source) resolveRef(r *repo, rev, name string) (resolved, error) {
	h, last, err := r.refs.Resolve(name)
	if err != nil {
		if errors.Is(err, gitfs.ErrRefNotFound) {
			return resolved{}, gitfs.RevisionNotFound(rev, err)
		}
		return resolved{}, err
	}
	p, err := r.peel(h)
	if err != nil {
		return resolved{}, gitfs.RevisionNotFound(rev, err)
	}
	res := resolved{peeled: p}
	if strings.HasPrefix(last, "refs/heads/") {
		res.branch = last
	}
	return res, nil
}

// defaultBranch returns the reference the revision "" names: the
// configured branch, or what HEAD points to (HEAD itself when detached).
func (s *Source) defaultBranch(r *repo) string {
	if s.cfg.branch != "" {
		return "refs/heads/" + s.cfg.branch
	}
	if ref, err := r.refs.Read("HEAD"); err == nil && ref.Target != "" {
		return ref.Target
	}
	return "HEAD"
}

// maxRelists bounds how many times resolveOther has go-git list the packs
// again.
const maxRelists = 3

// resolveOther resolves the revision syntax beyond names and full ids,
// such as short ids and main~1, with go-git.
func (s *Source) resolveOther(r *repo, rev string) (resolved, error) {
	var h plumbing.Hash
	err := r.store.Exclusive(func() error {
		g, err := r.goGit()
		if err != nil {
			return fmt.Errorf("resolve %q: %w", rev, err)
		}
		h, err = gitfs.ResolveRevision(g, rev)
		// Commits written since go-git listed the packs may be in a pack
		// it does not know of (a group's, or git gc's); a listing made
		// while packs were renamed may have failed halfway.
		for range maxRelists {
			if err == nil || errors.Is(err, source.ErrInvalidRevision) || !r.refreshPacks(&s.cfg) {
				break
			}
			h, err = gitfs.ResolveRevision(g, rev)
		}
		return err
	})
	if err != nil {
		return resolved{}, err
	}
	p, err := r.peel(h)
	if err != nil {
		return resolved{}, gitfs.RevisionNotFound(rev, err)
	}
	return resolved{peeled: p}, nil
}
