package gitfs

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	endian "encoding/binary"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
)

// PackOption configures WritePack.
type PackOption func(*packConfig)

type packConfig struct{ deltas bool }

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
// zlib.BestSpeed, except large trees, which are stored; go-git's encoder
// compresses with zlib's default level, which costs 14 ms for the tree of
// a directory of 10,000 files.
func (s *Store) WritePack(w io.Writer, ids []plumbing.Hash, opts ...PackOption) error {
	var cfg packConfig
	for _, o := range opts {
		o(&cfg)
	}
	sum := sha1.New()
	cw := &countingWriter{w: io.MultiWriter(w, sum)}
	var hdr [12]byte
	copy(hdr[:], "PACK")
	endian.BigEndian.PutUint32(hdr[4:], 2)
	endian.BigEndian.PutUint32(hdr[8:], uint32(len(ids)))
	if _, err := cw.Write(hdr[:]); err != nil {
		return err
	}
	var buf bytes.Buffer
	zws := map[int]*zlib.Writer{}
	var prevTree []byte // the last large tree written, and where
	var prevAt int64
	depth := 0 // of the delta chain prevTree ends
	for _, id := range ids {
		typ, data, err := s.readObject(plumbing.AnyObject, id)
		if err != nil {
			return fmt.Errorf("pack %s: %w", id, err)
		}
		at := cw.n
		large := typ == plumbing.TreeObject && len(data) >= storedTreeSize
		level := zlib.BestSpeed
		if large {
			level = zlib.NoCompression
		}
		body := data
		buf.Reset()
		switch delta := treeDelta(cfg.deltas && large && depth < maxDeltaDepth, prevTree, data); {
		case delta != nil:
			buf.Write(packEntryHeader(plumbing.OFSDeltaObject, len(delta)))
			buf.Write(encodeOfsDeltaOffset(at - prevAt))
			body, level = delta, zlib.BestSpeed
			depth++
		default:
			buf.Write(packEntryHeader(typ, len(data)))
			if large {
				depth = 0
			}
		}
		if large {
			prevTree, prevAt = data, at
		}
		zw := zws[level]
		if zw == nil {
			if zw, err = zlib.NewWriterLevel(&buf, level); err != nil {
				return err
			}
			zws[level] = zw
		} else {
			zw.Reset(&buf)
		}
		if _, err := zw.Write(body); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		if _, err := cw.Write(buf.Bytes()); err != nil {
			return err
		}
	}
	_, err := w.Write(sum.Sum(nil))
	return err
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

// treeDelta returns a Git delta that makes target from base by copying
// their common prefix and suffix and inserting the rest, or nil when
// want is false or the delta would not save at least half of target.
func treeDelta(want bool, base, target []byte) []byte {
	if !want || base == nil {
		return nil
	}
	n := min(len(base), len(target))
	p := 0
	for p < n && base[p] == target[p] {
		p++
	}
	sfx := 0
	for sfx < n-p && base[len(base)-1-sfx] == target[len(target)-1-sfx] {
		sfx++
	}
	mid := target[p : len(target)-sfx]
	if len(mid) > len(target)/2 {
		return nil
	}
	d := appendDeltaSize(nil, len(base))
	d = appendDeltaSize(d, len(target))
	d = appendCopy(d, 0, p)
	for len(mid) > 0 {
		k := min(len(mid), 0x7f)
		d = append(d, byte(k))
		d = append(d, mid[:k]...)
		mid = mid[k:]
	}
	return appendCopy(d, len(base)-sfx, sfx)
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
