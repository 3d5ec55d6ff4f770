package gitfs

import (
	"bytes"
	endian "encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/klauspost/compress/zlib"
)

// ErrCorrupt reports an object or pack whose bytes are not what Git writes.
var ErrCorrupt = errors.New("corrupt object")

// DefaultDeltaBaseCacheSize is the number of bytes of delta bases an
// [ObjectDir] keeps: the objects that packed objects are stored as
// differences from, which every object of a delta chain needs again.
const DefaultDeltaBaseCacheSize = 16 << 20

// maxDeltaChain bounds the length of a delta chain; git repack's --depth
// is at most 4095.
const maxDeltaChain = 4096

// ObjectDir reads the objects of a repository's objects directory itself,
// loose and packed, without go-git and without a lock: any number of
// goroutines read at once, as the decoding of a listing's ten thousand
// files does on every core. go-git's storer serialises every read behind
// the [Store]'s lock and costs several path checks (lstat of each
// directory) per loose object; reading a loose object here is one open, one
// read and an inflate with a pooled zlib reader, and a packed one is a
// binary search in the mapped index and an inflate from the mapped pack.
//
// Packs are found on first use and looked for again when an object is
// missing and the pack directory changed (git gc and git repack write new
// packs and delete old ones). Objects it cannot find (in alternates, say)
// are left to the storer. It keeps no index of loose objects: a loose
// object is found by its path, which is what the objects directory is.
//
// An ObjectDir is safe for concurrent use. Close unmaps its packs.
type ObjectDir struct {
	dir string

	mu       sync.RWMutex // held for reading while packs are read, for writing to change them
	packs    []*packFile
	loaded   bool
	closed   bool
	packStat fs.FileInfo // of dir/pack when packs were listed
	loadedAt time.Time
	nextID   uint32

	bases lru[object] // delta bases by pack and offset

	zpool sync.Pool // of *inflater
}

type object struct {
	typ  plumbing.ObjectType
	data []byte
}

// NewObjectDir returns a reader of the objects directory dir. It does no I/O.
func NewObjectDir(dir string) *ObjectDir {
	return &ObjectDir{dir: dir, bases: lru[object]{max: DefaultDeltaBaseCacheSize}}
}

// Close unmaps the packs. Reads after Close find only loose objects.
func (d *ObjectDir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var err error
	for _, p := range d.packs {
		err = errors.Join(err, p.close())
	}
	d.packs, d.loaded, d.closed = nil, true, true
	return err
}

// Read returns the type and content of object h. An object it cannot find
// gives an error wrapping plumbing.ErrObjectNotFound; one whose bytes are
// not what Git writes, an error wrapping [ErrCorrupt] naming the file.
func (d *ObjectDir) Read(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	typ, data, err := d.read(h)
	// A listing made while packs were merged (by git gc, or by another
	// process's MergePacks) may hold neither the packs removed nor the one
	// that replaced them: a pack directory that changed again is listed
	// again.
	for range maxRelists {
		if !errors.Is(err, plumbing.ErrObjectNotFound) || !d.reload() {
			break
		}
		typ, data, err = d.read(h)
	}
	return typ, data, err
}

// maxRelists bounds how many times a read of a missing object lists the
// packs again.
const maxRelists = 3

func (d *ObjectDir) read(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	d.mu.RLock()
	if !d.loaded {
		d.mu.RUnlock()
		d.reload()
		d.mu.RLock()
	}
	for _, p := range d.packs {
		if off, ok := p.find(h); ok {
			typ, data, err := d.readPacked(p, off)
			d.mu.RUnlock()
			return typ, data, err
		}
	}
	d.mu.RUnlock()
	return d.readLoose(h)
}

// Has reports whether the objects directory holds object h, packed or
// loose, without reading it. It does not list the packs again: a pack
// written since they were listed shows after a read misses or Refresh.
func (d *ObjectDir) Has(h plumbing.Hash) bool { return d.where(h) != "" }

// where returns the file that holds object h, its pack or its loose
// object, or "" when Has would say false.
func (d *ObjectDir) where(h plumbing.Hash) string {
	if p := d.pack(h); p != "" {
		return p
	}
	hex := h.String()
	name := filepath.Join(d.dir, hex[:2], hex[2:])
	if _, err := os.Stat(name); err != nil {
		return ""
	}
	return name
}

// pack returns the pack file that holds object h, or "". Like Has, it
// does not list the packs again.
func (d *ObjectDir) pack(h plumbing.Hash) string {
	d.mu.RLock()
	if !d.loaded {
		d.mu.RUnlock()
		d.reload()
		d.mu.RLock()
	}
	p, _ := d.findPacked(h)
	d.mu.RUnlock()
	if p == nil {
		return ""
	}
	return p.name + ".pack"
}

// Refresh lists the packs again if the pack directory changed, closing
// those that are gone, as a read of a missing object does: a program that
// deletes packs calls it so that their mappings go with them at once.
func (d *ObjectDir) Refresh() { d.reload() }

// reload lists the packs again if the pack directory changed since they
// were listed (or changed within two seconds of it, too soon for its
// modification time to tell), and reports whether it did.
func (d *ObjectDir) reload() bool {
	start := time.Now()
	packDir := filepath.Join(d.dir, "pack")
	fi, err := os.Stat(packDir)
	if err != nil {
		fi = nil
	}
	d.mu.RLock()
	current := d.current(fi)
	d.mu.RUnlock()
	if current {
		return false // without blocking readers, as objects of alternates are missed on every read
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.current(fi) {
		return false
	}
	d.packStat, d.loadedAt, d.loaded = fi, start, true
	names, _ := filepath.Glob(filepath.Join(packDir, "pack-*.idx"))
	keep := d.packs[:0:0]
	old := map[string]*packFile{}
	for _, p := range d.packs {
		old[p.name] = p
	}
	for _, idx := range names {
		name := strings.TrimSuffix(idx, ".idx")
		if p, ok := old[name]; ok {
			keep = append(keep, p)
			delete(old, name)
			continue
		}
		p, err := openPack(name)
		if err != nil {
			continue // being written or deleted; the storer reports it if it matters
		}
		d.nextID++
		p.id = d.nextID
		keep = append(keep, p)
	}
	for _, p := range old {
		_ = p.close() // no reader holds it: they hold d.mu for reading
	}
	d.packs = keep
	return true
}

// current reports whether the packs listed are those of the pack
// directory fi describes (nil if there is none). The caller holds d.mu.
func (d *ObjectDir) current(fi fs.FileInfo) bool {
	if d.closed {
		return true
	}
	if !d.loaded || (fi == nil) != (d.packStat == nil) {
		return false
	}
	return fi == nil || os.SameFile(fi, d.packStat) && fi.ModTime().Equal(d.packStat.ModTime()) &&
		fi.ModTime().Before(d.loadedAt.Add(-2*time.Second))
}

// readLoose reads the loose object h.
func (d *ObjectDir) readLoose(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	hex := h.String()
	name := filepath.Join(d.dir, hex[:2], hex[2:])
	z := d.inflater()
	defer d.putInflater(z)
	z.raw.Reset()
	if err := readWhole(name, &z.raw); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil, plumbing.ErrObjectNotFound
		}
		return 0, nil, fmt.Errorf("read %s: %w", name, err)
	}
	typ, data, err := z.loose(z.raw.Bytes())
	if err != nil {
		return 0, nil, fmt.Errorf("loose object %s: %w: %w", name, ErrCorrupt, err)
	}
	return typ, data, nil
}

// inflater is what reading one object needs, pooled: a zlib reader keeps
// 40 KB of window and tables.
type inflater struct {
	src bytes.Reader
	zr  io.ReadCloser
	raw bytes.Buffer // a loose object's file
	hdr [32]byte
}

func (d *ObjectDir) inflater() *inflater {
	if z, ok := d.zpool.Get().(*inflater); ok {
		return z
	}
	return &inflater{}
}

// maxPooledRaw is the capacity above which a loose object's buffer is
// dropped rather than pooled.
const maxPooledRaw = 64 << 10

func (d *ObjectDir) putInflater(z *inflater) {
	if z.raw.Cap() > maxPooledRaw {
		z.raw = bytes.Buffer{}
	}
	d.zpool.Put(z)
}

func (z *inflater) reset(compressed []byte) error {
	z.src.Reset(compressed)
	if z.zr == nil {
		zr, err := zlib.NewReader(&z.src)
		z.zr = zr
		return err
	}
	return z.zr.(zlib.Resetter).Reset(&z.src, nil)
}

// inflate returns the size bytes compressed starts with, checking that
// the zlib stream ends there.
func (z *inflater) inflate(compressed []byte, size int64) ([]byte, error) {
	if size < 0 || size > int64(len(compressed))*1032+64 {
		return nil, fmt.Errorf("size %d does not fit %d compressed bytes", size, len(compressed))
	}
	if data, ok := storedZlib(compressed, size); ok {
		return data, nil
	}
	return z.inflateStream(compressed, size)
}

// inflateStream is inflate's zlib reader.
func (z *inflater) inflateStream(compressed []byte, size int64) ([]byte, error) {
	if err := z.reset(compressed); err != nil {
		return nil, err
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(z.zr, data); err != nil {
		return nil, err
	}
	if n, err := z.zr.Read(z.hdr[:1]); n != 0 || err != io.EOF {
		return nil, errors.New("more data than its size")
	}
	return data, nil
}

// storedZlib returns the size bytes of content of the zlib stream that
// compressed starts with, when every deflate block of it is stored (as
// cupd writes objects under 4 KiB, and large trees) but for an empty last
// one, its Adler-32 matches, and it holds size bytes. It reports false for
// anything else, which the zlib reader inflates and words the errors
// of. Copying the blocks is
// most of what a zlib reader would do for them, without its reset and
// its reads through a bit reader: a first listing of 10,000 resources
// spent 7% of its CPU inflating stored streams.
func storedZlib(compressed []byte, size int64) ([]byte, bool) {
	// The header: deflate, a window of at most 32 KiB, no preset
	// dictionary, and its check bits (RFC 1950).
	if len(compressed) < 2 || compressed[0]&0x0f != 8 || compressed[0]>>4 > 7 || compressed[1]&0x20 != 0 ||
		(uint(compressed[0])<<8|uint(compressed[1]))%31 != 0 {
		return nil, false
	}
	var data []byte
	p := 2
	for {
		// An empty final block of fixed codes, as klauspost's writer ends
		// a stream: BFINAL, BTYPE 01, the end-of-block code and padding.
		if len(compressed)-p >= 2 && compressed[p] == 0x03 && compressed[p+1] == 0 {
			p += 2
			break
		}
		// A stored block (RFC 1951 3.2.4): a byte of BFINAL, BTYPE 00 and
		// padding, LEN and its complement NLEN, then LEN bytes.
		if len(compressed)-p < 5 || compressed[p]&^1 != 0 {
			return nil, false
		}
		final := compressed[p]&1 != 0
		n := int(endian.LittleEndian.Uint16(compressed[p+1:]))
		if endian.LittleEndian.Uint16(compressed[p+3:]) != ^uint16(n) || len(compressed)-p-5 < n || int64(len(data)+n) > size {
			return nil, false
		}
		if data == nil {
			data = make([]byte, 0, size)
		}
		data = append(data, compressed[p+5:p+5+n]...)
		p += 5 + n
		if final {
			break
		}
	}
	if int64(len(data)) != size || len(compressed)-p < 4 || endian.BigEndian.Uint32(compressed[p:]) != adler32.Checksum(data) {
		return nil, false
	}
	if data == nil {
		data = []byte{} // as the zlib reader's
	}
	return data, true
}

// header decodes the header of a loose object, "<type> <size>\x00",
// from the start of its deflated bytes, which need not be all of them. It
// returns the content that followed the header in what it inflated, a
// slice of z.hdr.
func (z *inflater) header(compressed []byte) (plumbing.ObjectType, int64, []byte, error) {
	if err := z.reset(compressed); err != nil {
		return 0, 0, nil, err
	}
	// The header is at most "commit 9223372036854775807\x00": 27 bytes.
	n, err := io.ReadAtLeast(z.zr, z.hdr[:], 1)
	for n < len(z.hdr) && bytes.IndexByte(z.hdr[:n], 0) < 0 && err == nil {
		var m int
		m, err = z.zr.Read(z.hdr[n:])
		n += m
	}
	nul := bytes.IndexByte(z.hdr[:n], 0)
	if nul < 0 {
		if err != nil && err != io.EOF {
			return 0, 0, nil, err
		}
		return 0, 0, nil, errors.New("no header")
	}
	name, sizeText, ok := strings.Cut(string(z.hdr[:nul]), " ")
	typ, terr := plumbing.ParseObjectType(name)
	size, serr := strconv.ParseInt(sizeText, 10, 64)
	if !ok || terr != nil || serr != nil || size < 0 || typ < plumbing.CommitObject || typ > plumbing.TagObject {
		return 0, 0, nil, fmt.Errorf("malformed header %q", z.hdr[:nul])
	}
	return typ, size, z.hdr[nul+1 : n], nil
}

// loose decodes a loose object: "<type> <size>\x00<content>", deflated.
func (z *inflater) loose(compressed []byte) (plumbing.ObjectType, []byte, error) {
	typ, size, rest, err := z.header(compressed)
	if err != nil {
		return 0, nil, err
	}
	if size > int64(len(compressed))*1032+64 {
		return 0, nil, fmt.Errorf("size %d does not fit %d compressed bytes", size, len(compressed))
	}
	data := make([]byte, size)
	got := copy(data, rest)
	if int64(got) < size {
		if _, err := io.ReadFull(z.zr, data[got:]); err != nil {
			return 0, nil, err
		}
	} else if int64(len(rest)) > size {
		return 0, nil, errors.New("more data than its size")
	}
	if m, err := z.zr.Read(z.hdr[:1]); m != 0 || err != io.EOF {
		return 0, nil, errors.New("more data than its size")
	}
	return typ, data, nil
}

// Pack entry types beyond the object types.
const (
	packOfsDelta = 6
	packRefDelta = 7
)

// readPacked reads the object at offset off of p, following its delta
// chain: every object of the chain but the first is a base, kept in the
// base cache for the objects that share it. The caller holds d.mu for
// reading.
func (d *ObjectDir) readPacked(p *packFile, off uint64) (plumbing.ObjectType, []byte, error) {
	type link struct {
		pack  uint32
		off   uint64
		delta []byte
	}
	var chain []link // from the object down to its base
	var base object
	for {
		if len(chain) > maxDeltaChain {
			return 0, nil, p.corrupt(off, errors.New("delta chain too long"))
		}
		if len(chain) > 0 {
			if b, ok := d.bases.get(baseKey(p.id, off)); ok {
				base = b
				break
			}
		}
		typ, size, pos, err := p.entryHeader(off)
		if err != nil {
			return 0, nil, p.corrupt(off, err)
		}
		var next *packFile
		var nextOff uint64
		switch typ {
		case packOfsDelta:
			rel, n := ofsDeltaOffset(p.pack[pos:])
			if n == 0 || rel == 0 || rel > off {
				return 0, nil, p.corrupt(off, errors.New("bad delta base offset"))
			}
			next, nextOff, pos = p, off-rel, pos+uint64(n)
		case packRefDelta:
			if uint64(len(p.pack)) < pos+20 {
				return 0, nil, p.corrupt(off, io.ErrUnexpectedEOF)
			}
			var bh plumbing.Hash
			copy(bh[:], p.pack[pos:])
			pos += 20
			if next, nextOff = d.findPacked(bh); next == nil {
				// A base outside the packs (a thin pack completed by
				// hand): read it whole.
				bt, bd, err := d.readLoose(bh)
				if err != nil {
					return 0, nil, p.corrupt(off, fmt.Errorf("delta base %s: %w", bh, err))
				}
				base = object{bt, bd}
			}
		case int(plumbing.CommitObject), int(plumbing.TreeObject), int(plumbing.BlobObject), int(plumbing.TagObject):
		default:
			return 0, nil, p.corrupt(off, fmt.Errorf("unknown entry type %d", typ))
		}
		z := d.inflater()
		data, err := z.inflate(p.pack[pos:], size)
		d.putInflater(z)
		if err != nil {
			return 0, nil, p.corrupt(off, err)
		}
		if typ != packOfsDelta && typ != packRefDelta {
			base = object{plumbing.ObjectType(typ), data}
			if len(chain) > 0 {
				d.cacheBase(p.id, off, base)
			}
			break
		}
		chain = append(chain, link{p.id, off, data})
		if next == nil {
			break // its base was read whole
		}
		p, off = next, nextOff
	}
	obj := base
	for i := len(chain) - 1; i >= 0; i-- {
		data, err := applyDelta(obj.data, chain[i].delta)
		if err != nil {
			return 0, nil, fmt.Errorf("pack %s.pack at %d: %w: %w", p.name, chain[i].off, ErrCorrupt, err)
		}
		obj = object{obj.typ, data}
		if i > 0 {
			d.cacheBase(chain[i].pack, chain[i].off, obj)
		}
	}
	return obj.typ, obj.data, nil
}

func (d *ObjectDir) cacheBase(pack uint32, off uint64, o object) {
	if len(o.data) <= maxCachedBlob {
		d.bases.add(baseKey(pack, off), o, int64(len(o.data))+64)
	}
}

// baseKey is the key of a delta base in the cache: its pack and offset.
func baseKey(pack uint32, off uint64) plumbing.Hash {
	var k plumbing.Hash
	endian.BigEndian.PutUint32(k[:], pack)
	endian.BigEndian.PutUint64(k[4:], off)
	return k
}

// findPacked finds h in the packs. The caller holds d.mu for reading.
func (d *ObjectDir) findPacked(h plumbing.Hash) (*packFile, uint64) {
	for _, p := range d.packs {
		if off, ok := p.find(h); ok {
			return p, off
		}
	}
	return nil, 0
}

// ofsDeltaOffset decodes the distance back to an OFS_DELTA's base and
// returns it with the number of bytes it took, 0 if malformed.
func ofsDeltaOffset(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v := uint64(c & 0x7f)
	i := 1
	for c&0x80 != 0 {
		if i >= len(b) || i > 9 {
			return 0, 0
		}
		c = b[i]
		i++
		v = (v+1)<<7 | uint64(c&0x7f)
	}
	return v, i
}

// applyDelta applies a Git delta to base.
func applyDelta(base, delta []byte) ([]byte, error) {
	srcSize, n := deltaSize(delta)
	if n == 0 || srcSize != uint64(len(base)) {
		return nil, errors.New("delta does not fit its base")
	}
	delta = delta[n:]
	dstSize, n := deltaSize(delta)
	if n == 0 || dstSize > uint64(len(delta))*0x10000+uint64(len(base))*uint64(len(delta)) {
		return nil, errors.New("malformed delta")
	}
	delta = delta[n:]
	out := make([]byte, 0, dstSize)
	for len(delta) > 0 {
		cmd := delta[0]
		delta = delta[1:]
		switch {
		case cmd&0x80 != 0: // copy from base
			var off, size uint64
			for i := range 7 {
				if cmd&(1<<i) == 0 {
					continue
				}
				if len(delta) == 0 {
					return nil, errors.New("malformed delta")
				}
				if i < 4 {
					off |= uint64(delta[0]) << (8 * i)
				} else {
					size |= uint64(delta[0]) << (8 * (i - 4))
				}
				delta = delta[1:]
			}
			if size == 0 {
				size = 0x10000
			}
			if off+size > uint64(len(base)) || uint64(len(out))+size > dstSize {
				return nil, errors.New("delta copies out of bounds")
			}
			out = append(out, base[off:off+size]...)
		case cmd != 0: // insert
			if int(cmd) > len(delta) || uint64(len(out))+uint64(cmd) > dstSize {
				return nil, errors.New("delta inserts out of bounds")
			}
			out = append(out, delta[:cmd]...)
			delta = delta[cmd:]
		default:
			return nil, errors.New("delta has reserved instruction 0")
		}
	}
	if uint64(len(out)) != dstSize {
		return nil, errors.New("delta result has the wrong size")
	}
	return out, nil
}

// deltaSize decodes a size of a delta's header: 7 bits a byte, least
// significant first.
func deltaSize(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// packFile is a pack and its index (version 2), both mapped into memory or
// else read.
type packFile struct {
	name      string // path without .idx or .pack
	id        uint32 // for the delta base cache's keys
	idx, pack []byte
	unmaps    []func() error
	count     int
	fanout    []byte // 256 big-endian uint32
	ids       []byte // count * 20
	offsets   []byte // count * 4
	large     []byte // 8 each
}

func openPack(name string) (_ *packFile, err error) {
	p := &packFile{name: name}
	defer func() {
		// What was mapped before a failure (the index of a pack
		// removed meanwhile, say) is unmapped.
		if err != nil {
			_ = p.close()
		}
	}()
	if p.idx, err = p.load(name + ".idx"); err != nil {
		return nil, err
	}
	if p.pack, err = p.load(name + ".pack"); err != nil {
		return nil, err
	}
	idx := p.idx
	if len(idx) < 8+256*4 || string(idx[:4]) != "\xfftOc" || endian.BigEndian.Uint32(idx[4:]) != 2 {
		return nil, fmt.Errorf("%s.idx: %w: not a version 2 pack index", name, ErrCorrupt)
	}
	p.fanout = idx[8 : 8+256*4]
	p.count = int(endian.BigEndian.Uint32(p.fanout[255*4:]))
	rest := idx[8+256*4:]
	if uint64(len(rest)) < uint64(p.count)*28+40 {
		return nil, fmt.Errorf("%s.idx: %w: truncated", name, ErrCorrupt)
	}
	p.ids = rest[:p.count*20]
	p.offsets = rest[p.count*24 : p.count*28]
	p.large = rest[p.count*28 : len(rest)-40]
	if len(p.pack) < 12+20 || string(p.pack[:4]) != "PACK" {
		return nil, fmt.Errorf("%s.pack: %w: not a pack", name, ErrCorrupt)
	}
	return p, nil
}

// load maps the file name, or reads it where it cannot be mapped.
func (p *packFile) load(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if size := fi.Size(); size > 0 && int64(int(size)) == size {
		if data, err := mapFile(f.Fd(), int(size)); err == nil {
			p.unmaps = append(p.unmaps, func() error { return unmapFile(data) })
			return data, nil
		}
	}
	return io.ReadAll(f)
}

func (p *packFile) close() error {
	var err error
	for _, unmap := range p.unmaps {
		err = errors.Join(err, unmap())
	}
	p.unmaps, p.idx, p.pack = nil, nil, nil
	return err
}

// find returns the offset of h in the pack.
func (p *packFile) find(h plumbing.Hash) (uint64, bool) {
	lo := 0
	if h[0] > 0 {
		lo = int(endian.BigEndian.Uint32(p.fanout[(int(h[0])-1)*4:]))
	}
	hi := int(endian.BigEndian.Uint32(p.fanout[int(h[0])*4:]))
	if hi > p.count || lo > hi {
		return 0, false
	}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch c := bytes.Compare(p.ids[mid*20:mid*20+20], h[:]); {
		case c < 0:
			lo = mid + 1
		case c > 0:
			hi = mid
		default:
			return p.offsetAt(mid)
		}
	}
	return 0, false
}

// offsetAt returns the offset of the i-th object of the index, false when
// the index's table of large offsets does not hold it.
func (p *packFile) offsetAt(i int) (uint64, bool) {
	off := uint64(endian.BigEndian.Uint32(p.offsets[i*4:]))
	if off&0x80000000 != 0 {
		j := off &^ 0x80000000
		if uint64(len(p.large)) < j*8+8 {
			return 0, false
		}
		off = endian.BigEndian.Uint64(p.large[j*8:])
	}
	return off, true
}

// entryHeader decodes the header of the entry at off: its type, its size
// (of the object, or of the delta) and where what follows starts.
func (p *packFile) entryHeader(off uint64) (typ int, size int64, pos uint64, err error) {
	end := uint64(len(p.pack)) - 20
	if off < 12 || off >= end {
		return 0, 0, 0, errors.New("offset out of the pack")
	}
	c := p.pack[off]
	typ = int(c>>4) & 7
	s := uint64(c & 0x0f)
	shift := uint(4)
	pos = off + 1
	for c&0x80 != 0 {
		if pos >= end || shift > 60 {
			return 0, 0, 0, errors.New("malformed entry header")
		}
		c = p.pack[pos]
		pos++
		s |= uint64(c&0x7f) << shift
		shift += 7
	}
	if s > 1<<40 {
		return 0, 0, 0, errors.New("entry too large")
	}
	return typ, int64(s), pos, nil
}

func (p *packFile) corrupt(off uint64, err error) error {
	return fmt.Errorf("pack %s.pack at %d: %w: %w", p.name, off, ErrCorrupt, err)
}
