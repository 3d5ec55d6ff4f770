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

// FuzzTreeDelta: the delta of any two byte strings, with the common prefix
// and suffix found a chunk at a time, applies to the target, and is found
// whenever a byte-at-a-time search finds half the target in common.
func FuzzTreeDelta(f *testing.F) {
	tree := bytes.Repeat([]byte("100644 file-00000.yaml\x00aaaaaaaaaaaaaaaaaaaa"), 40)
	f.Add(tree, 500, 3, []byte("x"))
	f.Add(tree, 0, 0, []byte{})
	f.Add(tree, len(tree)-1, 1, []byte("yy"))
	f.Add([]byte("ab"), 1, 1, []byte("ab"))
	f.Fuzz(func(t *testing.T, base []byte, at, cut int, insert []byte) {
		if len(base) == 0 {
			return
		}
		at = min(max(at, 0), len(base))
		cut = min(max(cut, 0), len(base)-at)
		target := append(append(bytes.Clone(base[:at]), insert...), base[at+cut:]...)
		n := min(len(base), len(target))
		p := 0
		for p < n && base[p] == target[p] {
			p++
		}
		s := 0
		for s < n-p && base[len(base)-1-s] == target[len(target)-1-s] {
			s++
		}
		if got := commonPrefix(base[:n], target[:n]); got != p {
			t.Fatalf("common prefix %d, byte by byte %d", got, p)
		}
		if got := commonSuffix(base[len(base)-(n-p):], target[len(target)-(n-p):]); got != s {
			t.Fatalf("common suffix %d, byte by byte %d", got, s)
		}
		d := treeDelta(true, base, target)
		if d == nil {
			if len(target)-p-s <= len(target)/2 {
				t.Fatalf("no delta, with %d of %d bytes in common", p+s, len(target))
			}
			return
		}
		got, err := applyDelta(base, d)
		if err != nil || !bytes.Equal(got, target) {
			t.Fatalf("the delta applies to %q, %v; want %q", got, err, target)
		}
	})
}

// FuzzLooseOrderParsers: what PackLoose reads of commits and trees, which
// a push may have made, never panics, and finds no more than is there.
func FuzzLooseOrderParsers(f *testing.F) {
	f.Add([]byte("tree 4b825dc642cb6eb9a060e54bf8d69288fbe4904b\nparent 4b825dc642cb6eb9a060e54bf8d69288fbe4904b\ncommitter A <a@x> 1700000000 +0000\n\nm\n"))
	f.Add(append([]byte("40000 dir\x00"), make([]byte, 20)...))
	f.Add([]byte("100644 f\x00short"))
	f.Add([]byte("committer <> \n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if parents, _ := commitParentsTime(data); len(parents) > bytes.Count(data, []byte("parent ")) {
			t.Fatalf("%d parents from %d parent lines", len(parents), bytes.Count(data, []byte("parent ")))
		}
		if stack := appendSubtrees(nil, data); len(stack) > len(data)/27 {
			t.Fatalf("%d subtrees from %d bytes: an entry takes 27 at least", len(stack), len(data))
		}
	})
}
