// Package lru is a least-recently-used cache bounded by the bytes its
// entries take, keys included, as every cache of the server must count
// them.
package lru

import (
	"container/list"
	"sync"
)

// entryOverhead is what an entry costs besides its key and value: the
// list element, the map slot and the entry itself.
const entryOverhead = 96

// Cache holds values by string key in at most a number of bytes: each
// entry's size as Add is told, plus its key and entryOverhead. Adding
// beyond the bound drops the least recently used entries. It is safe for
// concurrent use.
type Cache[V any] struct {
	mu    sync.Mutex
	max   int64
	used  int64
	order *list.List // of *entry[V], most recent first
	byKey map[string]*list.Element
}

type entry[V any] struct {
	key  string
	v    V
	size int64
}

// New returns a cache of at most max bytes.
func New[V any](max int64) *Cache[V] {
	return &Cache[V]{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

// Get returns the value of key and marks it used.
func (c *Cache[V]) Get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry[V]).v, true
}

// Add stores v, of size bytes, under key, replacing what key held. A
// value that alone exceeds the bound is not stored.
func (c *Cache[V]) Add(key string, v V, size int64) {
	size += int64(len(key)) + entryOverhead
	if size > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.used -= el.Value.(*entry[V]).size
		c.order.Remove(el)
	}
	c.byKey[key] = c.order.PushFront(&entry[V]{key: key, v: v, size: size})
	c.used += size
	for c.used > c.max {
		last := c.order.Back()
		e := last.Value.(*entry[V])
		c.order.Remove(last)
		delete(c.byKey, e.key)
		c.used -= e.size
	}
}

// Bytes returns the bytes the entries take, as counted.
func (c *Cache[V]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// Len returns the number of entries.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
