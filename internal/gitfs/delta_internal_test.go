package gitfs

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
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

// testTree encodes entries, already in Git's order, as a tree's content.
func testTree(entries []string) []byte {
	var b []byte
	for _, e := range entries {
		mode, name, _ := strings.Cut(e, " ")
		sum := sha1.Sum([]byte(e))
		b = append(b, mode...)
		b = append(b, ' ')
		b = append(b, name...)
		b = append(b, 0)
		b = append(b, sum[:]...)
	}
	return b
}

// TestEntryDelta: the trees of a directory of 2,000 files, 40 of them
// changed, 10 removed and 10 added at places spread over it, make a delta
// of about those entries, which applies; so do trees whose entries Git
// sorts differently from their names (a directory "a" after "a-b" and
// before "a0"); what is not a tree makes none.
func TestEntryDelta(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var base []string
	for i := range 2000 {
		base = append(base, fmt.Sprintf("100644 file-%05d.yaml", i*2))
	}
	target := slices.Clone(base)
	for range 40 {
		target[rng.IntN(len(target))] = fmt.Sprintf("100755 file-%05d.yaml", rng.IntN(2000)*2)
	}
	slices.SortFunc(target, func(a, b string) int { return strings.Compare(a[7:], b[7:]) })
	target = slices.CompactFunc(target, func(a, b string) bool { return a[7:] == b[7:] })
	for range 10 {
		i := rng.IntN(len(target))
		target = slices.Delete(target, i, i+1)
	}
	for range 10 {
		name := fmt.Sprintf("100644 file-%05d.yaml", rng.IntN(2000)*2+1) // odd: new
		i, _ := slices.BinarySearchFunc(target, name, func(a, b string) int { return strings.Compare(a[7:], b[7:]) })
		target = slices.Insert(target, i, name)
	}
	b, tg := testTree(base), testTree(target)
	d := treeDelta(true, b, tg)
	if d == nil {
		t.Fatal("no delta")
	}
	if got, err := applyDelta(b, d); err != nil || !bytes.Equal(got, tg) {
		t.Fatalf("the delta does not make the target: %v", err)
	}
	if len(d) > 70*60 {
		t.Errorf("a delta of %d bytes for about 70 entries changed of %d (%d bytes)", len(d), len(target), len(tg))
	}
	// Directories sort as if their names ended in "/".
	var big []string
	for i := range 300 {
		for _, e := range []string{"100644 x%03da-b", "40000 x%03da", "100644 x%03da0", "100644 x%03db"} {
			big = append(big, fmt.Sprintf(e, i))
		}
	}
	changed := slices.Clone(big)
	for i := 0; i < len(changed); i += 97 {
		changed[i] = strings.Replace(changed[i], "100644", "100755", 1)
	}
	b, tg = testTree(big), testTree(changed)
	if d = entryDelta(b, tg); d == nil || len(d) > 2048 {
		t.Fatalf("a delta of %d bytes for 13 entries changed of trees with directories", len(d))
	}
	if got, err := applyDelta(b, d); err != nil || !bytes.Equal(got, tg) {
		t.Fatalf("the delta of trees with directories does not make the target: %v", err)
	}
	if d := entryDelta([]byte("not a tree"), tg); d != nil {
		t.Error("a delta from what is not a tree")
	}
}
