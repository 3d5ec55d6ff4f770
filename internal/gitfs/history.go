package gitfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/source"
)

// Commit returns the commit id, a full hexadecimal commit id, as the
// sources' [source.History] ability answers it. An id that names no
// commit in the store gives an error wrapping source.ErrRevisionNotFound.
func (s *Store) Commit(ctx context.Context, id string) (*source.Commit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := s.readCommitID(id)
	if err != nil {
		return nil, err
	}
	out := &source.Commit{ID: id, Author: c.Author, Committer: c.Committer, Message: c.Message}
	for _, p := range c.Parents {
		out.Parents = append(out.Parents, p.String())
	}
	return out, nil
}

// ChangedPaths returns the paths of the files that differ between the
// trees of the commits from and to, sorted, as the sources' [source.History]
// ability answers it; from "" stands for the empty tree. Only subtrees
// whose ids differ are read, and no file's content.
func (s *Store) ChangedPaths(ctx context.Context, from, to string) ([]string, error) {
	var trees [2]plumbing.Hash
	for i, id := range [2]string{from, to} {
		if id == "" {
			continue
		}
		c, err := s.readCommitID(id)
		if err != nil {
			return nil, err
		}
		trees[i] = c.Tree
	}
	var changes []Change
	if err := s.diffTrees(ctx, ".", trees[0], trees[1], &changes, false); err != nil {
		return nil, err
	}
	paths := make([]string, len(changes))
	for i, c := range changes {
		paths[i] = c.Path
	}
	slices.SortFunc(paths, strings.Compare)
	return paths, nil
}

// ContentID returns the id of the file at path in the tree of commit, a
// blob id in hexadecimal, as
// the sources' [source.History] ability answers it: an error wrapping
// fs.ErrNotExist where there is none, fs.ErrInvalid where it is a
// directory. Trees read for it are scanned, not decoded and cached: a
// history looks one path up in many commits.
func (s *Store) ContentID(ctx context.Context, commit, path string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	c, err := s.readCommitID(commit)
	if err != nil {
		return "", err
	}
	f := &FS{store: s, root: c.Tree, scan: true}
	e, err := f.lookup("contentid", path, true)
	if err != nil {
		return "", err
	}
	if e.isDir() {
		return "", &fs.PathError{Op: "contentid", Path: path, Err: fs.ErrInvalid}
	}
	return plumbing.Hash(e.hash).String(), nil
}

// readCommitID reads the commit with the full hexadecimal id, failing with
// source.ErrRevisionNotFound when the store holds no such commit.
func (s *Store) readCommitID(id string) (*CommitInfo, error) {
	h, err := commitID(id)
	if err != nil {
		return nil, err
	}
	c, err := s.ReadCommit(h)
	if errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, ErrNotCommit) {
		return nil, fmt.Errorf("%w: commit %s", source.ErrRevisionNotFound, id)
	}
	return c, err
}

// commitID parses a full hexadecimal commit id.
func commitID(id string) (plumbing.Hash, error) {
	if !plumbing.IsHash(id) || id != strings.ToLower(id) {
		return plumbing.ZeroHash, fmt.Errorf("%w %q: not a full commit id", source.ErrInvalidRevision, id)
	}
	return plumbing.NewHash(id), nil
}
