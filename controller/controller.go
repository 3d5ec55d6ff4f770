// Package controller defines how API resources map to files in a repository tree.
//
// A Controller knows nothing about Git. Reads receive a read-only [fs.FS] holding
// the tree of one commit; writes receive a [WriteFS] whose changes the caller turns
// into a commit. Implementations live beneath this package (template/, wasm/) and
// prove themselves against the conformance suite in controllertest.
//
// Controllers must be deterministic: the same tree and the same request give the
// same result. Callers rely on that to memoise reads by commit.
package controller

import (
	"context"
	"errors"
	"io/fs"

	"github.com/cup-dev/cup/internal/writepath"
)

// Sentinel errors. Implementations wrap them (fmt.Errorf("...: %w", ErrNotFound))
// so that callers can map them to API codes with errors.Is.
var (
	// ErrNotFound reports that the requested resource does not exist in the tree.
	ErrNotFound = errors.New("not found")
	// ErrInvalid reports a request the controller cannot serve as given, such as
	// a name that would render a path outside the repository tree.
	ErrInvalid = errors.New("invalid request")
	// ErrMalformed reports a file in the tree that does not hold a valid resource.
	// The message names the file.
	ErrMalformed = errors.New("malformed resource file")
	// ErrLimit reports a controller call stopped by a limit on its memory or
	// output.
	ErrLimit = errors.New("controller limit exceeded")
	// ErrFailed reports a fault of the controller itself, not of the request
	// or the tree: a module that exited 1, crashed, or wrote output that is
	// no resource. The message names the controller and carries, bounded,
	// what it said. Callers answer it as an internal error that shows the
	// message; a write without a precondition may take a get that failed so
	// as "absent" (controllers written for the original Cup exit 1 on a
	// missing resource).
	ErrFailed = errors.New("controller failed")
)

// Type identifies the kind of resource a request is about.
type Type struct {
	// Group is the API group, e.g. "flags.cup.dev".
	Group string
	// Version is the API version within the group, e.g. "v1alpha1".
	Version string
	// Kind is the resource kind, e.g. "Flag".
	Kind string
	// Plural is the lower-case plural name used in URLs, e.g. "flags".
	Plural string
}

// APIVersion returns "group/version" as it appears in a resource's apiVersion.
func (t Type) APIVersion() string { return t.Group + "/" + t.Version }

// Selector filters resources by their labels.
// A nil Selector matches every resource.
type Selector interface {
	Matches(labels map[string]string) bool
}

// WriteFS is a writable view of a repository tree.
// Paths are slash-separated and relative to the tree root, as for [fs.ValidPath].
// WriteFile and Remove take the paths of files a Git tree can hold, those
// [CheckWritePath] accepts, and reject anything else with an error wrapping
// [fs.ErrInvalid]. Reads through the embedded fs.FS see earlier writes.
type WriteFS interface {
	fs.FS
	// WriteFile creates or replaces the file at name, creating parent directories.
	WriteFile(name string, data []byte, perm fs.FileMode) error
	// Remove deletes the file at name. Removing a missing file returns an error
	// wrapping fs.ErrNotExist.
	Remove(name string) error
}

// CheckWritePath returns nil if name is a path a [WriteFS] writes and
// removes files at, and otherwise an error saying why not, which wraps
// [fs.ErrInvalid] and whose message is the reason alone, e.g. "has a .git
// element", for callers to wrap in an [fs.PathError]. Such a path is valid
// for [fs.ValidPath], is not the root ".", holds no NUL byte and no
// backslash, and has no element that is ".git" in any case (Git keeps its
// own files there, and case-insensitive file systems read .GIT as .git).
func CheckWritePath(name string) error { return writepath.Check(name) }

// ContentIDFS is an optional ability of a read-only file system: naming a
// file's content without reading it. Equal identifiers mean equal bytes; a
// Git tree's file system returns the blob id.
type ContentIDFS interface {
	fs.FS
	ContentID(name string) (string, error)
}

// ContentReader is an optional ability of a ContentIDFS: reading a file by
// the id ContentID or its directory entry gave, without looking its path up
// again. It suits a caller that reads each file once and keeps what it
// decoded, as a keyed listing does: the file system need not cache what it
// returns. A Git tree's file system reads the blob.
type ContentReader interface {
	ReadContent(id string) ([]byte, error)
}

// ContentIDEntry is an optional ability of the fs.DirEntry values a
// ContentIDFS's ReadDir returns: the id ContentID gives for the entry's
// file, read from the directory itself. ok is false where the entry cannot
// tell, such as for a symbolic link, whose target ContentID follows.
type ContentIDEntry interface {
	fs.DirEntry
	ContentID() (id string, ok bool)
}

// GetRequest asks for one resource.
type GetRequest struct {
	FS        fs.FS
	Type      Type
	Namespace string
	Name      string
}

// ListRequest asks for every resource of a type in one namespace.
type ListRequest struct {
	FS        fs.FS
	Type      Type
	Namespace string
	// Selector, when not nil, keeps only the resources whose labels it matches.
	Selector Selector
}

// PutRequest asks to create or replace a resource.
type PutRequest struct {
	FS       WriteFS
	Type     Type
	Resource *Resource
}

// DeleteRequest asks to remove a resource.
type DeleteRequest struct {
	FS        WriteFS
	Type      Type
	Namespace string
	Name      string
}

// Problem is a file that a listing left out because it holds nothing that can
// be served by the name its path gives: it does not decode, holds a resource
// of another namespace or another name than its path implies, or claims the
// name of another file's resource. A file holding a resource of another type
// is no problem: kinds may share a directory.
type Problem struct {
	// Origin is where the listing met it (a file path).
	Origin string
	// Err says what is wrong. It wraps ErrMalformed and names Origin.
	Err error
}

// ProblemLister is an optional ability of a Controller: listing what can be
// served while reporting each file left out, where List fails on the first.
// Its resources are those List would return were the problems fixed or
// removed, sorted by name and filtered by ListRequest.Selector; its problems
// are sorted by Origin. Errors other than problems (a namespace that cannot
// be read, a canceled context) fail it as they fail List.
type ProblemLister interface {
	ListProblems(ctx context.Context, req *ListRequest) ([]*Resource, []Problem, error)
}

// Listed is one resource found by a KeyedLister, not decoded yet.
type Listed struct {
	// Key identifies what the resource is made of, for the request's type and
	// namespace: two Listed values with the same non-empty Key decode to equal
	// results, in any tree. Empty when the controller cannot tell (then the
	// caller must decode).
	Key string
	// Origin says where the resource is kept (a file path), for messages.
	Origin string
	// Decode reads and decodes the resource. It returns nil and no error when
	// what it found holds no resource of the requested type (kinds may share
	// a directory). Errors are those List would return for it; one wrapping
	// ErrMalformed is a [Problem] of this one file, which the caller leaves out
	// and reports while listing the rest.
	Decode func() (*Resource, error)
}

// KeyedLister is an optional ability of a Controller: listing a namespace
// without decoding it, so that callers which keep decoded resources by Key
// decode only what they have not seen, e.g. after a commit that changed one
// file of ten thousand. It ignores ListRequest.Selector. Callers may call the
// Decode functions of one result concurrently, and after ListKeyed returned
// (the file system stays valid: it is a snapshot). The caller sorts
// the decoded resources by name and must treat two of them with the same
// name as problems of both, as List does.
type KeyedLister interface {
	ListKeyed(ctx context.Context, req *ListRequest) ([]Listed, error)
}

// FilePerResource is an optional ability of a Controller: promising that a
// Put or Delete changes only files that hold the one resource it names and
// nothing else, so that a write's diff shows nothing of other resources.
// The server shows callers who may not read everything the diffs of
// controllers without it only when no policy is in force.
type FilePerResource interface {
	FilePerResource() bool
}

// GetCostsList is an optional ability of a Controller: saying that a Get
// reads about as much as a List of the request's namespace, as when a
// namespace's resources share one file, so that a caller answering many
// Gets of one namespace does better to list it once and answer them from
// the listing (cupd does, in the background after the first Get of a
// namespace at a commit). Get must agree with List, as for every
// controller.
type GetCostsList interface {
	GetCostsList() bool
}

// ErrUnsupported reports that a controller cannot do what an optional
// ability asks for the type or request at hand; callers fall back to what
// every controller can do (comparing listings).
var ErrUnsupported = errors.New("not supported by this controller")

// PathMapper is an optional ability of a Controller: telling which resource
// a file keeps, so that a change of files (a commit's diff) maps straight to
// the resources it changed, without listing namespaces. Watches use it.
//
// MapPath returns the namespace and name of the resource of typ that the
// file at p would keep, and ok true, when p is where the controller keeps
// one (whether or not the file holds a valid resource); ok false when no
// resource of typ is kept at p. It must never answer ok false for a path a
// resource of typ is kept at: a caller would miss its change. When the
// controller cannot tell for typ, it returns an error wrapping
// ErrUnsupported. It does no I/O.
//
// ResourcePath goes the other way: the path of the file that keeps the
// resource, for following one resource through history. It fails with an
// error wrapping ErrUnsupported where MapPath does, and with one wrapping
// ErrInvalid for a namespace or name no file can be kept for.
type PathMapper interface {
	MapPath(typ Type, p string) (namespace, name string, ok bool, err error)
	ResourcePath(typ Type, namespace, name string) (string, error)
}

// NamespaceLister is an optional ability of a Controller: listing the
// namespaces that may hold resources of a type in a tree, sorted, for
// watches and lists across namespaces. It may name a namespace that holds
// no valid resource, never leave out one that holds some. An error wrapping
// ErrUnsupported says the controller cannot tell for the type.
type NamespaceLister interface {
	Namespaces(ctx context.Context, fsys fs.FS, typ Type) ([]string, error)
}

// Controller maps resources of the types bound to it onto files.
//
// Implementations must be safe for concurrent use. Get and Delete of a missing
// resource return an error wrapping ErrNotFound. List of an empty or missing
// namespace returns an empty slice, not an error. List returns resources sorted
// by name. Returned resources are owned by the caller.
//
// Get agrees with List on the same tree: a Get of a name List returns gives
// the same resource, and when List succeeds (and a ProblemLister reports no
// problem), a Get of a name it does not return fails with ErrNotFound. A
// caller holding a listing may answer Gets from it.
type Controller interface {
	Get(ctx context.Context, req *GetRequest) (*Resource, error)
	List(ctx context.Context, req *ListRequest) ([]*Resource, error)
	Put(ctx context.Context, req *PutRequest) error
	Delete(ctx context.Context, req *DeleteRequest) error
}
