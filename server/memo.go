package server

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"

	"connectrpc.com/connect"
)

// memo caches what is derived from a commit: single resources and namespace
// listings. Commits never change and controllers are deterministic, so
// entries never go stale; the cache is bounded by a byte budget and evicts
// the least recently used entries. The budget counts keys as well as
// values, and the memo keeps copies of its keys' strings, never the request
// strings they came from: a key cut out of a long request line would
// otherwise keep the whole line alive.
type memo struct {
	mu     sync.Mutex
	budget int64
	used   int64
	ll     *list.List // front = most recently used; values are *memoItem
	items  map[memoKey]*list.Element
	// inflight holds the computations under way, so that concurrent misses
	// of one key compute it once.
	inflight map[memoKey]*memoCall
	stats    memoStats // read by the metrics (observe.go)
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
	// what tells derived values apart from reads (memoRead): a commit's
	// events, whose name is the commit they are relative to (events.go),
	// and a page of history (history.go).
	what memoWhat
}

// memoWhat says what a memo entry holds.
type memoWhat uint8

const (
	memoRead       memoWhat = iota // a resource, or with no name a listing
	memoEvents                     // a commit's events for a type and namespace
	memoHistory                    // a page of a resource's history
	memoNamespaces                 // the namespaces of a type at a commit
	memoChanges                    // the last changes of a page of resources
)

type memoItem struct {
	key  memoKey
	val  any
	size int64
}

// memoEntryOverhead is what one memoised entry costs besides its key's
// strings and its value: the list element, the item, the map's slot and
// the key's string headers.
const memoEntryOverhead = 192

// clone returns k holding strings of its own.
func (k memoKey) clone() memoKey {
	k.commit = strings.Clone(k.commit)
	k.namespace = strings.Clone(k.namespace)
	k.name = strings.Clone(k.name)
	return k
}

// size is what k costs in the memo, the entry's overhead included.
func (k memoKey) size() int64 {
	return int64(len(k.commit)+len(k.namespace)+len(k.name)) + memoEntryOverhead
}

func newMemo(budget int64) *memo {
	return &memo{budget: budget, ll: list.New(), items: make(map[memoKey]*list.Element), inflight: make(map[memoKey]*memoCall)}
}

// do returns the value memoised under k, computing it with fn when there is
// none; fn returns the value and its size in bytes. Concurrent callers of
// one key wait for a single computation. When that computation ends with
// its caller's context error, the callers still waiting compute again
// rather than fail for a caller that went away. When fn panics, every
// caller waiting for it gets an Internal error, nothing is memoised, and
// the panic is returned to fn's caller as an error holding its stack, so
// that one bad read does not block its key until a restart.
func (m *memo) do(ctx context.Context, k memoKey, fn func() (any, int64, error)) (any, error) {
	for {
		m.mu.Lock()
		if el, ok := m.items[k]; ok {
			m.ll.MoveToFront(el)
			m.mu.Unlock()
			m.stats.hit()
			return el.Value.(*memoItem).val, nil
		}
		if c, ok := m.inflight[k]; ok {
			m.mu.Unlock()
			m.stats.hit()
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
		k = k.clone()
		c := &memoCall{done: make(chan struct{})}
		m.inflight[k] = c
		m.mu.Unlock()
		m.stats.miss()
		return m.compute(k, c, fn)
	}
}

// compute runs fn for the call c of key k, memoises a success, and
// releases c's waiters however fn ends.
func (m *memo) compute(k memoKey, c *memoCall, fn func() (any, int64, error)) (val any, err error) {
	defer func() {
		if p := recover(); p != nil {
			// The callers waiting for it get an error of their own.
			c.val, c.err = nil, connect.NewError(connect.CodeInternal, errors.New(internalMessage))
			val, err = nil, fmt.Errorf("panic computing a memoised read of %s %s/%s at %s: %v\n%s",
				k.typeName(), k.namespace, k.name, k.commit, p, debug.Stack())
		}
		m.mu.Lock()
		delete(m.inflight, k)
		m.mu.Unlock()
		close(c.done)
	}()
	var size int64
	c.val, size, c.err = fn()
	if c.err == nil {
		m.add(k, c.val, size)
	}
	return c.val, c.err
}

func (k memoKey) typeName() string {
	if k.typ == nil {
		return "?"
	}
	return k.typ.Plural + "." + k.typ.Group
}

// add stores v under k, counting size bytes and k's own against the budget.
// A value larger than the whole budget is not stored.
func (m *memo) add(k memoKey, v any, size int64) {
	size += k.size()
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
