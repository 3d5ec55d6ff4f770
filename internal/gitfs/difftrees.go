package gitfs

import (
	"context"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/source"
)

// DiffTrees returns the changes of files that turn the tree from into the
// tree to, sorted by path, as [Overlay.Changes] reports them: with the old
// and new modes, ids and contents filled in, so that [Change.Diff] works.
// plumbing.ZeroHash stands for the empty tree on either side.
//
// Only subtrees whose ids differ are read, so the cost follows the size of
// the change and of the directories along it, not the size of the trees.
// A file that replaces a directory shows as the deletes of the files of the
// directory and the create of the file, and the other way round. Like the
// file systems, DiffTrees does not see submodules (gitlinks) or entries
// whose names are not valid path elements; a mode change alone (a file
// made executable, a symbolic link turned into a regular file) is an
// update.
func (s *Store) DiffTrees(ctx context.Context, from, to plumbing.Hash) ([]Change, error) {
	var changes []Change
	if err := s.diffTrees(ctx, ".", from, to, &changes, true); err != nil {
		return nil, err
	}
	// Entries are walked by name, and "a.txt" sorts before "a/b" as a path
	// but after "a" as a name.
	slices.SortFunc(changes, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return changes, nil
}

// treeEntries returns the entries of tree h, none for the zero id or the
// empty tree.
func (s *Store) treeEntries(h plumbing.Hash) ([]entry, error) {
	if h.IsZero() || h == EmptyTree {
		return nil, nil
	}
	t, err := s.tree(h)
	if err != nil {
		return nil, err
	}
	return t.entries, nil
}

// diffTrees appends to out the changes from tree from to tree to, whose
// path is dir.
// With data, the changes carry the files' contents; without, only their
// paths, operations, modes and ids.
func (s *Store) diffTrees(ctx context.Context, dir string, from, to plumbing.Hash, out *[]Change, data bool) error {
	if from == to {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	a, err := s.treeEntries(from)
	if err != nil {
		return err
	}
	b, err := s.treeEntries(to)
	if err != nil {
		return err
	}
	for i, j := 0, 0; i < len(a) || j < len(b); {
		var old, new *entry
		switch {
		case j == len(b) || (i < len(a) && a[i].name < b[j].name):
			old = &a[i]
			i++
		case i == len(a) || b[j].name < a[i].name:
			new = &b[j]
			j++
		default:
			old, new = &a[i], &b[j]
			i++
			j++
		}
		if err := s.diffEntry(ctx, dir, old, new, out, data); err != nil {
			return err
		}
	}
	return nil
}

// diffEntry appends to out the changes between the entries old and new of
// the same name in directory dir; either may be nil.
func (s *Store) diffEntry(ctx context.Context, dir string, old, new *entry, out *[]Change, data bool) error {
	e := old
	if e == nil {
		e = new
	}
	if !validName(e.name) {
		return nil
	}
	p := join(dir, e.name)
	var oldDir, newDir plumbing.Hash
	if old != nil && old.isDir() {
		oldDir = old.hash
	}
	if new != nil && new.isDir() {
		newDir = new.hash
	}
	if err := s.diffTrees(ctx, p, oldDir, newDir, out, data); err != nil {
		return err
	}
	oldFile, newFile := old != nil && old.isFile(), new != nil && new.isFile()
	switch {
	case !oldFile && !newFile:
		return nil
	case oldFile && newFile && old.hash == new.hash && old.mode == new.mode:
		return nil
	}
	c := Change{Path: p, Op: source.OpUpdate}
	var err error
	switch {
	case !oldFile:
		c.Op = source.OpCreate
	case !newFile:
		c.Op = source.OpDelete
	}
	if newFile {
		c.Mode, c.Hash = new.mode, new.hash
		if data {
			c.Data, err = s.ReadObject(plumbing.BlobObject, new.hash)
		}
	}
	if oldFile && err == nil {
		c.OldMode, c.OldHash = old.mode, old.hash
		if data {
			c.OldData, err = s.ReadObject(plumbing.BlobObject, old.hash)
		}
	}
	if err != nil {
		return err
	}
	*out = append(*out, c)
	return nil
}
