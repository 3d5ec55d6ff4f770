package local

import (
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
