package gitfs

import (
	"bytes"
	stdzlib "compress/zlib"
	endian "encoding/binary"
	"hash/adler32"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/zlib"
)

// zlibWriters are the writers cupd and git use: stored
// (zlib.NoCompression), and compressed; made once, for they take a
// megabyte of tables each.
type zlibWriters struct {
	b bytes.Buffer
	w map[string]zlibWriter
}

func newZlibWriters(t testing.TB) *zlibWriters {
	t.Helper()
	z := &zlibWriters{w: map[string]zlibWriter{}}
	for name, level := range map[string]int{"stored": zlib.NoCompression, "fastest": zlib.BestSpeed} {
		w, err := zlib.NewWriterLevel(io.Discard, level)
		if err != nil {
			t.Fatal(err)
		}
		sw, err := stdzlib.NewWriterLevel(io.Discard, level)
		if err != nil {
			t.Fatal(err)
		}
		cw, err := newZlibWriter(io.Discard, level)
		if err != nil {
			t.Fatal(err)
		}
		z.w[name], z.w["std-"+name], z.w["cupd-"+name] = w, sw, cw // cupd's: one of the other two
	}
	return z
}

// streams compresses data with each writer.
func (z *zlibWriters) streams(data []byte) map[string][]byte {
	out := map[string][]byte{}
	for name, w := range z.w {
		z.b.Reset()
		w.Reset(&z.b)
		_, _ = w.Write(data)
		_ = w.Close()
		out[name] = bytes.Clone(z.b.Bytes())
	}
	return out
}

// zlibStreams compresses data with each of the writers of zlibWriters.
func zlibStreams(t testing.TB, data []byte) map[string][]byte {
	t.Helper()
	return newZlibWriters(t).streams(data)
}

// FuzzStoredZlib checks inflate's copy of stored blocks against the zlib
// reader: what storedZlib takes, the reader inflates to the same bytes;
// and the stored streams zlib writers make, storedZlib takes, followed by
// whatever comes next in a pack.
func FuzzStoredZlib(f *testing.F) {
	f.Add([]byte(`{"kind": "Item"}`), []byte{0x78, 0x01, 0x01, 0x02, 0x00, 0xfd, 0xff, 'h', 'i', 0x01, 0x3b, 0x00, 0xd2}, int64(2))
	f.Add([]byte{}, []byte{0x78, 0x01, 0x00, 0x00, 0x00, 0xff, 0xff, 0x01, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01}, int64(0))
	f.Add([]byte("abc"), []byte{0x78, 0x9c, 0x03, 0x00}, int64(0))
	writers := newZlibWriters(f)
	f.Fuzz(func(t *testing.T, data, compressed []byte, size int64) {
		var z inflater
		if len(data) > 4096 {
			data = data[:4096] // TestStoredZlib has streams of several blocks
		}
		for name, stream := range writers.streams(data) {
			got, ok := storedZlib(append(stream, "next entry"...), int64(len(data)))
			if ok && !bytes.Equal(got, data) {
				t.Fatalf("%s: storedZlib gave %d bytes, want %d", name, len(got), len(data))
			}
			if !ok && strings.HasSuffix(name, "stored") {
				t.Fatalf("%s: storedZlib refused a stream of stored blocks of %d bytes", name, len(data))
			}
			if got, err := z.inflateStream(stream, int64(len(data))); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s: the zlib reader read %d bytes of %d written, %v", name, len(got), len(data), err)
			}
			if _, ok := storedZlib(stream, int64(len(data))+1); ok {
				t.Fatalf("%s: storedZlib took a stream one byte short of the size asked", name)
			}
		}
		if size < 0 || size > 1<<20 {
			return
		}
		got, ok := storedZlib(compressed, size)
		if !ok {
			return
		}
		want, err := z.inflateStream(compressed, size)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("storedZlib took %x as %q; the zlib reader: %q, %v", compressed, got, want, err)
		}
	})
}

// TestStoredZlib: storedZlib copies streams of several stored blocks; a
// stream it cannot copy goes to the zlib reader.
func TestStoredZlib(t *testing.T) {
	t.Parallel()
	data := []byte("hello, stored")
	stream := zlibStreams(t, data)["stored"]
	for name, bad := range map[string][]byte{
		"empty":            nil,
		"a dictionary":     append([]byte{0x78, 0xbb}, stream[2:]...),
		"header check":     append([]byte{0x78, 0x02}, stream[2:]...),
		"not deflate":      append([]byte{0x79, 0x01}, stream[2:]...),
		"Adler-32":         append(bytes.Clone(stream[:len(stream)-1]), stream[len(stream)-1]^1),
		"NLEN":             func() []byte { b := bytes.Clone(stream); b[5] ^= 1; return b }(),
		"cut short":        stream[:len(stream)-5],
		"no checksum":      stream[:len(stream)-4],
		"compressed block": zlibStreams(t, bytes.Repeat(data, 10))["fastest"],
	} {
		if got, ok := storedZlib(bad, int64(len(data))); ok {
			t.Errorf("%s: storedZlib took %x as %q", name, bad, got)
		}
	}
	// One final block: taken as stored only when its BTYPE is 00.
	block := func(h byte) []byte {
		b := []byte{0x78, 0x01, h, byte(len(data)), 0, ^byte(len(data)), 0xff}
		b = append(b, data...)
		return endian.BigEndian.AppendUint32(b, adler32.Checksum(data))
	}
	if got, ok := storedZlib(block(0x01), int64(len(data))); !ok || !bytes.Equal(got, data) {
		t.Fatalf("a final stored block: %q, %v", got, ok)
	}
	for h, name := range map[byte]string{0x03: "fixed codes", 0x05: "dynamic codes", 0x07: "a reserved type", 0x09: "padding"} {
		if got, ok := storedZlib(block(h), int64(len(data))); ok {
			t.Errorf("a block of %s taken as stored: %q", name, got)
		}
	}
	big := bytes.Repeat([]byte("0123456789"), 20000) // four blocks of at most 65,535 bytes
	for name, s := range zlibStreams(t, big) {
		got, ok := storedZlib(s, int64(len(big)))
		if (strings.HasSuffix(name, "stored") && !ok) || (ok && !bytes.Equal(got, big)) {
			t.Errorf("%s: %d bytes in several blocks: %d bytes, %v", name, len(big), len(got), ok)
		}
	}
	var z inflater
	got, err := z.inflate(stream, int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("inflate = %q, %v", got, err)
	}
	// An empty object, as both writers end it, is empty, not nil.
	for name, s := range zlibStreams(t, nil) {
		if got, ok := storedZlib(s, 0); !ok || got == nil {
			t.Errorf("%s: an empty stream: %v, %v", name, got, ok)
		}
	}
}
