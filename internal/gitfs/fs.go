package gitfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// maxSymlinks bounds how many symbolic links one lookup follows, as
// Linux's ELOOP limit does.
const maxSymlinks = 40

var (
	errIsDir        = errors.New("is a directory")
	errNotDir       = errors.New("not a directory")
	errTooManyLinks = errors.New("too many levels of symbolic links")
)

// FS is a read-only file system over one Git tree.
//
// Directories, regular files and symbolic links map to their fs.FS
// counterparts; submodules (gitlinks) and entries whose names are not valid
// path elements are hidden. Open, ReadFile, ReadDir and Stat follow
// symbolic links whose targets stay inside the tree; a link that points out
// of the tree, or nowhere, does not exist. Lstat and ReadLink do not follow
// the last element. File modes are 0644 or 0755 for files, 0755 for
// directories, and modification times are zero. The Sys method of the
// fs.FileInfo values returns the plumbing.Hash of the entry's object.
//
// An FS is safe for concurrent use.
type FS struct {
	store *Store
	root  plumbing.Hash
	// scan makes walks look names up in trees that are not cached by
	// scanning their content, without decoding or caching them: for one
	// path looked up in many commits, as a history does.
	scan bool
}

var (
	_ fs.ReadFileFS = (*FS)(nil)
	_ fs.ReadDirFS  = (*FS)(nil)
	_ fs.StatFS     = (*FS)(nil)
	_ fs.ReadLinkFS = (*FS)(nil)
)

// Root returns the id of the tree.
func (f *FS) Root() plumbing.Hash { return f.root }

// Open opens the named file or directory.
func (f *FS) Open(name string) (fs.File, error) {
	e, err := f.lookup("open", name, true)
	if err != nil {
		return nil, err
	}
	if e.isDir() {
		return &openDir{info: f.info(path.Base(name), e, 0), list: func() ([]fs.DirEntry, error) {
			return f.readDir(e.hash)
		}}, nil
	}
	data, err := f.store.ReadObject(plumbing.BlobObject, e.hash)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &openFile{info: f.info(path.Base(name), e, int64(len(data))), r: bytes.NewReader(data)}, nil
}

// ReadFile returns the content of the named file. The caller owns the
// returned slice.
func (f *FS) ReadFile(name string) ([]byte, error) {
	e, err := f.lookup("read", name, true)
	if err != nil {
		return nil, err
	}
	if e.isDir() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errIsDir}
	}
	data, err := f.store.ReadObject(plumbing.BlobObject, e.hash)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return data, nil
}

// ReadDir returns the entries of the named directory, sorted by name.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	e, err := f.lookup("readdir", name, true)
	if err != nil {
		return nil, err
	}
	if !e.isDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errNotDir}
	}
	list, err := f.readDir(e.hash)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	return list, nil
}

func (f *FS) readDir(h plumbing.Hash) ([]fs.DirEntry, error) {
	t, err := f.store.tree(h)
	if err != nil {
		return nil, err
	}
	list := make([]fs.DirEntry, 0, len(t.entries))
	for i := range t.entries {
		if e := &t.entries[i]; e.visible() {
			list = append(list, &dirEntry{fsys: f, e: e})
		}
	}
	return list, nil
}

// Stat returns information about the named file, following symbolic links.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	return f.stat("stat", name, true)
}

// Lstat returns information about the named file without following a
// symbolic link in its last element.
func (f *FS) Lstat(name string) (fs.FileInfo, error) {
	return f.stat("lstat", name, false)
}

func (f *FS) stat(op, name string, follow bool) (fs.FileInfo, error) {
	e, err := f.lookup(op, name, follow)
	if err != nil {
		return nil, err
	}
	var size int64
	if !e.isDir() {
		if size, err = f.store.objectSize(e.hash); err != nil {
			return nil, &fs.PathError{Op: op, Path: name, Err: err}
		}
	}
	return f.info(path.Base(name), e, size), nil
}

// ContentID returns an opaque identifier of the named file's content, its
// Git blob id, without reading the file: equal identifiers mean equal bytes.
// Symbolic links are followed. It implements controller.ContentIDFS.
func (f *FS) ContentID(name string) (string, error) {
	e, err := f.lookup("contentid", name, true)
	if err != nil {
		return "", err
	}
	if e.isDir() {
		return "", &fs.PathError{Op: "contentid", Path: name, Err: fs.ErrInvalid}
	}
	return string(e.hash[:]), nil
}

// ReadContent returns the content of the file whose content id is id, as
// ContentID or a directory entry gave it, without looking a path up and
// without adding it to the blob cache (see Store.ReadBlobOnce). Any blob of
// the repository reads, not only this tree's: it is for callers in the
// process, not for what a controller's module asks. The caller owns the
// returned slice.
func (f *FS) ReadContent(id string) ([]byte, error) {
	var h plumbing.Hash
	if len(id) != len(h) {
		return nil, &fs.PathError{Op: "readcontent", Path: fmt.Sprintf("%x", id), Err: fs.ErrInvalid}
	}
	copy(h[:], id)
	data, err := f.store.ReadBlobOnce(h)
	if err != nil {
		return nil, &fs.PathError{Op: "readcontent", Path: h.String(), Err: err}
	}
	return data, nil
}

// ReadLink returns the target of the named symbolic link.
func (f *FS) ReadLink(name string) (string, error) {
	e, err := f.lookup("readlink", name, false)
	if err != nil {
		return "", err
	}
	if !e.isSymlink() {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	data, err := f.store.ReadObject(plumbing.BlobObject, e.hash)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	return string(data), nil
}

func (f *FS) info(name string, e entry, size int64) *fileInfo {
	return &fileInfo{name: name, mode: fsMode(e.mode), size: size, sys: e.hash}
}

// lookup returns the entry name refers to. With follow, a symbolic link in
// the last element is followed too. Errors are *fs.PathError values.
func (f *FS) lookup(op, name string, follow bool) (entry, error) {
	if !fs.ValidPath(name) {
		return entry{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	e, err := f.resolve(name, follow)
	if err != nil {
		return entry{}, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return e, nil
}

func (f *FS) resolve(name string, follow bool) (entry, error) {
	for links := 0; ; links++ {
		e, link, err := f.walk(name, follow, false)
		if err != nil || link == nil {
			return e, err
		}
		if links == maxSymlinks {
			return entry{}, errTooManyLinks
		}
		target, err := f.store.ReadObject(plumbing.BlobObject, link.target)
		if err != nil {
			return entry{}, err
		}
		var ok bool
		if name, ok = linkPath(link.dir, string(target), link.rest); !ok {
			return entry{}, fs.ErrNotExist
		}
	}
}

// symlinkHop is a symbolic link met while walking a path: the directory
// holding it, the blob holding its target and the rest of the path after it.
type symlinkHop struct {
	dir, rest string
	target    plumbing.Hash
}

// walk walks name down from the root. It stops at a symbolic link that must
// be followed and returns it instead of an entry. With raw, entries the
// file system hides (gitlinks) are found too.
func (f *FS) walk(name string, follow, raw bool) (entry, *symlinkHop, error) {
	cur := entry{name: ".", mode: modeDir, hash: f.root}
	if name == "." {
		return cur, nil, nil
	}
	rest := name
	for {
		elem, after, more := strings.Cut(rest, "/")
		e, ok, err := f.store.treeEntry(cur.hash, elem, f.scan)
		if err != nil {
			return entry{}, nil, err
		}
		if !ok || !raw && !e.visible() {
			return entry{}, nil, fs.ErrNotExist
		}
		if e.isSymlink() && (more || follow) {
			dir := name[:len(name)-len(rest)]
			return entry{}, &symlinkHop{dir: strings.TrimSuffix(dir, "/"), rest: after, target: e.hash}, nil
		}
		if !more {
			return e, nil, nil
		}
		if !e.isDir() {
			return entry{}, nil, fs.ErrNotExist
		}
		cur, rest = e, after
	}
}

// linkPath returns the path a symbolic link with the given target leads to,
// when the link sits in directory dir and rest follows it in the path being
// resolved. It reports false for targets that leave the tree.
func linkPath(dir, target, rest string) (string, bool) {
	if target == "" || strings.HasPrefix(target, "/") || strings.ContainsRune(target, 0) {
		return "", false
	}
	p := path.Join(dir, target, rest)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}

// fileInfo describes a file or directory.
type fileInfo struct {
	name string
	mode fs.FileMode
	size int64
	sys  any
}

func (i *fileInfo) Name() string       { return i.name }
func (i *fileInfo) Size() int64        { return i.size }
func (i *fileInfo) Mode() fs.FileMode  { return i.mode }
func (i *fileInfo) ModTime() time.Time { return time.Time{} }
func (i *fileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i *fileInfo) Sys() any           { return i.sys }

// dirEntry is an entry of a directory of an FS.
type dirEntry struct {
	fsys *FS
	e    *entry
}

// ContentID implements controller.ContentIDEntry: a file's blob id, as
// FS.ContentID gives it; a symbolic link's is its target's, which the
// entry cannot tell.
func (d *dirEntry) ContentID() (string, bool) {
	if d.e.isDir() || d.e.isSymlink() {
		return "", false
	}
	return string(d.e.hash[:]), true
}

func (d *dirEntry) Name() string      { return d.e.name }
func (d *dirEntry) IsDir() bool       { return d.e.isDir() }
func (d *dirEntry) Type() fs.FileMode { return fsMode(d.e.mode).Type() }
func (d *dirEntry) String() string    { return fs.FormatDirEntry(d) }

func (d *dirEntry) Info() (fs.FileInfo, error) {
	var size int64
	if !d.e.isDir() {
		var err error
		if size, err = d.fsys.store.objectSize(d.e.hash); err != nil {
			return nil, err
		}
	}
	return d.fsys.info(d.e.name, *d.e, size), nil
}

// openFile is an open regular file.
type openFile struct {
	info   *fileInfo
	r      *bytes.Reader
	closed bool
}

func (f *openFile) Stat() (fs.FileInfo, error) {
	if f.closed {
		return nil, f.err("stat", fs.ErrClosed)
	}
	return f.info, nil
}

func (f *openFile) Read(p []byte) (int, error) {
	if f.closed {
		return 0, f.err("read", fs.ErrClosed)
	}
	return f.r.Read(p)
}

func (f *openFile) ReadAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, f.err("read", fs.ErrClosed)
	}
	return f.r.ReadAt(p, off)
}

func (f *openFile) Seek(offset int64, whence int) (int64, error) {
	if f.closed {
		return 0, f.err("seek", fs.ErrClosed)
	}
	return f.r.Seek(offset, whence)
}

func (f *openFile) Close() error {
	if f.closed {
		return f.err("close", fs.ErrClosed)
	}
	f.closed = true
	return nil
}

func (f *openFile) err(op string, err error) error {
	return &fs.PathError{Op: op, Path: f.info.name, Err: err}
}

// openDir is an open directory. Its entries are listed on first use.
type openDir struct {
	info    *fileInfo
	list    func() ([]fs.DirEntry, error)
	entries []fs.DirEntry
	listed  bool
	off     int
	closed  bool
}

func (d *openDir) Stat() (fs.FileInfo, error) {
	if d.closed {
		return nil, d.err("stat", fs.ErrClosed)
	}
	return d.info, nil
}

func (d *openDir) Read([]byte) (int, error) {
	if d.closed {
		return 0, d.err("read", fs.ErrClosed)
	}
	return 0, d.err("read", errIsDir)
}

func (d *openDir) Close() error {
	if d.closed {
		return d.err("close", fs.ErrClosed)
	}
	d.closed = true
	return nil
}

// ReadDir reads the directory as fs.ReadDirFile specifies.
func (d *openDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if d.closed {
		return nil, d.err("readdir", fs.ErrClosed)
	}
	if !d.listed {
		entries, err := d.list()
		if err != nil {
			return nil, d.err("readdir", err)
		}
		d.entries, d.listed = entries, true
	}
	rest := d.entries[d.off:]
	if n <= 0 {
		d.off = len(d.entries)
		return slices.Clone(rest), nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(rest))
	d.off += n
	return slices.Clone(rest[:n]), nil
}

func (d *openDir) err(op string, err error) error {
	return &fs.PathError{Op: op, Path: d.info.name, Err: err}
}
