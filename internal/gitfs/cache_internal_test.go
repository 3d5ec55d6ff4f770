package gitfs

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestTreeCacheKeepsTheLastTreeLargerThanItsBound: a tree larger than the
// bound is kept until the next such tree; smaller ones go to the LRU; a
// cache of no entries keeps nothing.
func TestTreeCacheKeepsTheLastTreeLargerThanItsBound(t *testing.T) {
	sized := func(n int) *tree { return &tree{entries: make([]entry, n)} }
	h := func(b byte) plumbing.Hash { return plumbing.Hash{b} }
	c := NewTreeCache(4)
	big1, big2, small := sized(10), sized(20), sized(2)
	c.add(h(1), big1)
	c.add(h(3), small)
	if got, ok := c.get(h(1)); !ok || got != big1 {
		t.Fatal("the tree larger than the bound was not kept")
	}
	c.add(h(2), big2)
	if _, ok := c.get(h(1)); ok {
		t.Error("two trees larger than the bound are kept")
	}
	if got, ok := c.get(h(2)); !ok || got != big2 {
		t.Error("the last tree larger than the bound was not kept")
	}
	if got, ok := c.get(h(3)); !ok || got != small {
		t.Error("a tree within the bound was not kept")
	}
	none := NewTreeCache(0)
	none.add(h(1), big1)
	if _, ok := none.get(h(1)); ok {
		t.Error("a cache of no entries kept a tree")
	}
}
