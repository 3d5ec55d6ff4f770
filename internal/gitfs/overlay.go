package gitfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/cup-dev/cup/internal/writepath"
	"github.com/cup-dev/cup/source"
)

// Overlay is a writable view over an [FS]: writes and removals are kept in
// memory and reads see them. It implements [source.Writer] as well as
// fs.ReadFileFS, fs.ReadDirFS, fs.StatFS and fs.ReadLinkFS.
//
// Paths are checked as the source.Writer contract asks: a path that is not
// an fs.ValidPath, that names the root, contains a NUL byte or a backslash,
// has a ".git" element, runs through an existing file or would replace a
// directory is rejected with an error wrapping [source.ErrInvalidPath] (and
// fs.ErrInvalid).
// Directories are implied by the files beneath them: they appear when a file
// is written beneath them and vanish when their last file is removed.
// Writing an existing file keeps its mode; a new file is executable when
// perm has any execute bit. Writes never follow symbolic links: writing a
// link replaces it with a regular file.
//
// An Overlay is safe for concurrent use.
type Overlay struct {
	base *FS

	mu      sync.Mutex
	files   map[string]*overlayFile
	live    map[string]int // directory → number of live overlay files beneath it
	removed map[string]int // directory → number of removed base files beneath it
}

var (
	_ source.Writer = (*Overlay)(nil)
	_ fs.ReadFileFS = (*Overlay)(nil)
	_ fs.ReadDirFS  = (*Overlay)(nil)
	_ fs.StatFS     = (*Overlay)(nil)
	_ fs.ReadLinkFS = (*Overlay)(nil)
)

// overlayFile is a file written to the overlay or, with removed set, a file
// of the base removed through it.
type overlayFile struct {
	data    []byte // never modified once stored
	mode    filemode.FileMode
	removed bool
}

// NewOverlay returns an empty overlay over base.
func NewOverlay(base *FS) *Overlay {
	return &Overlay{
		base:    base,
		files:   make(map[string]*overlayFile),
		live:    make(map[string]int),
		removed: make(map[string]int),
	}
}

// Base returns the file system the overlay is over.
func (o *Overlay) Base() *FS { return o.base }

// kind is what a path names in the merged view.
type kind int

const (
	kindNone kind = iota
	kindDir
	kindFile
	kindSymlink
	kindGitlink
)

// node is what a path names in the merged view.
type node struct {
	kind kind
	// over is the overlay file, for a file written to the overlay.
	over *overlayFile
	// base is the base entry, for anything else; for a directory the zero
	// entry when the base has no directory there.
	base entry
}

func (n *node) baseDir() bool { return n.kind == kindDir && n.base.isDir() }

// ancestors calls f with each proper ancestor of p ("a", "a/b" for "a/b/c")
// until f returns false.
func ancestors(p string, f func(string) bool) {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && !f(p[:i]) {
			return
		}
	}
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// baseLstat returns the base entry at p, gitlinks included, without
// following symbolic links anywhere in p.
func (o *Overlay) baseLstat(p string) (entry, bool, error) {
	e, hop, err := o.base.walk(p, false, true)
	switch {
	case err == nil && hop == nil:
		return e, true, nil
	case err == nil || errors.Is(err, fs.ErrNotExist):
		return entry{}, false, nil
	}
	return entry{}, false, err
}

// lstat returns what p names in the merged view, without following a
// symbolic link in its last element; symbolic links in earlier elements
// make p name nothing. Call with o.mu held.
func (o *Overlay) lstat(p string) (node, error) {
	if p == "." {
		return node{kind: kindDir, base: entry{name: ".", mode: modeDir, hash: o.base.root}}, nil
	}
	shadowed := false
	ancestors(p, func(a string) bool {
		if f := o.files[a]; f != nil && !f.removed {
			shadowed = true
		}
		return !shadowed
	})
	if shadowed {
		return node{}, nil
	}
	if f := o.files[p]; f != nil {
		switch {
		case !f.removed:
			return node{kind: kindFile, over: f}, nil
		case o.live[p] > 0:
			return node{kind: kindDir}, nil
		}
		return node{}, nil
	}
	be, found, err := o.baseLstat(p)
	if err != nil {
		return node{}, err
	}
	if o.live[p] > 0 {
		if found && be.isDir() {
			return node{kind: kindDir, base: be}, nil
		}
		return node{kind: kindDir}, nil
	}
	switch {
	case !found:
		return node{}, nil
	case be.isDir():
		ok, err := o.survives(p, be.hash)
		if err != nil || !ok {
			return node{}, err
		}
		return node{kind: kindDir, base: be}, nil
	case be.isSymlink():
		return node{kind: kindSymlink, base: be}, nil
	case be.isGitlink():
		return node{kind: kindGitlink, base: be}, nil
	}
	return node{kind: kindFile, base: be}, nil
}

// survives reports whether the base directory dir, with tree h, still holds
// anything once the files removed through the overlay are gone.
func (o *Overlay) survives(dir string, h plumbing.Hash) (bool, error) {
	if o.removed[dir] == 0 {
		return true, nil
	}
	t, err := o.base.store.tree(h)
	if err != nil {
		return false, err
	}
	for i := range t.entries {
		e := &t.entries[i]
		child := join(dir, e.name)
		if !e.isDir() {
			if f := o.files[child]; f == nil || !f.removed {
				return true, nil
			}
			continue
		}
		if ok, err := o.survives(child, e.hash); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// resolve returns the path name leads to and what it names, following
// symbolic links in every element but the last, and in the last with
// follow. Call with o.mu held.
func (o *Overlay) resolve(name string, follow bool) (string, node, error) {
	if name == "." {
		n, err := o.lstat(".")
		return ".", n, err
	}
	links := 0
restart:
	for i := 0; i <= len(name); i++ {
		if i < len(name) && name[i] != '/' {
			continue
		}
		p, last := name[:i], i == len(name)
		n, err := o.lstat(p)
		if err != nil {
			return "", node{}, err
		}
		switch {
		case n.kind == kindNone:
			return "", node{}, fs.ErrNotExist
		case n.kind == kindSymlink && (!last || follow):
			if links++; links > maxSymlinks {
				return "", node{}, errTooManyLinks
			}
			target, err := o.base.store.ReadObject(plumbing.BlobObject, n.base.hash)
			if err != nil {
				return "", node{}, err
			}
			rest := ""
			if !last {
				rest = name[i+1:]
			}
			var ok bool
			if name, ok = linkPath(path.Dir(p), string(target), rest); !ok {
				return "", node{}, fs.ErrNotExist
			}
			if name == "." {
				n, err := o.lstat(".")
				return ".", n, err
			}
			goto restart
		case last:
			return p, n, nil
		case n.kind != kindDir:
			return "", node{}, fs.ErrNotExist
		}
	}
	panic("unreachable")
}

func (o *Overlay) lookup(op, name string, follow bool) (string, node, error) {
	if !fs.ValidPath(name) {
		return "", node{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	p, n, err := o.resolve(name, follow)
	if err != nil {
		return "", node{}, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return p, n, nil
}

// Open opens the named file or directory.
func (o *Overlay) Open(name string) (fs.File, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p, n, err := o.lookup("open", name, true)
	if err != nil {
		return nil, err
	}
	info, err := o.info(path.Base(name), n)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if n.kind == kindDir {
		// List now: the overlay may change before the directory is read.
		entries, err := o.readDir(p, n)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return &openDir{info: info, list: func() ([]fs.DirEntry, error) { return entries, nil }}, nil
	}
	data, err := o.read(n)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &openFile{info: info, r: bytes.NewReader(data)}, nil
}

// ReadFile returns the content of the named file. The caller owns the
// returned slice.
func (o *Overlay) ReadFile(name string) ([]byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, n, err := o.lookup("read", name, true)
	if err != nil {
		return nil, err
	}
	if n.kind == kindDir {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errIsDir}
	}
	data, err := o.read(n)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	if n.over != nil {
		data = bytes.Clone(data)
	}
	return data, nil
}

// read returns the content of a file node; overlay content is shared.
func (o *Overlay) read(n node) ([]byte, error) {
	if n.over != nil {
		return n.over.data, nil
	}
	return o.base.store.ReadObject(plumbing.BlobObject, n.base.hash)
}

// Stat returns information about the named file, following symbolic links.
func (o *Overlay) Stat(name string) (fs.FileInfo, error) {
	return o.stat("stat", name, true)
}

// Lstat returns information about the named file without following a
// symbolic link in its last element.
func (o *Overlay) Lstat(name string) (fs.FileInfo, error) {
	return o.stat("lstat", name, false)
}

func (o *Overlay) stat(op, name string, follow bool) (fs.FileInfo, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, n, err := o.lookup(op, name, follow)
	if err != nil {
		return nil, err
	}
	info, err := o.info(path.Base(name), n)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return info, nil
}

// ReadLink returns the target of the named symbolic link.
func (o *Overlay) ReadLink(name string) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, n, err := o.lookup("readlink", name, false)
	if err != nil {
		return "", err
	}
	if n.kind != kindSymlink {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	data, err := o.read(n)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	return string(data), nil
}

func (o *Overlay) info(name string, n node) (*fileInfo, error) {
	switch {
	case n.over != nil:
		return &fileInfo{name: name, mode: fsMode(n.over.mode), size: int64(len(n.over.data))}, nil
	case n.kind == kindDir:
		return &fileInfo{name: name, mode: fsMode(modeDir), sys: n.base.hash}, nil
	}
	size, err := o.base.store.objectSize(n.base.hash)
	if err != nil {
		return nil, err
	}
	return o.base.info(name, n.base, size), nil
}

// ReadDir returns the entries of the named directory, sorted by name.
func (o *Overlay) ReadDir(name string) ([]fs.DirEntry, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p, n, err := o.lookup("readdir", name, true)
	if err != nil {
		return nil, err
	}
	if n.kind != kindDir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errNotDir}
	}
	list, err := o.readDir(p, n)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	return list, nil
}

// readDir lists the merged directory p. Call with o.mu held.
func (o *Overlay) readDir(p string, n node) ([]fs.DirEntry, error) {
	var (
		list []fs.DirEntry
		t    *tree
	)
	if n.baseDir() {
		var err error
		if t, err = o.base.store.tree(n.base.hash); err != nil {
			return nil, err
		}
		list = make([]fs.DirEntry, 0, len(t.entries))
		for i := range t.entries {
			e := &t.entries[i]
			if !e.visible() {
				continue
			}
			child := join(p, e.name)
			if f := o.files[child]; f != nil {
				switch {
				case !f.removed:
					list = append(list, &memEntry{name: e.name, mode: f.mode, size: int64(len(f.data))})
				case o.live[child] > 0:
					list = append(list, &memEntry{name: e.name, mode: modeDir})
				}
				continue
			}
			if e.isDir() && o.live[child] == 0 {
				ok, err := o.survives(child, e.hash)
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
			}
			list = append(list, &dirEntry{fsys: o.base, e: e})
		}
	}
	prefix := ""
	if p != "." {
		prefix = p + "/"
	}
	seen := make(map[string]bool)
	for fp, f := range o.files {
		rel, ok := strings.CutPrefix(fp, prefix)
		if !ok || f.removed {
			continue
		}
		elem, _, deeper := strings.Cut(rel, "/")
		if seen[elem] {
			continue
		}
		if t != nil {
			if e, ok := t.lookup(elem); ok && e.visible() {
				continue // listed above
			}
		}
		seen[elem] = true
		if deeper {
			list = append(list, &memEntry{name: elem, mode: modeDir})
		} else {
			list = append(list, &memEntry{name: elem, mode: f.mode, size: int64(len(f.data))})
		}
	}
	slices.SortFunc(list, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return list, nil
}

// memEntry is a directory entry for a file written to the overlay or a
// directory it implies.
type memEntry struct {
	name string
	mode filemode.FileMode
	size int64
}

func (m *memEntry) Name() string      { return m.name }
func (m *memEntry) IsDir() bool       { return m.mode == modeDir }
func (m *memEntry) Type() fs.FileMode { return fsMode(m.mode).Type() }
func (m *memEntry) String() string    { return fs.FormatDirEntry(m) }

func (m *memEntry) Info() (fs.FileInfo, error) {
	return &fileInfo{name: m.name, mode: fsMode(m.mode), size: m.size}, nil
}

// invalidPath returns the error for a path the overlay does not accept.
func invalidPath(op, name, why string) error {
	return &fs.PathError{Op: op, Path: name, Err: &invalidPathError{why: why}}
}

// invalidPathError is source.ErrInvalidPath with a reason. It also matches
// fs.ErrInvalid, which is what file systems usually report.
type invalidPathError struct{ why string }

func (e *invalidPathError) Error() string { return source.ErrInvalidPath.Error() + ": " + e.why }

func (e *invalidPathError) Is(target error) bool {
	return target == source.ErrInvalidPath || target == fs.ErrInvalid
}

// checkPath says why name is not a path a write may name (see
// writepath.Check, the one statement of the rule, which
// controller.CheckWritePath states too), or "".
func checkPath(name string) string {
	if err := writepath.Check(name); err != nil {
		return err.Error()
	}
	return ""
}

// WriteFile creates or replaces the file at name, creating the directories
// above it. The overlay keeps a copy of data.
func (o *Overlay) WriteFile(name string, data []byte, perm fs.FileMode) error {
	const op = "writefile"
	if why := checkPath(name); why != "" {
		return invalidPath(op, name, why)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var err error
	ancestors(name, func(a string) bool {
		var n node
		if n, err = o.lstat(a); err != nil {
			return false
		}
		if n.kind != kindNone && n.kind != kindDir {
			err = invalidPath(op, name, fmt.Sprintf("%s is not a directory", a))
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	n, err := o.lstat(name)
	if err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	var mode filemode.FileMode
	switch n.kind {
	case kindDir:
		return invalidPath(op, name, "is a directory")
	case kindGitlink:
		return invalidPath(op, name, "is a submodule")
	case kindFile:
		if n.over != nil {
			mode = n.over.mode
		} else {
			mode = n.base.mode
		}
	default:
		mode = filemode.Regular
		if perm&0o111 != 0 {
			mode = filemode.Executable
		}
	}
	prev := o.files[name]
	o.files[name] = &overlayFile{data: bytes.Clone(data), mode: mode}
	if prev == nil || prev.removed {
		o.count(o.live, name, 1)
	}
	if prev != nil && prev.removed {
		o.count(o.removed, name, -1)
	}
	return nil
}

// Remove removes the file at name. A missing file gives an error wrapping
// fs.ErrNotExist; a directory, one wrapping source.ErrInvalidPath.
func (o *Overlay) Remove(name string) error {
	const op = "remove"
	if why := checkPath(name); why != "" {
		return invalidPath(op, name, why)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	n, err := o.lstat(name)
	if err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	switch n.kind {
	case kindNone:
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	case kindDir:
		return invalidPath(op, name, "is a directory; remove the files in it")
	case kindGitlink:
		return invalidPath(op, name, "is a submodule")
	}
	if n.over != nil {
		o.count(o.live, name, -1)
		be, found, err := o.baseLstat(name)
		if err != nil {
			return &fs.PathError{Op: op, Path: name, Err: err}
		}
		if !found || be.isDir() || be.isGitlink() {
			delete(o.files, name)
			return nil
		}
	}
	o.files[name] = &overlayFile{removed: true}
	o.count(o.removed, name, 1)
	return nil
}

// count adds d to the counter of every directory above p.
func (o *Overlay) count(m map[string]int, p string, d int) {
	ancestors(p, func(a string) bool {
		if m[a] += d; m[a] == 0 {
			delete(m, a)
		}
		return true
	})
}

// Change is the net change of one file between the base and the overlay.
type Change struct {
	// Path is the path of the file.
	Path string
	// Op says whether the file was created, updated or deleted.
	Op source.Operation
	// Mode, Data and Hash describe the new file; they are zero for a delete.
	Mode filemode.FileMode
	Data []byte
	Hash plumbing.Hash
	// OldMode, OldData and OldHash describe the file in the base; they are
	// zero for a create.
	OldMode filemode.FileMode
	OldData []byte
	OldHash plumbing.Hash
}

// Diff returns a unified diff of the change; see [Diff].
func (c *Change) Diff() string {
	return Diff(c.Path, c.OldData, c.Data)
}

// Changes returns the net changes the overlay makes to its base, sorted by
// path. Writing a file with the content and mode it has in the base is no
// change, nor is writing and then removing a new file.
func (o *Overlay) Changes() ([]Change, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var changes []Change
	for _, p := range slices.Sorted(maps.Keys(o.files)) {
		f := o.files[p]
		be, found, err := o.baseLstat(p)
		if err != nil {
			return nil, err
		}
		found = found && be.isFile()
		c := Change{Path: p}
		if found {
			c.OldMode, c.OldHash = be.mode, be.hash
		}
		switch {
		case f.removed:
			c.Op = source.OpDelete
		case !found:
			c.Op = source.OpCreate
		default:
			c.Op = source.OpUpdate
		}
		if !f.removed {
			c.Mode, c.Data, c.Hash = f.mode, f.data, HashObject(plumbing.BlobObject, f.data)
			if found && c.Hash == be.hash && c.Mode == be.mode {
				continue
			}
		}
		if found {
			if c.OldData, err = o.base.store.ReadObject(plumbing.BlobObject, be.hash); err != nil {
				return nil, err
			}
		}
		changes = append(changes, c)
	}
	return changes, nil
}
