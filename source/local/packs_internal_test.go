package local

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestMergeSet: the packs merged are those whose sizes break a progression
// of ratio 2, smallest first, and those merged leave one.
func TestMergeSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sizes []int64
		merge []int64
	}{
		{nil, nil},
		{[]int64{5}, nil},
		{[]int64{1, 1}, []int64{1, 1}},
		{[]int64{2, 1}, nil},
		{[]int64{1, 2, 1}, []int64{1, 1, 2}},
		{[]int64{8, 4, 2, 1}, nil},
		{[]int64{8, 4, 2, 1, 1}, []int64{1, 1, 2, 4, 8}},
		{[]int64{100, 3, 1}, nil},
		{[]int64{100, 3, 2}, []int64{2, 3}},
		{[]int64{100, 60, 3, 2}, []int64{2, 3, 60, 100}},
	} {
		packs := make([]ownPack, len(tc.sizes))
		for i, s := range tc.sizes {
			packs[i] = ownPack{name: string(rune('a' + i)), size: s}
		}
		var got []int64
		for _, p := range mergeSet(packs) {
			got = append(got, p.size)
		}
		if !slices.Equal(got, tc.merge) {
			t.Errorf("sizes %v: merge %v, want %v", tc.sizes, got, tc.merge)
		}
	}
	// One pack of a group at a time, merged as they come: the packs left
	// stay a progression, O(log n) of them.
	var packs []ownPack
	for i := range 1000 {
		packs = append(packs, ownPack{name: string(rune(i)), size: 10})
		for set := mergeSet(packs); len(set) >= 2; set = mergeSet(packs) {
			var sum int64
			for _, p := range set {
				sum += p.size
				packs = slices.DeleteFunc(packs, func(q ownPack) bool { return q.name == p.name })
			}
			packs = append(packs, ownPack{name: set[0].name, size: sum})
		}
		if len(packs) > 11 {
			t.Fatalf("%d packs after %d groups", len(packs), i+1)
		}
	}
}

// TestAdoptable: a packer takes on the small packs it finds, but none git
// is told to keep, no cruft pack, none with a bitmap, none too large, and
// none at all beside a multi-pack-index.
func TestAdoptable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pack := func(name string, size int, also ...string) {
		for _, ext := range append([]string{".idx"}, also...) {
			if err := os.WriteFile(filepath.Join(dir, name+ext), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// Sparse: the size is what counts.
		if err := os.WriteFile(filepath.Join(dir, name+".pack"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(filepath.Join(dir, name+".pack"), int64(size)); err != nil {
			t.Fatal(err)
		}
	}
	pack("pack-a", 100)
	pack("pack-b", 200, ".rev")
	pack("pack-kept", 100, ".keep")
	pack("pack-promised", 100, ".promisor")
	pack("pack-cruft", 100, ".mtimes")
	pack("pack-bitmap", 100, ".bitmap")
	pack("pack-large", adoptMaxBytes+1)
	var got []string
	for _, p := range adoptable(dir) {
		got = append(got, filepath.Base(p.name))
	}
	if !slices.Equal(got, []string{"pack-a", "pack-b"}) {
		t.Errorf("adopted %v, want pack-a and pack-b", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "multi-pack-index"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := adoptable(dir); len(got) != 0 {
		t.Errorf("beside a multi-pack-index: adopted %v", got)
	}
}
