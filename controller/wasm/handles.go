// Open files and directories of an overlay: the handles a module reads,
// writes and lists through.

package wasm

import (
	"io"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// fileOffset is int64. wazero's Seek returns an Errno where io.Seeker
// returns an error, and go vet flags a method named Seek taking an int64
// with any other signature; it does not look through the alias.
type fileOffset = int64

// file is an open regular file of an overlay.
type file struct {
	experimentalsys.UnimplementedFile
	o                   *overlay
	n                   *node
	path                string // where it was opened, for its inode
	off                 int64
	read, write, append bool
	closed              bool
}

// Ino implements experimentalsys.File.
func (f *file) Ino() (sys.Inode, experimentalsys.Errno) { return inode(f.path), 0 }

// IsAppend implements experimentalsys.File.
func (f *file) IsAppend() bool { return f.append }

// SetAppend implements experimentalsys.File.
func (f *file) SetAppend(enable bool) experimentalsys.Errno {
	f.append = enable
	return 0
}

// Stat implements experimentalsys.File.
func (f *file) Stat() (sys.Stat_t, experimentalsys.Errno) {
	f.o.mu.Lock()
	defer f.o.mu.Unlock()
	if f.closed {
		return sys.Stat_t{}, experimentalsys.EBADF
	}
	return f.n.stat(f.path), 0
}

// Read implements experimentalsys.File.
func (f *file) Read(buf []byte) (int, experimentalsys.Errno) {
	f.o.mu.Lock()
	defer f.o.mu.Unlock()
	n, errno := f.readAt(buf, f.off)
	f.off += int64(n)
	return n, errno
}

// Pread implements experimentalsys.File.
func (f *file) Pread(buf []byte, off int64) (int, experimentalsys.Errno) {
	f.o.mu.Lock()
	defer f.o.mu.Unlock()
	return f.readAt(buf, off)
}

// readAt reads at off; 0 bytes at the end. The caller holds f.o.mu.
func (f *file) readAt(buf []byte, off int64) (int, experimentalsys.Errno) {
	switch {
	case f.closed || !f.read:
		return 0, experimentalsys.EBADF
	case off < 0:
		return 0, experimentalsys.EINVAL
	case off >= int64(len(f.n.data)):
		return 0, 0
	}
	return copy(buf, f.n.data[off:]), 0
}

// Seek implements experimentalsys.File.
func (f *file) Seek(offset fileOffset, whence int) (int64, experimentalsys.Errno) {
	f.o.mu.Lock()
	defer f.o.mu.Unlock()
	if f.closed {
		return 0, experimentalsys.EBADF
	}
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += int64(len(f.n.data))
	default:
		return 0, experimentalsys.EINVAL
	}
	if offset < 0 {
		return 0, experimentalsys.EINVAL
	}
	f.off = offset
	return offset, 0
}

// Write implements experimentalsys.File.
func (f *file) Write(buf []byte) (int, experimentalsys.Errno) {
	f.o.mu.Lock()
	defer f.o.mu.Unlock()
	off := f.off
	if f.append {
		off = int64(len(f.n.data))
	}
	n, errno := f.writeAt(buf, off)
	f.off = off + int64(n)
	return n, errno
}

// Pwrite implements experimentalsys.File.
func (f *file) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	f.o.mu.Lock()
	defer f.o.mu.Unlock()
	return f.writeAt(buf, off)
}

// writeAt writes at off, growing the file as needed. The caller holds f.o.mu.
func (f *file) writeAt(buf []byte, off int64) (int, experimentalsys.Errno) {
	switch {
	case f.closed || !f.write:
		return 0, experimentalsys.EBADF
	case off < 0:
		return 0, experimentalsys.EINVAL
	}
	if end := off + int64(len(buf)); end > int64(len(f.n.data)) {
		if errno := f.o.resize(f.n, end); errno != 0 {
			return 0, errno
		}
	}
	f.n.dirty = true
	return copy(f.n.data[off:], buf), 0
}

// Truncate implements experimentalsys.File.
func (f *file) Truncate(size int64) experimentalsys.Errno {
	f.o.mu.Lock()
	defer f.o.mu.Unlock()
	switch {
	case f.closed || !f.write:
		return experimentalsys.EBADF
	case size < 0:
		return experimentalsys.EINVAL
	}
	return f.o.resize(f.n, size)
}

// Utimens implements experimentalsys.File; see overlay.Utimens.
func (f *file) Utimens(_, _ int64) experimentalsys.Errno { return 0 }

// Close implements experimentalsys.File. The content stays in the overlay.
func (f *file) Close() experimentalsys.Errno {
	f.o.mu.Lock()
	defer f.o.mu.Unlock()
	f.closed = true
	return 0
}

// dir is an open directory of an overlay.
type dir struct {
	experimentalsys.DirFile
	o       *overlay
	path    string
	entries []experimentalsys.Dirent // listed on the first Readdir after open or rewind
	listed  bool
	closed  bool
}

var (
	_ experimentalsys.File = (*file)(nil)
	_ experimentalsys.File = (*dir)(nil)
)

// Dev implements experimentalsys.File.
func (d *dir) Dev() (uint64, experimentalsys.Errno) { return 0, 0 }

// Ino implements experimentalsys.File.
func (d *dir) Ino() (sys.Inode, experimentalsys.Errno) { return inode(d.path), 0 }

// Stat implements experimentalsys.File.
func (d *dir) Stat() (sys.Stat_t, experimentalsys.Errno) { return dirStat(d.path), 0 }

// Seek implements experimentalsys.File: only a rewind, which lists the
// directory again on the next Readdir.
func (d *dir) Seek(offset fileOffset, whence int) (int64, experimentalsys.Errno) {
	if offset != 0 || whence != io.SeekStart {
		return 0, experimentalsys.EINVAL
	}
	d.o.mu.Lock()
	defer d.o.mu.Unlock()
	d.entries, d.listed = nil, false
	return 0, 0
}

// Readdir implements experimentalsys.File.
func (d *dir) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	d.o.mu.Lock()
	defer d.o.mu.Unlock()
	if d.closed {
		return nil, experimentalsys.EBADF
	}
	if !d.listed {
		d.listed = true
		if k, _ := d.o.lookup(d.path); k == directory {
			d.entries = d.o.entries(d.path)
		}
	}
	if n <= 0 || n > len(d.entries) {
		n = len(d.entries)
	}
	out := d.entries[:n:n]
	d.entries = d.entries[n:]
	return out, 0
}

// Sync implements experimentalsys.File.
func (d *dir) Sync() experimentalsys.Errno { return 0 }

// Datasync implements experimentalsys.File.
func (d *dir) Datasync() experimentalsys.Errno { return 0 }

// Utimens implements experimentalsys.File; see overlay.Utimens.
func (d *dir) Utimens(_, _ int64) experimentalsys.Errno { return 0 }

// Close implements experimentalsys.File.
func (d *dir) Close() experimentalsys.Errno {
	d.o.mu.Lock()
	defer d.o.mu.Unlock()
	d.closed = true
	return 0
}
