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

// WritePack writes the objects ids names as a Git pack file (version 2,
// no deltas) to w, for a push. Objects are compressed as loose objects
// are by default: zlib.BestSpeed, except large trees, which are stored;
// go-git's encoder compresses with zlib's default level, which costs 14 ms
// for the tree of a directory of 10,000 files.
func (s *Store) WritePack(w io.Writer, ids []plumbing.Hash) error {
	sum := sha1.New()
	out := io.MultiWriter(w, sum)
	var hdr [12]byte
	copy(hdr[:], "PACK")
	endian.BigEndian.PutUint32(hdr[4:], 2)
	endian.BigEndian.PutUint32(hdr[8:], uint32(len(ids)))
	if _, err := out.Write(hdr[:]); err != nil {
		return err
	}
	var buf bytes.Buffer
	zws := map[int]*zlib.Writer{}
	for _, id := range ids {
		typ, data, err := s.readObject(plumbing.AnyObject, id)
		if err != nil {
			return fmt.Errorf("pack %s: %w", id, err)
		}
		level := zlib.BestSpeed
		if typ == plumbing.TreeObject && len(data) >= storedTreeSize {
			level = zlib.NoCompression
		}
		buf.Reset()
		buf.Write(packEntryHeader(typ, len(data)))
		zw := zws[level]
		if zw == nil {
			if zw, err = zlib.NewWriterLevel(&buf, level); err != nil {
				return err
			}
			zws[level] = zw
		} else {
			zw.Reset(&buf)
		}
		if _, err := zw.Write(data); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		if _, err := out.Write(buf.Bytes()); err != nil {
			return err
		}
	}
	_, err := w.Write(sum.Sum(nil))
	return err
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
