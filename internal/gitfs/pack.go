package gitfs

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha1"
	endian "encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/klauspost/compress/zlib"
)

// PackOption configures WritePack.
type PackOption func(*packConfig)

type packConfig struct {
	deltas bool
	stored bool
	// entry, when set, is told of each object as it is written: its id,
	// where its entry begins and the CRC-32 of the entry's bytes, as a
	// pack index records them.
	entry func(id plumbing.Hash, at int64, crc uint32)
	// checksum, when set, is told of the pack's checksum, its trailer.
	checksum func(plumbing.Hash)
}

// WithoutCompression makes WritePack store every object in zlib's stored
// blocks, uncompressed: quicker to write and to read back, larger on
// disk. For a repository that lives as long as the process that makes it.
func WithoutCompression() PackOption { return func(c *packConfig) { c.stored = true } }

// WithTreeDeltas lets WritePack write a large tree as a delta against the
// large tree before it in the pack (an ofs-delta), when the two share
// most of their bytes, as the trees of consecutive commits in one
// directory do: a group of writes to a directory of 10,000 files then
// sends each tree after the first in a few dozen bytes rather than in
// 450 KB. The receiver must accept ofs-deltas (the ofs-delta capability).
func WithTreeDeltas() PackOption { return func(c *packConfig) { c.deltas = true } }

// WritePack writes the objects ids names as a Git pack file (version 2)
// to w, for a push: whole objects, except trees as deltas with
// WithTreeDeltas. Objects are compressed as loose objects are by default:
// zlib.BestSpeed, except small objects and large trees, which are stored
// (see autoLevel); go-git's encoder
// compresses with zlib's default level, which costs 14 ms for the tree of
// a directory of 10,000 files.
func (s *Store) WritePack(w io.Writer, ids []plumbing.Hash, opts ...PackOption) error {
	return writePack(w, ids, s.readAny, opts...)
}

// readAny reads object h of any type.
func (s *Store) readAny(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	return s.readObject(plumbing.AnyObject, h)
}

// writePack is WritePack reading the objects with read.
func writePack(w io.Writer, ids []plumbing.Hash, read func(plumbing.Hash) (plumbing.ObjectType, []byte, error), opts ...PackOption) error {
	return writePackOf(w, len(ids), inOrder(ids, read), opts...)
}

// nextObject gives the objects of a pack one at a time: its id, type and
// content, or the error reading it.
type nextObject func() (plumbing.Hash, plumbing.ObjectType, []byte, error)

// inOrder gives ids in their order, read with read.
func inOrder(ids []plumbing.Hash, read func(plumbing.Hash) (plumbing.ObjectType, []byte, error)) nextObject {
	i := 0
	return func() (plumbing.Hash, plumbing.ObjectType, []byte, error) {
		id := ids[i]
		i++
		typ, data, err := read(id)
		return id, typ, data, err
	}
}

// writePackOf is writePack of the n objects next gives.
func writePackOf(w io.Writer, n int, next nextObject, opts ...PackOption) error {
	var cfg packConfig
	for _, o := range opts {
		o(&cfg)
	}
	sum := sha1.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, sum), 1<<16)
	cw := &countingWriter{w: bw}
	var hdr [12]byte
	copy(hdr[:], "PACK")
	endian.BigEndian.PutUint32(hdr[4:], 2)
	endian.BigEndian.PutUint32(hdr[8:], uint32(n))
	if _, err := cw.Write(hdr[:]); err != nil {
		return err
	}
	// Each entry streams through zlib into the pack, and through the CRC-32
	// an index records: no entry is held whole a second time.
	crc := crc32.NewIEEE()
	entry := io.MultiWriter(cw, crc)
	zws := map[int]zlibWriter{}
	var prevTree []byte // the last large tree written, and where
	var prevAt int64
	depth := 0          // of the delta chain prevTree ends
	var rootTree []byte // the last large tree written whole, and where
	var rootAt int64
	for range n {
		id, typ, data, err := next()
		if err != nil {
			return fmt.Errorf("pack %s: %w", id, err)
		}
		at := cw.n
		crc.Reset()
		large := typ == plumbing.TreeObject && len(data) >= storedTreeSize
		level := autoLevel(typ, len(data))
		if cfg.stored {
			level = zlib.NoCompression
		}
		body := data
		var head []byte
		delta, baseAt := treeDelta(cfg.deltas && large && depth < maxDeltaDepth, prevTree, data), prevAt
		if delta == nil && cfg.deltas && large && depth >= maxDeltaDepth {
			// The chain is as long as Git lets it be: a new one
			// starts from the tree the last one began with, which
			// matching entries makes a delta of a few dozen changes,
			// rather than from a tree written whole again.
			if delta = treeDelta(true, rootTree, data); delta != nil {
				baseAt, depth = rootAt, 0
			}
		}
		switch {
		case delta != nil:
			head = append(packEntryHeader(plumbing.OFSDeltaObject, len(delta)), encodeOfsDeltaOffset(at-baseAt)...)
			body = delta
			if !cfg.stored {
				level = autoLevel(plumbing.OFSDeltaObject, len(delta))
			}
			depth++
		default:
			head = packEntryHeader(typ, len(data))
			if large {
				depth = 0
				rootTree, rootAt = data, at
			}
		}
		if large {
			prevTree, prevAt = data, at
		}
		if _, err := entry.Write(head); err != nil {
			return err
		}
		zw := zws[level]
		if zw == nil {
			if zw, err = newZlibWriter(entry, level); err != nil {
				return err
			}
			zws[level] = zw
		} else {
			zw.Reset(entry)
		}
		if _, err := zw.Write(body); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		if cfg.entry != nil {
			cfg.entry(id, at, crc.Sum32())
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	trailer := sum.Sum(nil)
	if cfg.checksum != nil {
		cfg.checksum(plumbing.Hash(trailer))
	}
	_, err := w.Write(trailer)
	return err
}

// PackObjects keeps the objects written to it, in the order written, for
// a Store that makes a repository's first pack (see [WithObjectWriter]):
// the Store reads them back from it, and [Store.WritePackFiles] packs
// PackObjects.IDs. It keeps the content it is given, not a copy, so the
// content must not change afterwards. It is not safe for concurrent use.
type PackObjects struct {
	ids  []plumbing.Hash
	objs map[plumbing.Hash]packObject
}

type packObject struct {
	typ  plumbing.ObjectType
	data []byte
}

// WriteObject keeps content as the object of type typ, once.
func (p *PackObjects) WriteObject(typ plumbing.ObjectType, content []byte) (plumbing.Hash, error) {
	h := HashObject(typ, content)
	if p.objs == nil {
		p.objs = make(map[plumbing.Hash]packObject)
	}
	if _, ok := p.objs[h]; !ok {
		p.objs[h] = packObject{typ, content}
		p.ids = append(p.ids, h)
	}
	return h, nil
}

// IDs returns the ids of the objects kept, in the order first written.
func (p *PackObjects) IDs() []plumbing.Hash { return slices.Clone(p.ids) }

// read returns object h if p keeps it.
func (p *PackObjects) read(h plumbing.Hash) (plumbing.ObjectType, []byte, bool) {
	o, ok := p.objs[h]
	return o.typ, o.data, ok
}

// WritePackFiles writes the objects ids names as one pack, with its index,
// into packDir (a repository's objects/pack): pack-<checksum>.pack and
// .idx, each written under a temporary name and renamed (see placePack).
// The index is made from what was written, not by reading the pack back.
func (s *Store) WritePackFiles(packDir string, ids []plumbing.Hash, opts ...PackOption) error {
	_, _, err := writePackFiles(packDir, ids, s.readAny, opts...)
	return err
}

// writePackFiles is WritePackFiles reading the objects with read,
// returning the path of the pack (without .pack or .idx) and its size.
func writePackFiles(packDir string, ids []plumbing.Hash, read func(plumbing.Hash) (plumbing.ObjectType, []byte, error), opts ...PackOption) (string, int64, error) {
	return writePackFilesOf(packDir, len(ids), inOrder(ids, read), opts...)
}

// writePackFilesOf is writePackFiles of the n objects next gives.
func writePackFilesOf(packDir string, n int, next nextObject, opts ...PackOption) (string, int64, error) {
	idx := new(idxfile.Writer)
	var trailer plumbing.Hash
	var size int64
	opts = append(opts, func(c *packConfig) {
		c.entry = func(id plumbing.Hash, at int64, crc uint32) { idx.Add(id, uint64(at), crc) }
		c.checksum = func(h plumbing.Hash) { trailer = h }
	})
	pack, err := writeTemp(packDir, "tmp_pack_", func(w io.Writer) error {
		cw := &countingWriter{w: w}
		err := writePackOf(cw, n, next, opts...)
		size = cw.n
		return err
	})
	if err != nil {
		return "", 0, err
	}
	base, err := placePack(packDir, pack, idx, trailer)
	return base, size, err
}

// placePack writes the index of the pack at tmp (a temporary name in
// packDir), whose entries idx holds and whose checksum is trailer, and
// renames both into place, the index first. go-git lists packs by their
// .pack files and fails on one without its index, leaving its list of
// packs half made; git and ObjectDir list indexes and pass over one whose
// pack is not there yet, and look again when they miss an object. (git
// itself renames the pack first.) It returns the pack's path without
// .pack or .idx; on failure it removes what it wrote and tmp.
func placePack(packDir, tmp string, idx *idxfile.Writer, trailer plumbing.Hash) (string, error) {
	if err := idx.OnFooter(trailer); err != nil {
		os.Remove(tmp)
		return "", err
	}
	mi, err := idx.Index()
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	index, err := writeTemp(packDir, "tmp_idx_", func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<16)
		if _, err := idxfile.NewEncoder(bw).Encode(mi); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	base := filepath.Join(packDir, "pack-"+trailer.String())
	if err := os.Rename(index, base+".idx"); err != nil {
		os.Remove(tmp)
		os.Remove(index)
		return "", err
	}
	if err := os.Rename(tmp, base+".pack"); err != nil {
		os.Remove(tmp)
		os.Remove(base + ".idx")
		return "", err
	}
	return base, nil
}

// writeTemp writes a new file in dir, named by prefix and a random suffix,
// through write, and returns its name; on failure it leaves nothing. write
// gets the file itself: WritePack buffers what it writes already.
func writeTemp(dir, prefix string, write func(io.Writer) error) (name string, err error) {
	f, err := os.CreateTemp(dir, prefix)
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := write(f); err != nil {
		return "", err
	}
	return f.Name(), f.Close()
}

// maxDeltaDepth bounds delta chains, as git pack-objects' --depth does
// by default.
const maxDeltaDepth = 50

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// treeDelta returns a Git delta that makes target from base, or nil when
// want is false or the delta would not save at least half of target. It
// copies their common prefix and suffix and inserts the rest, which is a
// few dozen bytes for the trees of consecutive commits that changed one
// entry; when what lies between is larger than entryDeltaFrom, it matches
// the trees' entries instead (see entryDelta).
func treeDelta(want bool, base, target []byte) []byte {
	if !want || base == nil {
		return nil
	}
	n := min(len(base), len(target))
	p := commonPrefix(base[:n], target[:n])
	sfx := commonSuffix(base[len(base)-(n-p):], target[len(target)-(n-p):])
	mid := target[p : len(target)-sfx]
	if len(mid) > entryDeltaFrom {
		if d := entryDelta(base, target); d != nil {
			return d
		}
	}
	if len(mid) > len(target)/2 {
		return nil
	}
	d := appendDeltaSize(nil, len(base))
	d = appendDeltaSize(d, len(target))
	d = appendCopy(d, 0, p)
	d = appendInsert(d, mid)
	return appendCopy(d, len(base)-sfx, sfx)
}

// entryDeltaFrom is how many bytes between the common prefix and suffix
// of two trees make treeDelta match their entries: changes that far apart.
const entryDeltaFrom = 4 << 10

// appendInsert appends insert instructions of data, in pieces of at most
// 127 bytes.
func appendInsert(d, data []byte) []byte {
	for len(data) > 0 {
		k := min(len(data), 0x7f)
		d = append(d, byte(k))
		d = append(d, data[:k]...)
		data = data[k:]
	}
	return d
}

// entryDelta returns a Git delta that makes the tree target from the tree
// base by copying the runs of entries they share and inserting the
// others, or nil when either is not a well-formed tree or the delta would
// not save at least half of target. Both are walked once, in the order
// Git sorts entries, as a merge: the trees of commits tens apart in a
// directory of 10,000 files differ in tens of entries, and so does their
// delta, where a common prefix and suffix would span most of the tree.
func entryDelta(base, target []byte) []byte {
	b, ok := treeEntries(base)
	if !ok {
		return nil
	}
	t, ok := treeEntries(target)
	if !ok {
		return nil
	}
	d := appendDeltaSize(nil, len(base))
	d = appendDeltaSize(d, len(target))
	copyAt, copyLen := 0, 0 // the run of base being copied
	insAt, insLen := 0, 0   // the run of target being inserted
	flush := func() {
		if copyLen > 0 {
			d = appendCopy(d, copyAt, copyLen)
			copyLen = 0
		}
		if insLen > 0 {
			d = appendInsert(d, target[insAt:insAt+insLen])
			insLen = 0
		}
	}
	i := 0
	for _, te := range t {
		for i < len(b) && entryKeyCompare(base, b[i], target, te) < 0 {
			i++ // not in target
		}
		tb := target[te.start:te.end]
		if i < len(b) && bytes.Equal(base[b[i].start:b[i].end], tb) {
			if insLen > 0 || copyLen > 0 && copyAt+copyLen != b[i].start {
				flush()
			}
			if copyLen == 0 {
				copyAt = b[i].start
			}
			copyLen += b[i].end - b[i].start
			i++
			continue
		}
		if copyLen > 0 {
			flush()
		}
		if insLen == 0 {
			insAt = te.start
		}
		insLen += te.end - te.start
		if i < len(b) && entryKeyCompare(base, b[i], target, te) == 0 {
			i++ // changed in target
		}
		if len(d) > len(target)/2 {
			return nil
		}
	}
	flush()
	if len(d) > len(target)/2 {
		return nil
	}
	return d
}

// treeEntry is where an entry of a tree's content begins and ends, and
// where its name does: "<mode> <name>\x00<20-byte id>".
type treeEntry struct {
	start, name, nul, end int
	dir                   bool
}

// treeEntries returns the entries of a tree's content, or false when it
// is not well formed.
func treeEntries(data []byte) ([]treeEntry, bool) {
	out := make([]treeEntry, 0, len(data)/40+1)
	for at := 0; at < len(data); {
		sp := bytes.IndexByte(data[at:], ' ')
		if sp <= 0 {
			return nil, false
		}
		nul := bytes.IndexByte(data[at+sp+1:], 0)
		if nul < 0 {
			return nil, false
		}
		e := treeEntry{start: at, name: at + sp + 1, nul: at + sp + 1 + nul, dir: string(data[at:at+sp]) == "40000"}
		e.end = e.nul + 1 + len(plumbing.ZeroHash)
		if e.end > len(data) {
			return nil, false
		}
		out = append(out, e)
		at = e.end
	}
	return out, true
}

// entryKeyCompare compares entry x of tree a with entry y of tree b in the
// order Git sorts a tree's entries: by name, a directory's with a "/"
// after it.
func entryKeyCompare(a []byte, x treeEntry, b []byte, y treeEntry) int {
	xn, yn := a[x.name:x.nul], b[y.name:y.nul]
	n := min(len(xn), len(yn))
	if c := bytes.Compare(xn[:n], yn[:n]); c != 0 {
		return c
	}
	xc, yc := keyByte(xn, n, x.dir), keyByte(yn, n, y.dir)
	return cmp.Compare(xc, yc)
}

// keyByte is the byte of name's sort key at i: past its end, "/" for a
// directory, and nothing (-1) for a file.
func keyByte(name []byte, i int, dir bool) int {
	switch {
	case i < len(name):
		return int(name[i])
	case dir && i == len(name):
		return '/'
	}
	return -1
}

// deltaChunk is how many bytes commonPrefix and commonSuffix compare at
// once, with bytes.Equal's vector instructions, before they look for the
// byte that differs: ten times quicker than a byte at a time for the 450 KB
// trees of a directory of 10,000 files.
const deltaChunk = 256

// commonPrefix returns the length of the longest common prefix of a and b,
// which are as long as each other.
func commonPrefix(a, b []byte) int {
	p := 0
	for p+deltaChunk <= len(a) && bytes.Equal(a[p:p+deltaChunk], b[p:p+deltaChunk]) {
		p += deltaChunk
	}
	for p < len(a) && a[p] == b[p] {
		p++
	}
	return p
}

// commonSuffix returns the length of the longest common suffix of a and b,
// which are as long as each other.
func commonSuffix(a, b []byte) int {
	n := len(a)
	s := 0
	for s+deltaChunk <= n && bytes.Equal(a[n-s-deltaChunk:n-s], b[n-s-deltaChunk:n-s]) {
		s += deltaChunk
	}
	for s < n && a[n-1-s] == b[n-1-s] {
		s++
	}
	return s
}

func appendDeltaSize(d []byte, n int) []byte {
	for n >= 0x80 {
		d = append(d, byte(n)|0x80)
		n >>= 7
	}
	return append(d, byte(n))
}

// appendCopy appends copy instructions of base[off:off+n], in pieces of
// at most 0xffffff bytes (three size bytes).
func appendCopy(d []byte, off, n int) []byte {
	for n > 0 {
		k := min(n, 0xffffff)
		op, at := byte(0x80), len(d)
		d = append(d, 0)
		for i := range 4 {
			if b := byte(off >> (8 * i)); b != 0 {
				op |= 1 << i
				d = append(d, b)
			}
		}
		for i := range 3 {
			if b := byte(k >> (8 * i)); b != 0 {
				op |= 1 << (4 + i)
				d = append(d, b)
			}
		}
		d[at] = op
		off, n = off+k, n-k
	}
	return d
}

// encodeOfsDeltaOffset encodes how far back an ofs-delta's base begins, as Git
// does: 7 bits a byte, most significant first, each continued byte's
// value less one.
func encodeOfsDeltaOffset(back int64) []byte {
	var b [10]byte
	i := len(b) - 1
	b[i] = byte(back & 0x7f)
	for back >>= 7; back > 0; back >>= 7 {
		back--
		i--
		b[i] = 0x80 | byte(back&0x7f)
	}
	return b[i:]
}

// packEntryHeader encodes an object's type and size as a pack entry
// header: the type in bits 4-6 of the first byte, the size in 4 bits and
// then 7 bits a byte, least significant first.
func packEntryHeader(typ plumbing.ObjectType, size int) []byte {
	b := []byte{byte(typ)<<4 | byte(size&0x0f)}
	size >>= 4
	for size > 0 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
		size >>= 7
	}
	return b
}
