package server

import (
	"container/list"
	"context"
	"errors"
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
	// inflight holds the computations under way, so that concurrent misses
	// of one key compute it once.
	inflight map[memoKey]*memoCall
}

// memoCall is one computation of a memoised value, which concurrent
// callers wait for.
type memoCall struct {
	done chan struct{}
	val  any
	err  error
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
	return &memo{budget: budget, ll: list.New(), items: make(map[memoKey]*list.Element), inflight: make(map[memoKey]*memoCall)}
}

// do returns the value memoised under k, computing it with fn when there is
// none; fn returns the value and its size in bytes. Concurrent callers of
// one key wait for a single computation. When that computation ends with
// its caller's context error, the callers still waiting compute again
// rather than fail for a caller that went away.
func (m *memo) do(ctx context.Context, k memoKey, fn func() (any, int64, error)) (any, error) {
	for {
		m.mu.Lock()
		if el, ok := m.items[k]; ok {
			m.ll.MoveToFront(el)
			m.mu.Unlock()
			return el.Value.(*memoItem).val, nil
		}
		if c, ok := m.inflight[k]; ok {
			m.mu.Unlock()
			select {
			case <-c.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if errors.Is(c.err, context.Canceled) || errors.Is(c.err, context.DeadlineExceeded) {
				continue
			}
			return c.val, c.err
		}
		c := &memoCall{done: make(chan struct{})}
		m.inflight[k] = c
		m.mu.Unlock()

		var size int64
		c.val, size, c.err = fn()
		if c.err == nil {
			m.add(k, c.val, size)
		}
		m.mu.Lock()
		delete(m.inflight, k)
		m.mu.Unlock()
		close(c.done)
		return c.val, c.err
	}
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
