package template

import (
	"crypto/sha256"
	"sync"

	"github.com/cup-dev/cup/controller"
)

// contentKey identifies file content: the SHA-256 of its bytes.
type contentKey [sha256.Size]byte

// decoded is the result of decoding one file's content. Exactly one of res
// and err is set. res is shared: it is never modified and never handed out
// without cloning.
type decoded struct {
	res *controller.Resource
	err error
}

// decodeCache maps file content to its decoded form. Entries are
// content-addressed, so they never go stale; the cache only has to stay
// bounded. It keeps two generations: lookups that hit the old generation
// promote the entry to the current one, and when the current generation is
// full it becomes the old one, dropping the entries not used since the last
// turn. This approximates LRU with one map operation per lookup and lets a
// whole List take the lock once.
//
// A decodeCache is safe for concurrent use. The zero size disables it.
type decodeCache struct {
	half int // capacity of each generation

	mu   sync.Mutex
	cur  map[contentKey]decoded
	prev map[contentKey]decoded
}

func newDecodeCache(size int) *decodeCache {
	if size <= 0 {
		return &decodeCache{}
	}
	half := (size + 1) / 2
	return &decodeCache{half: half, cur: make(map[contentKey]decoded)}
}

// on reports whether c keeps anything.
func (c *decodeCache) on() bool { return c.half > 0 }

// lookup fills out[i] for every keys[i] in the cache and reports whether it
// did so in hit[i].
func (c *decodeCache) lookup(keys []contentKey, out []decoded, hit []bool) {
	if c.half == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range keys {
		if d, ok := c.cur[k]; ok {
			out[i], hit[i] = d, true
			continue
		}
		if d, ok := c.prev[k]; ok {
			out[i], hit[i] = d, true
			c.addLocked(k, d)
		}
	}
}

// add stores the entries that lookup did not find: those whose hit[i] is
// false, or all of them when hit is nil.
func (c *decodeCache) add(keys []contentKey, vals []decoded, hit []bool) {
	if c.half == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range keys {
		if hit == nil || !hit[i] {
			c.addLocked(k, vals[i])
		}
	}
}

func (c *decodeCache) addLocked(k contentKey, d decoded) {
	if _, ok := c.cur[k]; ok {
		return
	}
	if len(c.cur) >= c.half {
		c.prev = c.cur
		c.cur = make(map[contentKey]decoded)
	}
	c.cur[k] = d
}

// len returns the number of entries, counting an entry in both generations
// once per generation.
func (c *decodeCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur) + len(c.prev)
}
