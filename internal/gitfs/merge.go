package gitfs

import (
	"bufio"
	"crypto/sha1"
	endian "encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// ErrDuplicateObject reports packs that MergePacks will not merge because
// two of them hold the same object.
var ErrDuplicateObject = errors.New("an object is in two of the packs")

// MergePacks writes the packs names names (paths in packDir without .pack
// or .idx, version 2 indexes) as one pack, and then removes them. The
// merged pack is their entries one after another, copied as they are, so
// that an entry stored as a delta of an earlier one in its pack (an
// ofs-delta, by distance) still finds it: nothing is inflated or
// compressed again, and a merge costs a copy and a SHA-1 of the bytes.
// Its index is made from theirs, their offsets moved and their CRCs kept.
//
// Packs that hold an object twice between them, or that git is told to
// keep (a .keep file), are not merged. Until the merged pack is in place
// the packs are as they were; a reader that found an object in one of
// them keeps reading it from its mapping after the file is removed, and
// one that looks again finds the merged pack. It returns the merged pack's path and size.
func MergePacks(packDir string, names []string) (string, int64, error) {
	if len(names) < 2 {
		return "", 0, fmt.Errorf("merge packs: %d packs", len(names))
	}
	packs := make([]*packFile, 0, len(names))
	defer func() {
		for _, p := range packs {
			_ = p.close()
		}
	}()
	total := 0
	for _, name := range names {
		if _, err := os.Stat(name + ".keep"); err == nil {
			return "", 0, fmt.Errorf("merge packs: %s.keep: git is told to keep the pack", name)
		}
		p, err := openPack(name)
		if err != nil {
			return "", 0, fmt.Errorf("merge packs: %w", err)
		}
		packs = append(packs, p)
		if n := endian.BigEndian.Uint32(p.pack[8:12]); int(n) != p.count {
			return "", 0, fmt.Errorf("merge packs: %s: %w: the pack holds %d objects, its index %d", name, ErrCorrupt, n, p.count)
		}
		total += p.count
	}
	if uint64(total) > 1<<32-1 {
		return "", 0, fmt.Errorf("merge packs: %d objects do not fit one pack", total)
	}
	seen := make(map[plumbing.Hash]struct{}, total)
	idx := new(idxfile.Writer)
	var trailer plumbing.Hash
	var size int64
	tmp, err := writeTemp(packDir, "tmp_pack_", func(w io.Writer) error {
		sum := sha1.New()
		cw := &countingWriter{w: bufio.NewWriterSize(io.MultiWriter(w, sum), 1<<16)}
		var hdr [12]byte
		copy(hdr[:], "PACK")
		endian.BigEndian.PutUint32(hdr[4:], 2)
		endian.BigEndian.PutUint32(hdr[8:], uint32(total))
		if _, err := cw.Write(hdr[:]); err != nil {
			return err
		}
		for k, p := range packs {
			shift := cw.n - 12 // where p's entries start, less where they started in p
			crcs := p.idx[8+256*4+p.count*20:]
			for i := range p.count {
				var id plumbing.Hash
				copy(id[:], p.ids[i*20:])
				if _, dup := seen[id]; dup {
					return fmt.Errorf("%w: %s in %s", ErrDuplicateObject, id, names[k])
				}
				seen[id] = struct{}{}
				off, ok := p.offsetAt(i)
				if !ok || off < 12 || off >= uint64(len(p.pack)-20) {
					return fmt.Errorf("%s.idx: %w: object %s at %d", names[k], ErrCorrupt, id, off)
				}
				idx.Add(id, uint64(int64(off)+shift), endian.BigEndian.Uint32(crcs[i*4:]))
			}
			// Read, not the mapping: a merge of many megabytes then
			// passes through the page cache and a small buffer rather
			// than the process's resident memory.
			if err := copyEntries(cw, names[k]+".pack", int64(len(p.pack))); err != nil {
				return err
			}
		}
		if err := cw.w.(*bufio.Writer).Flush(); err != nil {
			return err
		}
		copy(trailer[:], sum.Sum(nil))
		if _, err := w.Write(trailer[:]); err != nil {
			return err
		}
		size = cw.n + int64(len(trailer))
		return nil
	})
	if err != nil {
		return "", 0, fmt.Errorf("merge packs: %w", err)
	}
	merged, err := placePack(packDir, tmp, idx, trailer)
	if err != nil {
		return "", 0, fmt.Errorf("merge packs: %w", err)
	}
	// Each pack goes before its index, the reverse of placePack's order,
	// for the same readers.
	var errs []error
	for _, name := range names {
		if name == merged {
			continue
		}
		for _, ext := range []string{".pack", ".rev", ".bitmap", ".idx"} {
			if err := os.Remove(name + ext); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return merged, size, fmt.Errorf("merge packs: merged into %s, but: %w", filepath.Base(merged), err)
	}
	return merged, size, nil
}

// copyEntries copies the entries of the pack file name, of size bytes
// when it was opened: all but its 12-byte header and 20-byte trailer.
func copyEntries(w io.Writer, name string, size int64) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(w, io.NewSectionReader(f, 12, size-12-20))
	if err == nil && n != size-12-20 {
		err = fmt.Errorf("%s: %w: %d bytes, not %d", name, ErrCorrupt, n+32, size)
	}
	return err
}
