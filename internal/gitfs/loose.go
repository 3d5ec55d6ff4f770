package gitfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/klauspost/compress/zlib"
)

// LooseWriter writes loose objects into an objects directory the way Git
// does: compressed with zlib into a temporary file that is then renamed into
// place, so that readers never see a partial object. An object that already
// exists as a loose object is not written again; its modification time is
// refreshed instead, as Git does, so that a concurrent "git gc" does not
// prune it. It is safe for concurrent use.
type LooseWriter struct {
	dir   string
	level int       // or levelAuto
	pool  sync.Pool // of *looseBuffers
}

// levelAuto compresses with zlib.BestSpeed except small objects and large
// trees, which are stored; see WithCompression and autoLevel.
const levelAuto = -100

// storedTreeSize is the size from which levelAuto stores trees without
// compression.
const storedTreeSize = 8 << 10

// storedSmallSize is the size below which levelAuto stores objects without
// compression.
const storedSmallSize = 4 << 10

// autoLevel is the zlib level levelAuto writes an object of type typ and
// size bytes with, in loose objects and in packs: stored (uncompressed)
// below storedSmallSize, and for trees from storedTreeSize; BestSpeed
// otherwise. Inflating a 510-byte resource took 5.6 µs and reading it
// stored 0.5 µs, and a first list of 10,000 inflates 10,000 of them;
// compressing one saves 250 bytes. Git reads stored objects as any other,
// and git gc keeps them as they are.
func autoLevel(typ plumbing.ObjectType, size int) int {
	if size < storedSmallSize || typ == plumbing.TreeObject && size >= storedTreeSize {
		return zlib.NoCompression
	}
	return zlib.BestSpeed
}

type looseBuffers struct {
	buf bytes.Buffer
	zw  map[int]zlibWriter // by level
}

// LooseOption configures a LooseWriter.
type LooseOption func(*LooseWriter)

// WithCompression sets the zlib compression level of every object. By
// default objects are compressed with zlib.BestSpeed, except objects under
// 4 KiB and trees of 8 KiB or more, which are stored uncompressed (see
// autoLevel): about half of a tree is object ids,
// which do not compress, and a large directory's tree is written again by
// every commit that touches the directory. For a tree of 10,000 entries
// (430 KB) that is 0.5 ms instead of 4 ms at BestSpeed (252 KB) and 14 ms at
// zlib's default level (239 KB), which go-git uses. Loose objects are
// short-lived anyway: "git gc" packs and recompresses them.
func WithCompression(level int) LooseOption {
	return func(w *LooseWriter) { w.level = level }
}

// NewLooseWriter returns a writer into objectsDir, the "objects" directory
// of a repository. It does no I/O.
func NewLooseWriter(objectsDir string, opts ...LooseOption) *LooseWriter {
	w := &LooseWriter{dir: objectsDir, level: levelAuto}
	for _, opt := range opts {
		opt(w)
	}
	return w
}

// WriteObject writes an object and returns its id.
func (w *LooseWriter) WriteObject(typ plumbing.ObjectType, content []byte) (plumbing.Hash, error) {
	return w.write(HashObject(typ, content), typ, content)
}

// write writes an object whose id, HashObject(typ, content), the caller
// has computed already.
func (w *LooseWriter) write(id plumbing.Hash, typ plumbing.ObjectType, content []byte) (plumbing.Hash, error) {
	header := objectHeader(typ, len(content))
	hex := id.String()
	dir := filepath.Join(w.dir, hex[:2])
	name := filepath.Join(dir, hex[2:])
	if _, err := os.Stat(name); err == nil {
		now := time.Now()
		_ = os.Chtimes(name, now, now) // best effort, as Git's freshening
		return id, nil
	}

	level := w.level
	if level == levelAuto {
		level = autoLevel(typ, len(content))
	}
	b, _ := w.pool.Get().(*looseBuffers)
	if b == nil {
		b = &looseBuffers{zw: make(map[int]zlibWriter)}
	}
	defer w.pool.Put(b)
	b.buf.Reset()
	b.buf.Grow(len(header) + len(content) + len(content)/16 + 64)
	zw := b.zw[level]
	if zw == nil {
		var err error
		if zw, err = newZlibWriter(&b.buf, level); err != nil {
			return plumbing.ZeroHash, err
		}
		b.zw[level] = zw
	} else {
		zw.Reset(&b.buf)
	}
	zw.Write(header)
	zw.Write(content)
	if err := zw.Close(); err != nil {
		return plumbing.ZeroHash, err
	}

	if err := w.writeFile(dir, name, b.buf.Bytes()); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write object %s: %w", hex, err)
	}
	return id, nil
}

func (w *LooseWriter) writeFile(dir, name string, data []byte) (err error) {
	// The temporary file goes next to the object, as Git puts it: creating
	// files in the directory they are renamed out of is several times
	// slower on ext4 than spreading them over the fan-out directories.
	f, err := os.CreateTemp(dir, "tmp_obj_")
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		f, err = os.CreateTemp(dir, "tmp_obj_")
	}
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(0o444); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}
