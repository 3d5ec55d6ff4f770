package wasm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/cup-dev/cup/controller"
)

// ExecRequest is one run of a module beyond the controller verbs: a
// protocol of its own, such as a reconciler's
// `reconcile <reconciler>`.
type ExecRequest struct {
	// Verb is the first argument, after argv[0] (the controller's name).
	// It names the run in metrics, spans and errors, so it should come
	// from a small set ("reconcile"), never from user data.
	Verb string
	// Args follow the verb.
	Args []string
	// Stdin is what the module reads on stdin.
	Stdin []byte
	// FS is the tree mounted read-only at "/"; nil mounts an empty one.
	FS fs.FS
}

// ExecResult is how a module run that ended by itself ended.
type ExecResult struct {
	// Stdout is what the module wrote to stdout, at most the Spec's
	// MaxOutputBytes.
	Stdout []byte
	// ExitCode is the module's exit code.
	ExitCode uint32
	// Message is, when ExitCode is not 0, what the module said, as for a
	// failed controller call: the "message" of a JSON message
	// {"message": "..."} on stderr or stdout, or else its stderr, or else
	// its stdout, a Go crash's goroutine dump cut off, bounded to about
	// 1 KiB. It is empty after exit code 0, when what the module wrote to
	// stderr goes to the Runtime's logger at debug level.
	Message string
}

// Exec runs the module with arguments req.Verb and req.Args, req.Stdin on
// stdin, req.FS mounted read-only at "/" and an empty environment, under
// the same sandbox and limits as the controller's calls (see the package
// documentation), and counts and traces the run as one of req.Verb.
//
// A module that exits by itself, with any exit code, gives a result and
// no error: what the exit code means is the caller's protocol. Otherwise
// the error says why it was stopped, naming the module: it wraps
// [controller.ErrLimit] when it needed more memory or wrote more output
// than the Spec allows, and also when it ran past the Spec's timeout
// (then with [context.DeadlineExceeded]); the caller's context's error
// when that ended first; and [controller.ErrFailed] when it trapped
// (crashed) or could not be instantiated. A verb that is empty, or an
// argument holding a NUL byte, gives an error wrapping
// [controller.ErrInvalid].
func (c *Controller) Exec(ctx context.Context, req *ExecRequest) (*ExecResult, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: exec: no request", controller.ErrInvalid)
	}
	if req.Verb == "" {
		return nil, fmt.Errorf("%w: exec: the verb must be non-empty", controller.ErrInvalid)
	}
	for _, a := range append([]string{req.Verb}, req.Args...) {
		if strings.ContainsRune(a, 0) {
			return nil, fmt.Errorf("%w: exec: arguments must be free of NUL bytes, got %q", controller.ErrInvalid, a)
		}
	}
	fsys := req.FS
	if fsys == nil {
		fsys = emptyTree{}
	}
	cl := &call{
		op:    bounded(fmt.Sprintf("module %q: %s", c.name, strings.Join(append([]string{req.Verb}, req.Args...), " "))),
		verb:  req.Verb,
		args:  req.Args,
		stdin: req.Stdin,
		fs:    readOnlyMount(fsys),
		exec:  true,
	}
	res, err := c.run(ctx, cl)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			// Stopped by the Spec's timeout, not the caller's deadline.
			return nil, &limitError{err}
		}
		return nil, err
	}
	out := &ExecResult{Stdout: res.stdout, ExitCode: res.exit}
	if res.exit != 0 {
		out.Message = message(res)
	} else {
		c.logStderr(ctx, cl, res)
	}
	return out, nil
}

// limitError is the error of a run stopped by its timeout, which wraps
// context.DeadlineExceeded: it wraps controller.ErrLimit too, with the
// same message.
type limitError struct{ err error }

func (e *limitError) Error() string   { return e.err.Error() }
func (e *limitError) Unwrap() []error { return []error{e.err, controller.ErrLimit} }

// emptyTree is an fs.FS holding an empty root directory and nothing else.
type emptyTree struct{}

func (emptyTree) Open(name string) (fs.File, error) {
	if name == "." {
		return emptyDir{}, nil
	}
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// emptyDir is the root of emptyTree, open.
type emptyDir struct{}

func (emptyDir) Stat() (fs.FileInfo, error) { return emptyDirInfo{}, nil }

func (emptyDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: ".", Err: errors.New("is a directory")}
}

func (emptyDir) Close() error { return nil }

func (emptyDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if n > 0 {
		return nil, io.EOF
	}
	return []fs.DirEntry{}, nil
}

// emptyDirInfo describes the root of emptyTree.
type emptyDirInfo struct{}

func (emptyDirInfo) Name() string       { return "." }
func (emptyDirInfo) Size() int64        { return 0 }
func (emptyDirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o555 }
func (emptyDirInfo) ModTime() time.Time { return time.Time{} }
func (emptyDirInfo) IsDir() bool        { return true }
func (emptyDirInfo) Sys() any           { return nil }
