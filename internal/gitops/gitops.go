// Package gitops holds the commit, tag and read-back operations that
// internal/gitrepo (a repository on disk) and internal/memsource (one in
// memory) both offer, written once over a *gitfs.Store. References stay
// with the callers: each moves its own the way its storage requires.
package gitops

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

// InitTime dates a repository's first commit, so that its id depends only
// on the files, the author and the message.
var InitTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// InitialCommit writes a root commit holding files (slash-separated paths;
// nil content is skipped) by who, dated InitTime, and returns its id.
func InitialCommit(ctx context.Context, s *gitfs.Store, files map[string][]byte, who source.Signature, message string) (plumbing.Hash, error) {
	changes := make([]gitfs.Change, 0, len(files))
	for p, data := range files {
		if data == nil {
			continue
		}
		changes = append(changes, gitfs.Change{Path: p, Op: source.OpCreate, Mode: 0o100644, Data: data})
	}
	slices.SortFunc(changes, func(a, b gitfs.Change) int { return cmp.Compare(a.Path, b.Path) })
	for _, c := range changes { // in order, so the same files fail the same way
		if !fs.ValidPath(c.Path) || c.Path == "." {
			return plumbing.ZeroHash, fmt.Errorf("invalid path %q", c.Path)
		}
	}
	tree, err := s.BuildTree(ctx, plumbing.ZeroHash, changes)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	who.When = InitTime
	return s.WriteCommit(&gitfs.Commit{Tree: tree, Author: who, Committer: who, Message: message})
}

// Commit writes a commit on top of head by who, dated now: each file with
// content is written, each with nil content removed. It returns the new
// commit's id; moving a reference to it is the caller's.
func Commit(ctx context.Context, s *gitfs.Store, head plumbing.Hash, files map[string][]byte, who source.Signature, message string) (plumbing.Hash, error) {
	_, baseTree, err := s.Peel(head)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	ov := gitfs.NewOverlay(s.FS(baseTree))
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if files[p] == nil {
			err = ov.Remove(p)
		} else {
			err = ov.WriteFile(p, files[p], 0o644)
		}
		if err != nil {
			return plumbing.ZeroHash, err
		}
	}
	changes, err := ov.Changes()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	tree, err := s.BuildTree(ctx, baseTree, changes)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	who.When = time.Now()
	return s.WriteCommit(&gitfs.Commit{
		Tree: tree, Parents: []plumbing.Hash{head}, Author: who, Committer: who, Message: message,
	})
}

// TagTarget returns what tag name's reference should hold: commit itself
// when message is empty (a lightweight tag), else a new annotated tag
// object on commit by who, dated now, holding message.
func TagTarget(s *gitfs.Store, commit plumbing.Hash, name string, who source.Signature, message string) (plumbing.Hash, error) {
	if message == "" {
		return commit, nil
	}
	who.When = time.Now()
	body := fmt.Sprintf("object %s\ntype commit\ntag %s\ntagger %s <%s> %d %s\n\n%s",
		commit, name, who.Name, who.Email, who.When.Unix(), who.When.Format("-0700"), message)
	return s.WriteObject(plumbing.TagObject, []byte(body))
}

// CommitInfo describes a commit.
type CommitInfo struct {
	ID      string
	Tree    string
	Parents []string
	Author  source.Signature
	// Committer is who made the commit.
	Committer source.Signature
	Message   string
}

// Log returns the first-parent history from commit h, newest first.
func Log(s *gitfs.Store, h plumbing.Hash) ([]CommitInfo, error) {
	var log []CommitInfo
	for !h.IsZero() {
		c, err := s.ReadCommit(h)
		if err != nil {
			return nil, err
		}
		info := CommitInfo{ID: c.Hash.String(), Tree: c.Tree.String(), Author: c.Author, Committer: c.Committer, Message: c.Message}
		for _, p := range c.Parents {
			info.Parents = append(info.Parents, p.String())
		}
		log = append(log, info)
		h = c.FirstParent()
	}
	return log, nil
}

// Files returns every file in the tree of commit h, by path. Symbolic
// links are returned as their targets.
func Files(s *gitfs.Store, h plumbing.Hash) (map[string][]byte, error) {
	_, tree, err := s.Peel(h)
	if err != nil {
		return nil, err
	}
	fsys := s.FS(tree)
	files := make(map[string][]byte)
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		var data []byte
		if d.Type()&fs.ModeSymlink != 0 {
			var target string
			target, err = fsys.ReadLink(p)
			data = []byte(target)
		} else {
			data, err = fsys.ReadFile(p)
		}
		files[p] = data
		return err
	})
	return files, err
}
