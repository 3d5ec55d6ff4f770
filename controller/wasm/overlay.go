package wasm

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/cup-dev/cup/controller"
)

// maxWrittenBytes bounds the files a put or delete module may hold in its
// overlay, all together: those it opened and those it wrote. Past it, opens
// and writes fail, and the call reports ErrLimit.
// It is a variable for tests.
var maxWrittenBytes int64 = 256 << 20

// readOnlyMount is the tree a get or list module sees: fsys, with every
// change refused as EROFS ("read-only file system").
func readOnlyMount(fsys fs.FS) experimentalsys.FS {
	return readOnly{&sysfs.ReadFS{FS: &sysfs.AdaptFS{FS: fsys}}}
}

// readOnly refuses opens for writing, which sysfs.ReadFS lets through to
// fail as ENOSYS, with the clearer EROFS.
type readOnly struct{ experimentalsys.FS }

func (r readOnly) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	const writing = experimentalsys.O_WRONLY | experimentalsys.O_RDWR | experimentalsys.O_CREAT |
		experimentalsys.O_TRUNC | experimentalsys.O_APPEND
	if flag&writing != 0 {
		return nil, experimentalsys.EROFS
	}
	return r.FS.OpenFile(p, flag, perm)
}

// overlay is the tree a put or delete module sees: the request's tree (base)
// with the module's changes on top, kept in memory. base is not touched while
// the module runs; apply hands the net changes to the request's WriteFS once
// it exited 0, so that a failed call writes nothing.
//
// A file the module opens is copied into files, where every handle on it
// shares it, as handles on one file do in POSIX: reads see earlier writes at
// once. Directories the module makes are in dirs (a Git tree has none
// without files, so they are not applied). Paths of base the module removed
// or renamed are in hidden; an entry in files or dirs wins over hidden.
//
// Paths are cleaned, relative to the tree root, and "." for the root; wazero
// resolves the module's paths within the mount, so none leaves the tree.
type overlay struct {
	experimentalsys.UnimplementedFS
	base fs.FS

	mu     sync.Mutex
	files  map[string]*node
	dirs   map[string]bool
	hidden map[string]bool
	// size is the length of every node created, unlinked ones included; an
	// open or write that would take it past maxWrittenBytes fails and sets
	// full.
	size int64
	full bool
}

// node is a file's content, shared by the handles open on it.
type node struct {
	data []byte
	mode fs.FileMode // permission bits
	// dirty is set when the content may differ from base's: the node was
	// created, written, truncated or renamed.
	dirty bool
}

func newOverlay(base fs.FS) *overlay {
	return &overlay{base: base, files: map[string]*node{}, dirs: map[string]bool{}, hidden: map[string]bool{}}
}

var _ experimentalsys.FS = (*overlay)(nil)

type kind int

const (
	missing kind = iota
	regular
	directory
)

// lookup says what is at p, and its node if the overlay holds one.
// The caller holds o.mu.
func (o *overlay) lookup(p string) (kind, *node) {
	if p == "." {
		return directory, nil
	}
	if n, ok := o.files[p]; ok {
		return regular, n
	}
	if o.dirs[p] {
		return directory, nil
	}
	if o.hidden[p] {
		return missing, nil
	}
	fi, err := fs.Stat(o.base, p)
	switch {
	case err != nil:
		return missing, nil
	case fi.IsDir():
		return directory, nil
	default:
		return regular, nil
	}
}

// load returns the node of the file at p, copying it from base into the
// overlay if it is not there yet. The caller holds o.mu and knows p is a file.
func (o *overlay) load(p string) (*node, experimentalsys.Errno) {
	if n, ok := o.files[p]; ok {
		return n, 0
	}
	data, err := fs.ReadFile(o.base, p)
	if err != nil {
		return nil, experimentalsys.UnwrapOSError(err)
	}
	mode := fs.FileMode(0o644)
	if fi, err := fs.Stat(o.base, p); err == nil {
		mode = fi.Mode().Perm()
	}
	if o.size+int64(len(data)) > maxWrittenBytes {
		o.full = true
		return nil, experimentalsys.EIO
	}
	n := &node{data: data, mode: mode}
	o.size += int64(len(data))
	o.files[p] = n
	return n, 0
}

// resize sets n's length to size, zero-filling growth, unless that takes the
// overlay past maxWrittenBytes. The caller holds o.mu.
func (o *overlay) resize(n *node, size int64) experimentalsys.Errno {
	grow := size - int64(len(n.data))
	if o.size+grow > maxWrittenBytes {
		o.full = true
		return experimentalsys.EIO
	}
	o.size += grow
	if grow > 0 {
		n.data = append(n.data, make([]byte, grow)...)
	} else {
		n.data = n.data[:size]
	}
	n.dirty = true
	return 0
}

// clean turns a path from wazero into a tree path, and reports whether it
// ended in a slash (which only a directory may).
func clean(p string) (string, bool, experimentalsys.Errno) {
	slash := strings.HasSuffix(p, "/")
	p = path.Clean("/" + p)[1:]
	if p == "" {
		p = "."
	}
	if !fs.ValidPath(p) {
		return "", false, experimentalsys.EPERM
	}
	return p, slash, 0
}

// creatable checks that a file or directory may be made at p: the tree can
// hold the name, and its parent is a directory. The caller holds o.mu.
func (o *overlay) creatable(p string) experimentalsys.Errno {
	if errno := storable(p); errno != 0 {
		return errno
	}
	switch k, _ := o.lookup(path.Dir(p)); k {
	case directory:
		return 0
	case regular:
		return experimentalsys.ENOTDIR
	default:
		return experimentalsys.ENOENT
	}
}

// storable checks that a Git tree can hold a file at p, as the WriteFS apply
// hands it to will check (controller.CheckWritePath): a path it refuses is
// EPERM, so that the module learns at once rather than when its call ends.
func storable(p string) experimentalsys.Errno {
	if controller.CheckWritePath(p) != nil {
		return experimentalsys.EPERM
	}
	return 0
}

// OpenFile implements experimentalsys.FS.
func (o *overlay) OpenFile(name string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	p, slash, errno := clean(name)
	if errno != 0 {
		return nil, errno
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	access := flag & (experimentalsys.O_RDONLY | experimentalsys.O_WRONLY | experimentalsys.O_RDWR)
	writable := access != experimentalsys.O_RDONLY
	k, _ := o.lookup(p)
	switch {
	case k == directory:
		if flag&experimentalsys.O_CREAT != 0 && flag&experimentalsys.O_EXCL != 0 {
			return nil, experimentalsys.EEXIST
		}
		if writable {
			return nil, experimentalsys.EISDIR
		}
		return &dir{o: o, path: p}, 0
	case flag&experimentalsys.O_DIRECTORY != 0 || slash:
		if k == missing {
			return nil, experimentalsys.ENOENT
		}
		return nil, experimentalsys.ENOTDIR
	case k == missing:
		if flag&experimentalsys.O_CREAT == 0 {
			return nil, experimentalsys.ENOENT
		}
		if errno := o.creatable(p); errno != 0 {
			return nil, errno
		}
		o.files[p] = &node{mode: perm.Perm(), dirty: true}
	case flag&experimentalsys.O_CREAT != 0 && flag&experimentalsys.O_EXCL != 0:
		return nil, experimentalsys.EEXIST
	}
	n, errno := o.load(p)
	if errno != 0 {
		return nil, errno
	}
	if flag&experimentalsys.O_TRUNC != 0 && writable && len(n.data) > 0 {
		if errno := o.resize(n, 0); errno != 0 {
			return nil, errno
		}
	}
	return &file{
		o: o, n: n, path: p,
		read:   access != experimentalsys.O_WRONLY,
		write:  writable,
		append: flag&experimentalsys.O_APPEND != 0,
	}, 0
}

// Lstat implements experimentalsys.FS. The overlay has no symbolic links.
func (o *overlay) Lstat(name string) (sys.Stat_t, experimentalsys.Errno) {
	return o.Stat(name)
}

// Stat implements experimentalsys.FS.
func (o *overlay) Stat(name string) (sys.Stat_t, experimentalsys.Errno) {
	p, slash, errno := clean(name)
	if errno != 0 {
		return sys.Stat_t{}, errno
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	k, n := o.lookup(p)
	switch {
	case k == directory:
		return dirStat(p), 0
	case k == missing:
		return sys.Stat_t{}, experimentalsys.ENOENT
	case slash:
		return sys.Stat_t{}, experimentalsys.ENOTDIR
	case n != nil:
		return n.stat(p), 0
	}
	fi, err := fs.Stat(o.base, p)
	if err != nil {
		return sys.Stat_t{}, experimentalsys.UnwrapOSError(err)
	}
	return sys.Stat_t{Ino: inode(p), Mode: fi.Mode().Perm(), Nlink: 1, Size: fi.Size()}, 0
}

// Mkdir implements experimentalsys.FS.
func (o *overlay) Mkdir(name string, _ fs.FileMode) experimentalsys.Errno {
	p, _, errno := clean(name)
	if errno != 0 {
		return errno
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if k, _ := o.lookup(p); k != missing {
		return experimentalsys.EEXIST
	}
	if errno := o.creatable(p); errno != 0 {
		return errno
	}
	o.dirs[p] = true
	return 0
}

// Rename implements experimentalsys.FS, for files and directories.
func (o *overlay) Rename(from, to string) experimentalsys.Errno {
	src, _, errno := clean(from)
	if errno != 0 {
		return errno
	}
	dst, _, errno := clean(to)
	if errno != 0 {
		return errno
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	sk, _ := o.lookup(src)
	dk, _ := o.lookup(dst)
	switch {
	case sk == missing:
		return experimentalsys.ENOENT
	case src == dst:
		return 0
	case src == ".":
		return experimentalsys.EPERM
	case sk == regular && dk == directory:
		return experimentalsys.EISDIR
	case sk == directory && dk == regular:
		return experimentalsys.ENOTDIR
	case sk == directory && strings.HasPrefix(dst+"/", src+"/"):
		return experimentalsys.EINVAL
	case sk == directory && dk == directory && len(o.entries(dst)) > 0:
		return experimentalsys.ENOTEMPTY
	case dk == missing:
		if errno := o.creatable(dst); errno != 0 {
			return errno
		}
	default:
		if errno := storable(dst); errno != 0 {
			return errno
		}
	}
	return o.move(src, dst, sk)
}

// move moves the file or directory (k) at src to dst, which is missing, a
// file when src is one, or an empty directory when src is one. The caller
// holds o.mu.
func (o *overlay) move(src, dst string, k kind) experimentalsys.Errno {
	if k == regular {
		n, errno := o.load(src)
		if errno != 0 {
			return errno
		}
		n.dirty = true
		o.files[dst] = n
		delete(o.files, src)
		o.hidden[src] = true
		return 0
	}
	o.dirs[dst] = true
	for _, e := range o.entries(src) {
		if errno := o.move(src+"/"+e.Name, dst+"/"+e.Name, kindOf(e)); errno != 0 {
			return errno
		}
	}
	delete(o.dirs, src)
	o.hidden[src] = true
	return 0
}

func kindOf(e experimentalsys.Dirent) kind {
	if e.IsDir() {
		return directory
	}
	return regular
}

// Rmdir implements experimentalsys.FS.
func (o *overlay) Rmdir(name string) experimentalsys.Errno {
	p, _, errno := clean(name)
	if errno != 0 {
		return errno
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	switch k, _ := o.lookup(p); {
	case p == ".":
		return experimentalsys.EPERM
	case k == missing:
		return experimentalsys.ENOENT
	case k == regular:
		return experimentalsys.ENOTDIR
	case len(o.entries(p)) > 0:
		return experimentalsys.ENOTEMPTY
	}
	delete(o.dirs, p)
	o.hidden[p] = true
	return 0
}

// Unlink implements experimentalsys.FS. Handles open on the file keep it.
func (o *overlay) Unlink(name string) experimentalsys.Errno {
	p, _, errno := clean(name)
	if errno != 0 {
		return errno
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	switch k, _ := o.lookup(p); k {
	case directory:
		return experimentalsys.EISDIR
	case missing:
		return experimentalsys.ENOENT
	}
	delete(o.files, p)
	o.hidden[p] = true
	return 0
}

// Utimens implements experimentalsys.FS. Times are not kept: the tree has
// none, and the module must not depend on them.
func (o *overlay) Utimens(name string, _, _ int64) experimentalsys.Errno {
	_, errno := o.Stat(name)
	return errno
}

// entries returns the directory p's entries sorted by name: those of base
// still there, and those the module made. The caller holds o.mu.
func (o *overlay) entries(p string) []experimentalsys.Dirent {
	child := func(name string) string {
		if p == "." {
			return name
		}
		return p + "/" + name
	}
	found := map[string]kind{}
	if base, err := fs.ReadDir(o.base, p); err == nil {
		for _, e := range base {
			if k, _ := o.lookup(child(e.Name())); k != missing {
				found[e.Name()] = k
			}
		}
	}
	made := func(q string) {
		if path.Dir(q) == p && q != "." {
			if k, _ := o.lookup(q); k != missing {
				found[path.Base(q)] = k
			}
		}
	}
	for q := range o.dirs {
		made(q)
	}
	for q := range o.files {
		made(q)
	}
	out := make([]experimentalsys.Dirent, 0, len(found))
	for _, name := range slices.Sorted(maps.Keys(found)) {
		e := experimentalsys.Dirent{Name: name, Ino: inode(child(name))}
		if found[name] == directory {
			e.Type = fs.ModeDir
		}
		out = append(out, e)
	}
	return out
}

// apply makes the net changes of the module on w, which base is a view of:
// removals of base files first (so that a file may replace a directory and
// back), then the files that differ from base, each in path order.
func (o *overlay) apply(w controller.WriteFS) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range slices.Sorted(maps.Keys(o.hidden)) {
		if _, replaced := o.files[p]; replaced {
			continue
		}
		if fi, err := fs.Stat(o.base, p); err != nil || fi.IsDir() {
			continue
		}
		if err := w.Remove(p); err != nil {
			return fmt.Errorf("removing %s: %w", p, err)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(o.files)) {
		n := o.files[p]
		if !n.dirty {
			continue
		}
		perm := fs.FileMode(0o644)
		if n.mode&0o111 != 0 {
			perm = 0o755
		}
		if fi, err := fs.Stat(o.base, p); err == nil && fi.Mode().IsRegular() && (fi.Mode()&0o111 != 0) == (perm == 0o755) {
			if old, err := fs.ReadFile(o.base, p); err == nil && bytes.Equal(old, n.data) {
				continue
			}
		}
		if err := w.WriteFile(p, n.data, perm); err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
	}
	return nil
}

// inode numbers a path, the same way every time, never 0.
func inode(p string) sys.Inode {
	h := fnv.New64a()
	_, _ = io.WriteString(h, p)
	return h.Sum64() | 1
}

func dirStat(p string) sys.Stat_t {
	return sys.Stat_t{Ino: inode(p), Mode: fs.ModeDir | 0o755, Nlink: 1}
}

func (n *node) stat(p string) sys.Stat_t {
	return sys.Stat_t{Ino: inode(p), Mode: n.mode, Nlink: 1, Size: int64(len(n.data))}
}
