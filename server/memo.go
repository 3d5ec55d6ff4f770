package server

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
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
	// head is the ring of items: head.next is the most recently used,
	// head.prev the least. The items link themselves, which saves the
	// container/list element an item would otherwise cost.
	head memoItem
	// items finds an item by a 128-bit hash of its key, whose map slot is
	// a third of one holding the key; the item's own key is compared.
	items map[memoHash]*memoItem
	seeds [2]maphash.Seed
	// commit is the last commit string a key was given, shared by the
	// keys of that commit rather than copied into each.
	commit string
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

type memoHash [2]uint64

func (m *memo) hash(k memoKey) memoHash {
	return memoHash{maphash.Comparable(m.seeds[0], k), maphash.Comparable(m.seeds[1], k)}
}

type memoItem struct {
	key        memoKey
	val        any
	size       int64 // the item's own bytes, not those of the entries it holds
	prev, next *memoItem
}

// entryHolder is a memoised value that holds entries, which values of other
// keys (other commits' listings, gets) may hold too. The memo counts an
// entry's bytes once while any item holds it, rather than once an item, so
// that the budget is what the entries take.
type entryHolder interface{ heldEntries() []*entry }

func (l *listing) heldEntries() []*entry { return l.items }

func (e *entry) heldEntries() []*entry {
	if e == nil {
		return nil
	}
	return []*entry{e}
}

// memoEntryOverhead is what one memoised item costs besides its key's
// strings and its value, measured (TestMemoAccountsWhatTheHeapHolds): the
// item itself (a 112-byte allocation) and its slot in the map, which with
// the map's spare room and growth averages about 40 bytes.
const memoEntryOverhead = 112 + 40

// clone returns k holding strings of its own, or shared with the memo's
// other keys (the commit) or with e, the entry memoised under k (its name).
// m.mu is held.
func (m *memo) clone(k memoKey, e *entry) memoKey {
	if k.commit != m.commit {
		m.commit = strings.Clone(k.commit)
	}
	k.commit = m.commit
	k.namespace = strings.Clone(k.namespace)
	if e != nil && e.name == k.name {
		k.name = e.name
	} else {
		k.name = strings.Clone(k.name)
	}
	return k
}

// size is what k costs in the memo, the entry's overhead included. Its
// strings are counted even where they are shared: an upper bound.
func (k memoKey) size() int64 {
	return int64(len(k.commit)+len(k.namespace)+len(k.name)) + memoEntryOverhead
}

func newMemo(budget int64) *memo {
	m := &memo{budget: budget, items: make(map[memoHash]*memoItem), inflight: make(map[memoKey]*memoCall),
		seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
	m.head.prev, m.head.next = &m.head, &m.head
	return m
}

// front makes it the most recently used item. m.mu is held.
func (m *memo) front(it *memoItem) {
	if it.prev != nil { // linked: unlink it first
		it.prev.next, it.next.prev = it.next, it.prev
	}
	it.prev, it.next = &m.head, m.head.next
	m.head.next.prev = it
	m.head.next = it
}

// unheld is what the entries v holds that no item holds yet would add to
// the memo's count. m.mu is held.
func (m *memo) unheld(v any) int64 {
	h, ok := v.(entryHolder)
	if !ok {
		return 0
	}
	var n int64
	for _, e := range h.heldEntries() {
		if e.held == 0 {
			n += e.size()
		}
	}
	return n
}

// hold counts, or with d -1 uncounts, the entries v holds: an entry's bytes
// count while at least one item holds it. m.mu is held.
func (m *memo) hold(v any, d int32) {
	h, ok := v.(entryHolder)
	if !ok {
		return
	}
	for _, e := range h.heldEntries() {
		if d > 0 && e.held == 0 {
			m.used += e.size()
		}
		e.held += d
		if d < 0 && e.held == 0 {
			m.used -= e.size()
		}
	}
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
		if it := m.find(k); it != nil {
			v := it.val
			m.mu.Unlock()
			m.stats.hit()
			return v, nil
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
		c := &memoCall{done: make(chan struct{})}
		m.inflight[k] = c
		m.mu.Unlock()
		m.stats.miss()
		return m.compute(k, c, fn)
	}
}

// lookup returns the value memoised under k, if there is one, without
// computing it or counting a hit.
func (m *memo) lookup(k memoKey) (any, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if it := m.find(k); it != nil {
		return it.val, true
	}
	return nil, false
}

// find returns the item of k, made the most recently used, or nil. m.mu is
// held.
func (m *memo) find(k memoKey) *memoItem {
	it, ok := m.items[m.hash(k)]
	if !ok || it.key != k {
		return nil
	}
	m.front(it)
	return it
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

// add stores v under k, counting size bytes, k's own and those of the
// entries v holds that no other item holds against the budget. A value
// larger than the whole budget is not stored.
func (m *memo) add(k memoKey, v any, size int64) {
	size += k.size()
	if size > m.budget {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if size+m.unheld(v) > m.budget {
		return // storing it would evict everything else, then it
	}
	m.hold(v, 1)
	h := m.hash(k)
	if it, ok := m.items[h]; ok && it.key == k {
		m.hold(it.val, -1)
		m.used += size - it.size
		it.val, it.size = v, size
		m.front(it)
	} else {
		if ok { // another key of the same hash, which cannot be told apart: it goes
			m.remove(it)
		}
		e, _ := v.(*entry)
		it := &memoItem{key: m.clone(k, e), val: v, size: size}
		m.items[h] = it
		m.front(it)
		m.used += size
	}
	for m.used > m.budget && m.head.prev != &m.head {
		m.remove(m.head.prev)
	}
}

// remove drops it. m.mu is held.
func (m *memo) remove(it *memoItem) {
	it.prev.next, it.next.prev = it.next, it.prev
	delete(m.items, m.hash(it.key))
	m.used -= it.size
	m.hold(it.val, -1)
}
