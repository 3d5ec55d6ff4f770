package runtime

import (
	"sync"

	"github.com/cup-dev/cup/internal/lru"
)

// statusCache keeps derived conditions by (commit, reconciler, primary):
// they are a pure function of those, and deriving them runs the
// transform. It counts the bytes of its keys and conditions and drops
// the least recently used beyond its bound.
type statusCache struct {
	once  sync.Once
	max   int64
	cache *lru.Cache[[]Condition]
}

// defaultStatusCacheBytes bounds the conditions kept.
const defaultStatusCacheBytes = 8 << 20

func statusKey(commit, reconciler string, k key) string {
	return commit + "\x00" + reconciler + "\x00" + k.Namespace + "\x00" + k.Name
}

func (c *statusCache) init() {
	c.once.Do(func() {
		if c.max == 0 {
			c.max = defaultStatusCacheBytes
		}
		c.cache = lru.New[[]Condition](c.max)
	})
}

func (c *statusCache) get(k string) ([]Condition, bool) {
	c.init()
	conds, ok := c.cache.Get(k)
	return append([]Condition(nil), conds...), ok
}

func (c *statusCache) add(k string, conds []Condition) {
	c.init()
	var size int64
	for _, cd := range conds {
		size += int64(len(cd.Reconciler)+len(cd.Type)+len(cd.Status)+len(cd.Reason)+len(cd.Message)+len(cd.ObservedRevision)) + 96
	}
	c.cache.Add(k, append([]Condition(nil), conds...), size)
}
