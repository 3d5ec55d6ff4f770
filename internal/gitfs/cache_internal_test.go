package gitfs

import (
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
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

// TestReadBlobOnceLeavesTheBlobCache: ReadBlobOnce reads a blob without
// adding it to the blob cache, and serves one the cache holds; readBlob
// adds what it reads.
func TestReadBlobOnceLeavesTheBlobCache(t *testing.T) {
	objs := memory.NewStorage()
	w, st := NewStore(objs), NewStore(objs) // w's writes fill its own cache
	ids := make([]plumbing.Hash, 3)
	for i := range ids {
		var err error
		if ids[i], err = w.WriteObject(plumbing.BlobObject, fmt.Appendf(nil, "blob %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range ids {
		data, err := st.ReadBlobOnce(id)
		if err != nil || string(data) != fmt.Sprintf("blob %d\n", i) {
			t.Fatalf("ReadBlobOnce(%s) = %q, %v", id, data, err)
		}
	}
	if n := st.blobs.len(); n != 0 {
		t.Fatalf("ReadBlobOnce left %d blobs in the cache, want 0", n)
	}
	if _, err := st.readBlob(ids[0]); err != nil {
		t.Fatal(err)
	}
	if n := st.blobs.len(); n != 1 {
		t.Fatalf("readBlob left %d blobs in the cache, want 1", n)
	}
	data, err := st.ReadBlobOnce(ids[0])
	if err != nil || string(data) != "blob 0\n" {
		t.Fatalf("ReadBlobOnce of a cached blob = %q, %v", data, err)
	}
	data[0] = 'X' // the caller's copy: the cache's stays as it was
	if again, _ := st.ReadBlobOnce(ids[0]); string(again) != "blob 0\n" {
		t.Errorf("the cached blob reads %q after its reader wrote to its copy", again)
	}
}
