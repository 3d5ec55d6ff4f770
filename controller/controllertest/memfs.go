package controllertest

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"testing/fstest"

	"github.com/cup-dev/cup/controller"
)

var (
	_ controller.WriteFS = (*MemFS)(nil)
	_ fs.ReadFileFS      = (*MemFS)(nil)
	_ fs.ReadDirFS       = (*MemFS)(nil)
	_ fs.StatFS          = (*MemFS)(nil)
)

// MemFS is an in-memory [controller.WriteFS] for tests, built on
// [fstest.MapFS]. Directories exist exactly while they hold files, as in a
// Git tree: writing a file creates its parents and removing the last file of a
// directory removes the directory.
//
// WriteFile and Remove take the paths [controller.CheckWritePath] accepts, as
// every WriteFS does, and reject anything else with an [*fs.PathError]
// wrapping [fs.ErrInvalid]. A file cannot be written where a directory is, or
// below another file.
//
// A MemFS is safe for concurrent use. Files handed out by Open keep the
// content they had when opened.
type MemFS struct {
	mu    sync.RWMutex
	files fstest.MapFS
	// dirs counts the files below each directory, so that WriteFile can tell
	// files from directories without scanning the map.
	dirs map[string]int
}

// NewMemFS returns a MemFS holding a copy of files, which maps paths to
// contents. Unlike WriteFile it takes any path [fs.ValidPath] accepts other
// than the root and those holding a NUL byte, such as .git/config, so that
// tests can check that controllers leave alone what a tree may hold but a
// WriteFS does not write.
// It returns an error wrapping [fs.ErrInvalid] for any other path, or if one
// path is a directory of another.
func NewMemFS(files map[string][]byte) (*MemFS, error) {
	m := &MemFS{files: fstest.MapFS{}, dirs: map[string]int{}}
	// Sorted, so that the error for a bad set of paths is deterministic.
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !fs.ValidPath(name) || name == "." || strings.IndexByte(name, 0) >= 0 {
			return nil, &fs.PathError{Op: "write", Path: name, Err: fmt.Errorf("%w: not the path of a file in a tree", fs.ErrInvalid)}
		}
		if err := m.write(name, files[name], 0o644); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Open implements [fs.FS].
func (m *MemFS) Open(name string) (fs.File, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.files.Open(name)
}

// ReadFile implements [fs.ReadFileFS]. The caller owns the returned slice.
func (m *MemFS) ReadFile(name string) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.files.ReadFile(name)
}

// ReadDir implements [fs.ReadDirFS].
func (m *MemFS) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.files.ReadDir(name)
}

// Stat implements [fs.StatFS].
func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.files.Stat(name)
}

// WriteFile implements [controller.WriteFS]. It stores a copy of data.
func (m *MemFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if err := controller.CheckWritePath(name); err != nil {
		return &fs.PathError{Op: "write", Path: name, Err: err}
	}
	return m.write(name, data, perm)
}

// write is WriteFile for a path already checked.
func (m *MemFS) write(name string, data []byte, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dirs[name] > 0 {
		return &fs.PathError{Op: "write", Path: name, Err: fmt.Errorf("%w: is a directory", fs.ErrInvalid)}
	}
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		if _, ok := m.files[dir]; ok {
			return &fs.PathError{Op: "write", Path: name, Err: fmt.Errorf("%w: %s is a file", fs.ErrInvalid, dir)}
		}
	}
	if _, ok := m.files[name]; !ok {
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			m.dirs[dir]++
		}
	}
	m.files[name] = &fstest.MapFile{Data: bytes.Clone(data), Mode: perm.Perm()}
	return nil
}

// Remove implements [controller.WriteFS]. Removing a directory is an error
// wrapping [fs.ErrInvalid].
func (m *MemFS) Remove(name string) error {
	if err := controller.CheckWritePath(name); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[name]; !ok {
		if m.dirs[name] > 0 {
			return &fs.PathError{Op: "remove", Path: name, Err: fmt.Errorf("%w: is a directory", fs.ErrInvalid)}
		}
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(m.files, name)
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		if m.dirs[dir]--; m.dirs[dir] == 0 {
			delete(m.dirs, dir)
		}
	}
	return nil
}

// Files returns a copy of every file's content, keyed by path.
// Comparing two results shows exactly which bytes a change touched.
func (m *MemFS) Files() map[string][]byte {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string][]byte, len(m.files))
	for name, f := range m.files {
		out[name] = bytes.Clone(f.Data)
	}
	return out
}

// Snapshot returns an immutable copy of the current tree, like the read-only
// tree of one commit. Later writes to m do not show through it.
func (m *MemFS) Snapshot() fs.FS {
	m.mu.RLock()
	defer m.mu.RUnlock()
	snap := make(fstest.MapFS, len(m.files))
	for name, f := range m.files {
		c := *f
		c.Data = bytes.Clone(f.Data)
		snap[name] = &c
	}
	return readOnly{snap}
}

// readOnly hides the map behind fs.FS so that callers cannot edit a snapshot.
type readOnly struct{ m fstest.MapFS }

func (r readOnly) Open(name string) (fs.File, error)          { return r.m.Open(name) }
func (r readOnly) ReadFile(name string) ([]byte, error)       { return r.m.ReadFile(name) }
func (r readOnly) ReadDir(name string) ([]fs.DirEntry, error) { return r.m.ReadDir(name) }
func (r readOnly) Stat(name string) (fs.FileInfo, error)      { return r.m.Stat(name) }
