package server

import (
	"container/list"
	"sync"
)

// memo caches what is derived from a commit: single resources and namespace
// listings. Commits never change and controllers are deterministic, so
// entries never go stale; the cache is bounded by an approximate byte budget
// and evicts the least recently used entries.
type memo struct {
	mu     sync.Mutex
	budget int64
	used   int64
	ll     *list.List // front = most recently used; values are *memoItem
	items  map[memoKey]*list.Element
}

type memoKey struct {
	commit    string
	typ       *Type
	namespace string
	name      string // "" for a namespace listing
}

type memoItem struct {
	key  memoKey
	val  any
	size int64
}

func newMemo(budget int64) *memo {
	return &memo{budget: budget, ll: list.New(), items: make(map[memoKey]*list.Element)}
}

func (m *memo) get(k memoKey) (any, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.items[k]
	if !ok {
		return nil, false
	}
	m.ll.MoveToFront(el)
	return el.Value.(*memoItem).val, true
}

// add stores v under k, counting size bytes against the budget. A value larger
// than the whole budget is not stored.
func (m *memo) add(k memoKey, v any, size int64) {
	if size > m.budget {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.items[k]; ok {
		it := el.Value.(*memoItem)
		m.used += size - it.size
		it.val, it.size = v, size
		m.ll.MoveToFront(el)
	} else {
		m.items[k] = m.ll.PushFront(&memoItem{key: k, val: v, size: size})
		m.used += size
	}
	for m.used > m.budget {
		el := m.ll.Back()
		it := el.Value.(*memoItem)
		m.ll.Remove(el)
		delete(m.items, it.key)
		m.used -= it.size
	}
}
