package gitfs

import (
	"bytes"
	"testing"
)

// TestTreeDeltaRoundTrip: what treeDelta writes, applyDelta (the reader
// of packs) turns back into the target, and an offset encoded for an
// ofs-delta decodes to itself.
func TestTreeDeltaRoundTrip(t *testing.T) {
	base := bytes.Repeat([]byte("100644 file-00000.yaml\x00aaaaaaaaaaaaaaaaaaaa"), 4000)
	for name, target := range map[string][]byte{
		"changed":  append(append(bytes.Clone(base[:80000]), "100644 new\x00bbbbbbbbbbbbbbbbbbbb"...), base[80000:]...),
		"inserted": append(bytes.Clone(base[:len(base)-5]), "xxxxx"...),
		"removed":  bytes.Clone(base[100:]),
	} {
		d := treeDelta(true, base, target)
		if d == nil {
			t.Fatalf("%s: no delta", name)
		}
		got, err := applyDelta(base, d)
		if err != nil || !bytes.Equal(got, target) {
			t.Fatalf("%s: delta of %d bytes applies to %d bytes, %v", name, len(d), len(got), err)
		}
	}
	if d := treeDelta(true, base, bytes.Repeat([]byte("z"), len(base))); d != nil {
		t.Error("a delta of a tree that shares nothing with its base")
	}
	for _, back := range []int64{1, 127, 128, 16511, 16512, 1 << 40} {
		if v, n := ofsDeltaOffset(encodeOfsDeltaOffset(back)); int64(v) != back || n == 0 {
			t.Errorf("offset %d decodes to %d", back, v)
		}
	}
}
