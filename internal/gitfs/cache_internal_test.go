package gitfs

import (
	"bytes"
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

// TestStoreKeepsTheLastBlobLargerThanTheCache: a blob over maxCachedBlob
// is read from the objects once, and again only after another such blob;
// one over maxBigBlob is not kept, nor any with the blob cache off.
func TestStoreKeepsTheLastBlobLargerThanTheCache(t *testing.T) {
	objs := memory.NewStorage()
	w := NewStore(objs, WithBlobCache(0))
	write := func(size int, fill byte) plumbing.Hash {
		t.Helper()
		id, err := w.WriteObject(plumbing.BlobObject, bytes.Repeat([]byte{fill}, size))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	big1, big2, huge := write(maxCachedBlob+1, 'a'), write(maxCachedBlob+2, 'b'), write(maxBigBlob+1, 'c')
	st := NewStore(objs)
	read := func(id plumbing.Hash) (fromObjects bool) {
		t.Helper()
		_, kept := st.bigBlob(id)
		data, err := st.ReadObject(plumbing.BlobObject, id)
		if err != nil || len(data) == 0 {
			t.Fatalf("read %s: %d bytes, %v", id, len(data), err)
		}
		data[0] = 'X' // the reader's copy
		return !kept
	}
	for i, step := range []struct {
		id          plumbing.Hash
		fromObjects bool
	}{{big1, true}, {big1, false}, {big1, false}, {big2, true}, {big1, true}, {huge, true}, {big1, false}, {huge, true}} {
		if got := read(step.id); got != step.fromObjects {
			t.Errorf("read %d: from the objects %t, want %t", i, got, step.fromObjects)
		}
	}
	if data, _ := st.ReadObject(plumbing.BlobObject, big1); data[0] != 'a' {
		t.Error("a reader's write reached the kept blob")
	}
	if n, err := st.objectSize(big1); err != nil || n != maxCachedBlob+1 {
		t.Errorf("objectSize of the kept blob = %d, %v", n, err)
	}
	if _, ok := w.bigBlob(big2); ok {
		t.Error("a store with its blob cache off kept a blob")
	}
}
