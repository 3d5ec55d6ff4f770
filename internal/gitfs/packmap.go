package gitfs

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5"
)

// MapPacks returns a file system that opens pack files (objects/pack/*.pack)
// of the repository in fsys mapped into memory, where the platform can,
// and everything else as fsys does. go-git reads a packed object with a
// seek and a read of the file for each object and each delta base; from a
// mapped pack those are copies in memory, as Git itself reads packs. A
// history over 10,000 commits reads about 16,000 objects: see
// BenchmarkHistory in the server's tests.
//
// Packs are never written in place (Git writes a new one and renames it),
// so a mapping stays valid until it is closed; reads after Close fail
// with os.ErrClosed.
func MapPacks(fsys billy.Filesystem) billy.Filesystem {
	return packMapFS{fsys}
}

type packMapFS struct{ billy.Filesystem }

func (p packMapFS) Open(name string) (billy.File, error) {
	f, err := p.Filesystem.Open(name)
	if err != nil || !strings.HasSuffix(name, ".pack") {
		return f, err
	}
	if data := p.mapPack(name); data != nil {
		return &mappedFile{File: f, data: data, r: bytes.NewReader(data)}, nil
	}
	return f, nil // read it as a file, then
}

// mapPack maps the pack file name, nil where it cannot: the file under
// the file system's root must be the one it names (it is not a file system
// in memory, say).
func (p packMapFS) mapPack(name string) []byte {
	want, err := p.Stat(name)
	if err != nil {
		return nil
	}
	osf, err := os.Open(filepath.Join(p.Root(), filepath.FromSlash(name)))
	if err != nil {
		return nil
	}
	defer osf.Close() // the mapping outlives the descriptor
	info, err := osf.Stat()
	if err != nil || !sameInode(info, want) || info.Size() <= 0 || int64(int(info.Size())) != info.Size() {
		return nil
	}
	data, err := mapFile(osf.Fd(), int(info.Size()))
	if err != nil {
		return nil
	}
	return data
}

// mappedFile reads a file from its mapping; writes and locks go to the
// file.
type mappedFile struct {
	billy.File
	mu     sync.RWMutex
	data   []byte
	r      *bytes.Reader // nil once closed
	closed bool
}

func (f *mappedFile) Read(b []byte) (int, error) {
	f.mu.Lock() // Read moves the offset
	defer f.mu.Unlock()
	if f.closed {
		return 0, os.ErrClosed
	}
	return f.r.Read(b)
}

func (f *mappedFile) ReadAt(b []byte, off int64) (int, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return 0, os.ErrClosed
	}
	return f.r.ReadAt(b, off)
}

func (f *mappedFile) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, os.ErrClosed
	}
	return f.r.Seek(offset, whence)
}

func (f *mappedFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return os.ErrClosed
	}
	f.closed = true
	err := unmapFile(f.data)
	f.data, f.r = nil, nil
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}

var _ io.ReaderAt = (*mappedFile)(nil)
