package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
)

// Sentinel errors. Handlers wrap them (fmt.Errorf("...: %w", ErrNotFound)) and
// [Mux.Run] turns them into the protocol's exit codes.
var (
	// ErrNotFound reports that the requested resource does not exist.
	// A handler's error wrapping it makes the module exit with code 2.
	ErrNotFound = errors.New("not found")
	// ErrInvalid reports a request the handler cannot serve as given, such as
	// a name it cannot store. A handler's error wrapping it makes the module
	// exit with code 1 and print {"code":"invalid_argument","message":...}.
	ErrInvalid = errors.New("invalid argument")
)

// Invalid returns an error wrapping [ErrInvalid] whose message is
// fmt.Sprintf(format, args...), without the sentinel's own text. A %w verb
// wraps its argument as in [fmt.Errorf].
func Invalid(format string, args ...any) error {
	return &invalidError{err: fmt.Errorf(format, args...)}
}

type invalidError struct{ err error }

func (e *invalidError) Error() string   { return e.err.Error() }
func (e *invalidError) Unwrap() []error { return []error{ErrInvalid, e.err} }

// Dir is the writable repository tree of a put or delete. Names are
// slash-separated and relative to the tree's root, as for [fs.ValidPath];
// anything else, such as a name with "..", is rejected with an error wrapping
// [fs.ErrInvalid]. Reads through the embedded [fs.FS] see earlier writes.
//
// The files in the tree when the handler returns become the commit. Git keeps
// no directories, only files: WriteFile creates the parents it needs, and a
// directory left empty by Remove disappears from the commit.
type Dir interface {
	fs.FS
	// WriteFile creates or replaces the file at name, creating missing parent
	// directories.
	WriteFile(name string, data []byte) error
	// Remove deletes the file at name. Removing a missing file returns an
	// error wrapping fs.ErrNotExist.
	Remove(name string) error
}

// Type names the type of the resources a request is about. cupd gives a
// module the kind on the command line and the rest in the environment
// (CUP_API_VERSION, CUP_GROUP, CUP_VERSION and CUP_PLURAL); fields the host
// does not set are empty.
type Type struct {
	// APIVersion is "group/version" as in a resource's apiVersion, e.g.
	// "flags.cup.dev/v1alpha1".
	APIVersion string
	// Group is the API group, e.g. "flags.cup.dev".
	Group string
	// Version is the API version within the group, e.g. "v1alpha1".
	Version string
	// Kind is the resource kind, e.g. "Flag"; never empty.
	Kind string
	// Plural is the lower-case plural name used in URLs, e.g. "flags".
	Plural string
}

// GetRequest asks for one resource.
type GetRequest struct {
	// FS is the read-only repository tree.
	FS        fs.FS
	Type      Type
	Namespace string
	Name      string
}

// ListRequest asks for every resource of a type in one namespace.
type ListRequest struct {
	// FS is the read-only repository tree.
	FS        fs.FS
	Type      Type
	Namespace string
	// Labels, when not empty, asks for only the resources that have each of
	// these labels with the same value. Handlers may use it to read less;
	// [Mux.Run] applies it to what they return in any case.
	Labels map[string]string
}

// PutRequest asks to create or replace a resource.
type PutRequest struct {
	// Dir is the writable repository tree.
	Dir  Dir
	Type Type
	// Resource is the resource to store. Its apiVersion, kind, namespace and
	// name are those of the request, and its spec is nil or a JSON object.
	// The handler may keep it.
	Resource *Resource
}

// DeleteRequest asks to remove a resource.
type DeleteRequest struct {
	// Dir is the writable repository tree.
	Dir       Dir
	Type      Type
	Namespace string
	Name      string
}

// Handler maps the resources of one or more kinds onto files.
//
// Resources it returns may leave apiVersion, kind and namespace empty:
// [Mux.Run] sets them from the request. Get and Delete of a missing resource return an error wrapping
// [ErrNotFound]. List of an empty or missing namespace returns no resources
// and no error; it may return them in any order (they are printed sorted by
// name). A bad request is an error wrapping [ErrInvalid], e.g. from
// [Invalid]; a malformed file should be an error whose message names it. A
// module serves one request per process, so handlers need not be safe for
// concurrent use unless the program runs them concurrently itself.
type Handler interface {
	Get(ctx context.Context, req *GetRequest) (*Resource, error)
	List(ctx context.Context, req *ListRequest) ([]*Resource, error)
	Put(ctx context.Context, req *PutRequest) error
	Delete(ctx context.Context, req *DeleteRequest) error
}

// EachLister is a [Handler] that can also list a namespace one resource at a
// time, for namespaces too large to hold in memory at once. [Mux.Run] calls
// ListEach instead of List when the handler has it, and prints each resource
// yield receives, checked and filtered by the request's labels, as soon as
// it gets it: the array it prints is in the handler's order, not sorted by
// name (cupd sorts). yield returns an error when printing fails or the
// resource does not belong to the request; ListEach should then stop and
// return it. Resources passed to yield are not kept.
type EachLister interface {
	ListEach(ctx context.Context, req *ListRequest, yield func(*Resource) error) error
}
