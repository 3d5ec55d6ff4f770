package queue

import (
	"container/heap"
	"time"
)

type state uint8

const (
	stateReady state = iota + 1
	stateWaiting
	stateInFlight
)

// entry is the queue's record of a key that is ready, waiting or in
// flight. Keys the queue holds nothing for have no entry.
type entry[K comparable] struct {
	key   K
	state state
	// pending is set while in flight if the key was added again; then
	// pendingAt says the re-run waits until due rather than starting at
	// Done.
	pending, pendingAt bool
	// due is the deadline while waiting, or of a pending re-run.
	due   time.Time
	seq   uint64 // tie-breaker for equal due times
	index int    // position in the waiting heap, or -1
	// started is when the key was handed out; prev and next link it into
	// the running list while in flight.
	started    time.Time
	prev, next *entry[K]
}

// runList is a doubly linked list of the entries in flight, oldest first.
// Get appends with a time no earlier than any before it, so the head is
// always the longest running.
type runList[K comparable] struct {
	head, tail *entry[K]
	n          int
}

func (l *runList[K]) push(e *entry[K]) {
	e.prev, e.next = l.tail, nil
	if l.tail == nil {
		l.head = e
	} else {
		l.tail.next = e
	}
	l.tail = e
	l.n++
}

func (l *runList[K]) remove(e *entry[K]) {
	if e.prev == nil {
		l.head = e.next
	} else {
		e.prev.next = e.next
	}
	if e.next == nil {
		l.tail = e.prev
	} else {
		e.next.prev = e.prev
	}
	e.prev, e.next = nil, nil
	l.n--
}

// The methods below are called with q.mu held.

// full reports whether one more ready, waiting or pending key would
// exceed MaxItems.
func (q *Queue[K]) full() bool {
	return q.maxItems > 0 && q.ready.len()+len(q.waiting)+q.pending >= q.maxItems
}

func (q *Queue[K]) add(k K) error {
	e := q.items[k]
	switch {
	case e == nil:
		if q.full() {
			return ErrFull
		}
		e = &entry[K]{key: k, index: -1}
		q.items[k] = e
		q.makeReady(e)
	case e.state == stateWaiting:
		heap.Remove(&q.waiting, e.index)
		q.makeReady(e)
		q.rearm()
	case e.state == stateInFlight:
		if !e.pending {
			if q.full() {
				return ErrFull
			}
			e.pending = true
			q.pending++
		}
		e.pendingAt = false
	}
	q.adds++
	return nil
}

func (q *Queue[K]) addAfter(k K, d time.Duration) error {
	if d <= 0 {
		return q.add(k)
	}
	due := q.clock.Now().Add(d)
	e := q.items[k]
	switch {
	case e == nil:
		if q.full() {
			return ErrFull
		}
		e = &entry[K]{key: k, index: -1}
		q.items[k] = e
		q.park(e, due)
	case e.state == stateWaiting:
		if due.Before(e.due) {
			q.seq++
			e.due, e.seq = due, q.seq
			heap.Fix(&q.waiting, e.index)
			q.rearm()
		}
	case e.state == stateInFlight:
		switch {
		case !e.pending:
			if q.full() {
				return ErrFull
			}
			e.pending, e.pendingAt, e.due = true, true, due
			q.pending++
		case e.pendingAt && due.Before(e.due):
			e.due = due
		}
	}
	q.adds++
	return nil
}

// makeReady appends e to the ready FIFO and wakes one Get.
func (q *Queue[K]) makeReady(e *entry[K]) {
	e.state = stateReady
	q.ready.push(e)
	q.cond.Signal()
}

// park makes e wait until due.
func (q *Queue[K]) park(e *entry[K], due time.Time) {
	q.seq++
	e.state, e.due, e.seq = stateWaiting, due, q.seq
	heap.Push(&q.waiting, e)
	q.rearm()
}

// take hands out the oldest ready key; there must be one.
func (q *Queue[K]) take() K {
	e := q.ready.pop()
	e.state = stateInFlight
	e.started = q.clock.Now()
	q.running.push(e)
	return e.key
}

// rearm points the single timer at the earliest deadline, if it is not
// already.
func (q *Queue[K]) rearm() {
	if len(q.waiting) == 0 {
		q.stopTimer()
		return
	}
	top := q.waiting.top()
	if q.timer != nil && q.timerAt.Equal(top) {
		return
	}
	q.stopTimer()
	gen := q.timerGen
	q.timerAt = top
	q.timer = q.clock.AfterFunc(top.Sub(q.clock.Now()), func() { q.fire(gen) })
}

func (q *Queue[K]) stopTimer() {
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
	q.timerGen++
}

// fire is the timer callback: it makes every due key ready, in deadline
// order, and re-arms for the next deadline.
func (q *Queue[K]) fire(gen uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if gen != q.timerGen || q.shutDown {
		return // stopped or replaced after it had started to fire
	}
	q.timer = nil
	now := q.clock.Now()
	for len(q.waiting) > 0 && !q.waiting.top().After(now) {
		q.makeReady(heap.Pop(&q.waiting).(*entry[K]))
	}
	q.rearm()
}

// wake is called when the context of a blocked Get is done.
func (q *Queue[K]) wake() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.cond.Broadcast()
}
