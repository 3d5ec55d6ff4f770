package runtime

import (
	"container/list"
	"sync"
)

// statusCache keeps derived conditions by (commit, reconciler, primary):
// they are a pure function of those, and deriving them runs the
// transform. It counts the bytes of its keys and conditions and drops
// the least recently used beyond its bound.
type statusCache struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	order *list.List // of *statusEntry, most recent first
	byKey map[string]*list.Element
}

type statusEntry struct {
	key   string
	conds []Condition
	size  int64
}

// defaultStatusCacheBytes bounds the conditions kept.
const defaultStatusCacheBytes = 8 << 20

func statusKey(commit, reconciler string, k key) string {
	return commit + "\x00" + reconciler + "\x00" + k.Namespace + "\x00" + k.Name
}

func (c *statusCache) get(k string) ([]Condition, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[k]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return append([]Condition(nil), e.Value.(*statusEntry).conds...), true
}

func (c *statusCache) add(k string, conds []Condition) {
	size := int64(len(k)) + 96
	for _, cd := range conds {
		size += int64(len(cd.Reconciler)+len(cd.Type)+len(cd.Status)+len(cd.Reason)+len(cd.Message)+len(cd.ObservedRevision)) + 96
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey, c.order = map[string]*list.Element{}, list.New()
		if c.max == 0 {
			c.max = defaultStatusCacheBytes
		}
	}
	if size > c.max {
		return
	}
	if e, ok := c.byKey[k]; ok {
		c.bytes -= e.Value.(*statusEntry).size
		c.order.Remove(e)
	}
	c.byKey[k] = c.order.PushFront(&statusEntry{key: k, conds: append([]Condition(nil), conds...), size: size})
	c.bytes += size
	for c.bytes > c.max {
		last := c.order.Back()
		e := last.Value.(*statusEntry)
		c.order.Remove(last)
		delete(c.byKey, e.key)
		c.bytes -= e.size
	}
}
