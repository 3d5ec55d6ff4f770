// Package controllertest helps test WASM controllers written with package
// controller without compiling them to WASM: [MapDir] is an in-memory
// repository tree and [Run] calls a [controller.Mux] as cupd calls a module.
package controllertest

import (
	"context"
	"io/fs"
	"path"
	"strings"
	"testing/fstest"

	"github.com/cup-dev/cup/sdk/go/controller"
)

// MapDir is an in-memory [controller.Dir]: an [fstest.MapFS] that handlers can
// write. Directories are implied by the files in them, as in Git. A MapDir is
// not safe for concurrent writes.
type MapDir fstest.MapFS

var _ controller.Dir = MapDir(nil)

// Open opens the named file or directory.
func (d MapDir) Open(name string) (fs.File, error) { return fstest.MapFS(d).Open(name) }

// WriteFile creates or replaces the file at name. Writing a file where a
// directory is, or under a file, is an error.
func (d MapDir) WriteFile(name string, data []byte) error {
	if err := d.check("write", name); err != nil {
		return err
	}
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		if f := d[dir]; f != nil && !f.Mode.IsDir() {
			return &fs.PathError{Op: "write", Path: name, Err: fs.ErrExist}
		}
	}
	prefix := name + "/"
	for other := range d {
		if strings.HasPrefix(other, prefix) {
			return &fs.PathError{Op: "write", Path: name, Err: fs.ErrExist}
		}
	}
	d[name] = &fstest.MapFile{Data: append([]byte(nil), data...), Mode: 0o644}
	return nil
}

// Remove deletes the file at name; a missing file is an error wrapping
// fs.ErrNotExist.
func (d MapDir) Remove(name string) error {
	if err := d.check("remove", name); err != nil {
		return err
	}
	if f := d[name]; f == nil || f.Mode.IsDir() {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(d, name)
	return nil
}

func (d MapDir) check(op, name string) error {
	if !fs.ValidPath(name) || name == "." {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return nil
}

// Call is one call of a module, as cupd makes it.
type Call struct {
	// Args are the command-line arguments without the program name, e.g.
	// {"get", "Flag", "default", "dark-mode"}.
	Args []string
	// Env is the environment, e.g. {"CUP_API_VERSION": "flags.cup.dev/v1alpha1"}.
	Env map[string]string
	// Stdin holds the resource of a put.
	Stdin string
}

// Result is what one call of a module printed and returned.
type Result struct {
	// Code is the exit code: 0 on success, 1 on error, 2 for not found.
	Code   int
	Stdout string
	Stderr string
}

// Run makes call c of m with dir as the repository tree, which get and list
// see read-only and a put or delete changes.
func Run(ctx context.Context, m *controller.Mux, dir MapDir, c Call) Result {
	var stdout, stderr strings.Builder
	code := m.Run(ctx, &controller.Invocation{
		Args:   c.Args,
		Env:    c.Env,
		Stdin:  strings.NewReader(c.Stdin),
		Stdout: &stdout,
		Stderr: &stderr,
		FS:     readOnly{dir},
		Dir:    dir,
	})
	return Result{Code: code, Stdout: stdout.String(), Stderr: stderr.String()}
}

// readOnly hides the writing methods of a MapDir from handlers that would
// look for them.
type readOnly struct{ fsys fs.FS }

func (r readOnly) Open(name string) (fs.File, error) { return r.fsys.Open(name) }
