package gitfs

import (
	"container/list"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// DefaultTreeCacheSize is the number of tree entries a [TreeCache] holds by
// default: about 6 MB of decoded trees, enough for the trees of a few recent
// commits of a 10,000-file directory. Older commits' trees are decoded again
// when read.
const DefaultTreeCacheSize = 1 << 16

// DefaultBlobCacheSize is the number of bytes of file content a [Store]
// keeps by default.
const DefaultBlobCacheSize = 1 << 20

// maxCachedBlob is the size of the largest blob the blob cache keeps.
const maxCachedBlob = 1 << 20

// TreeCache keeps decoded trees by object id so that reads do not decode the
// same tree again. Trees never change, so entries never go stale; the cache
// is bounded by the total number of tree entries it holds and evicts the
// least recently used trees. One cache may be shared by any number of stores
// and snapshots. It is safe for concurrent use.
type TreeCache struct {
	lru lru[*tree]

	// big holds the last tree read that alone is larger than the bound,
	// which lru refuses: without it, every path looked up in a directory
	// of 100,000 files decoded the directory again, and a first listing
	// of it took longer than ten minutes. It costs at most the largest
	// tree, which a listing of it holds anyway.
	mu     sync.Mutex
	bigKey plumbing.Hash
	big    *tree
}

// NewTreeCache returns a cache holding up to maxEntries tree entries in all.
// A tree counts as its number of entries plus one. With maxEntries <= 0
// nothing is cached. NewTreeCache allocates nothing up front.
func NewTreeCache(maxEntries int) *TreeCache {
	return &TreeCache{lru: lru[*tree]{max: int64(maxEntries)}}
}

func treeCost(t *tree) int64 { return int64(len(t.entries) + 1) }

func (c *TreeCache) get(h plumbing.Hash) (*tree, bool) {
	if t, ok := c.lru.get(h); ok {
		return t, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.big != nil && c.bigKey == h {
		return c.big, true
	}
	return nil, false
}

func (c *TreeCache) add(h plumbing.Hash, t *tree) {
	if cost := treeCost(t); cost <= c.lru.max || c.lru.max <= 0 {
		c.lru.add(h, t, cost)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bigKey, c.big = h, t
}

// Len returns the number of trees in the cache.
func (c *TreeCache) Len() int { return c.lru.len() }

// lru is a map from object ids to values bounded by the total cost of its
// values, evicting the least recently used. It is safe for concurrent use.
type lru[V any] struct {
	mu    sync.Mutex
	max   int64
	used  int64
	ll    list.List // front is most recently used; values are *lruItem[V]
	items map[plumbing.Hash]*list.Element
}

type lruItem[V any] struct {
	key  plumbing.Hash
	val  V
	cost int64
}

func (c *lru[V]) get(h plumbing.Hash) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[h]
	if !ok {
		var zero V
		return zero, false
	}
	c.ll.MoveToFront(el)
	return el.Value.(*lruItem[V]).val, true
}

func (c *lru[V]) add(h plumbing.Hash, v V, cost int64) {
	if cost > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.items = make(map[plumbing.Hash]*list.Element)
	}
	if el, ok := c.items[h]; ok {
		c.ll.MoveToFront(el)
		return
	}
	c.items[h] = c.ll.PushFront(&lruItem[V]{key: h, val: v, cost: cost})
	c.used += cost
	for c.used > c.max {
		el := c.ll.Back()
		it := el.Value.(*lruItem[V])
		c.ll.Remove(el)
		delete(c.items, it.key)
		c.used -= it.cost
	}
}

func (c *lru[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}
