// Package source defines where repository trees come from and how changes to
// them become commits.
//
// A Source resolves a revision (branch, tag or commit) to an immutable
// [Snapshot] and applies changes on top of a branch. Implementations live
// beneath this package (local/, and git/ for remotes) and prove themselves
// against the conformance suite in sourcetest.
package source

import (
	"context"
	"errors"
	"io/fs"
	"time"
)

// Sentinel errors. Implementations wrap them so that callers can map them to
// API codes with errors.Is.
var (
	// ErrRevisionNotFound reports a revision that names no branch, tag or commit.
	ErrRevisionNotFound = errors.New("revision not found")
	// ErrInvalidRevision reports a revision that is not well formed.
	ErrInvalidRevision = errors.New("invalid revision")
	// ErrNotWritable reports a write to a revision that is not a branch.
	ErrNotWritable = errors.New("revision is not a branch")
	// ErrConflict reports a write that lost to concurrent writers more times
	// than the source retries.
	ErrConflict = errors.New("branch moved concurrently")
	// ErrUnavailable reports that the repository could not be reached.
	ErrUnavailable = errors.New("repository unavailable")
	// ErrInvalidPath reports a write to a path outside the repository tree or
	// otherwise not acceptable as a file path.
	ErrInvalidPath = errors.New("invalid path")
)

// Snapshot is the tree of one commit. It never changes.
type Snapshot struct {
	// Revision is the revision the snapshot was resolved from ("" for the default branch).
	Revision string
	// Commit is the full hexadecimal id of the commit.
	Commit string
	// FS holds the commit's tree. It is safe for concurrent use and implements
	// fs.ReadFileFS, fs.ReadDirFS and fs.StatFS.
	FS fs.FS
}

// Writer is a writable view of a tree: reads see earlier writes. Paths are
// slash-separated and relative to the tree root, as for fs.ValidPath; anything
// else fails with an error wrapping ErrInvalidPath. It satisfies
// controller.WriteFS.
type Writer interface {
	fs.FS
	WriteFile(name string, data []byte, perm fs.FileMode) error
	Remove(name string) error
}

// ApplyFunc makes a change: it reads base and writes through w. It may be
// called more than once, each time on a newer base, when concurrent writers
// move the branch; it must derive everything it writes from base and its own
// arguments. An error returned by ApplyFunc aborts the update and is returned
// unchanged.
type ApplyFunc func(ctx context.Context, base *Snapshot, w Writer) error

// Signature names the author of a commit.
type Signature struct {
	Name  string
	Email string
	When  time.Time
}

// UpdateRequest asks for a change on top of a branch.
type UpdateRequest struct {
	// Revision is the branch to change ("" for the default branch).
	Revision string
	// Message is the commit message.
	Message string
	// Author, when set, overrides the source's configured author.
	Author *Signature
	// DryRun computes the changes and their diff without writing anything.
	DryRun bool
	// Apply makes the change.
	Apply ApplyFunc
}

// Operation says what happened to a file.
type Operation int

const (
	// OpCreate adds a file.
	OpCreate Operation = iota + 1
	// OpUpdate changes a file's content.
	OpUpdate
	// OpDelete removes a file.
	OpDelete
)

func (o Operation) String() string {
	switch o {
	case OpCreate:
		return "create"
	case OpUpdate:
		return "update"
	case OpDelete:
		return "delete"
	default:
		return "unknown"
	}
}

// FileChange is one changed file.
type FileChange struct {
	Path string
	Op   Operation
	// Diff is a unified diff of the file, from a/Path to b/Path.
	Diff string
}

// UpdateResult says what an update did.
type UpdateResult struct {
	// Unchanged is true when the change left the tree as it was; nothing was written.
	Unchanged bool
	// Branch is the branch that was (or, on a dry run, would be) written.
	Branch string
	// Base is the commit the change was applied to.
	Base string
	// Commit is the new commit, empty when unchanged or on a dry run.
	Commit string
	// Changes lists the changed files, sorted by path.
	Changes []FileChange
}

// Source gives access to the trees of one repository.
//
// Implementations are safe for concurrent use. Update is atomic: either the
// branch moves to a commit holding the whole change, or nothing is written.
// Concurrent updates of the same branch never lose each other's commits.
type Source interface {
	// View resolves rev ("" for the default branch) to a snapshot.
	View(ctx context.Context, rev string) (*Snapshot, error)
	// Update applies req.Apply on top of the branch req.Revision.
	Update(ctx context.Context, req *UpdateRequest) (*UpdateResult, error)
}
