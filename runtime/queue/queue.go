package queue

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

var (
	// ErrFull is returned when adding a key would take the queue past
	// [Options.MaxItems].
	ErrFull = errors.New("queue: full")
	// ErrShutDown is returned when adding to a queue after [Queue.ShutDown].
	ErrShutDown = errors.New("queue: shut down")
)

// Options configures a [Queue]. The zero value is valid.
type Options struct {
	// Backoff sets the delays of [Queue.AddRateLimited]. The zero value
	// means [DefaultBackoff].
	Backoff Backoff
	// Clock is the source of time. Nil means [RealClock].
	Clock Clock
	// Rand returns numbers in [0, 1) for the backoff jitter. It is called
	// with the queue's lock held and must not call the queue. Nil means
	// math/rand/v2's Float64.
	Rand func() float64
	// MaxItems bounds the number of distinct keys that are ready, waiting,
	// or in flight with a re-run pending; an add that would need one more
	// returns [ErrFull]. Keys in flight with nothing pending do not count.
	// Zero or negative means no bound.
	MaxItems int
}

// Stats is a snapshot of a [Queue]'s counters.
type Stats struct {
	// Ready is the number of keys waiting for a worker, as [Queue.Len].
	Ready int
	// InFlight is the number of keys handed out and not yet done.
	InFlight int
	// Waiting is the number of keys parked until a deadline.
	Waiting int
	// Adds is the number of accepted Add, AddAfter and AddRateLimited
	// calls since [New], coalesced or not.
	Adds uint64
	// Retries is the number of accepted AddRateLimited calls since [New].
	Retries uint64
	// LongestRunning is how long, by the queue's clock, the oldest key in
	// flight has been; zero if none is.
	LongestRunning time.Duration
}

// Queue is a keyed work queue with coalescing, delays and per-key
// backoff; see the package documentation for its guarantees. All methods
// are safe for concurrent use; each holds one mutex for O(log n) work and
// none blocks except [Queue.Get].
type Queue[K comparable] struct {
	backoff  Backoff
	clock    Clock
	rand     func() float64
	maxItems int

	mu       sync.Mutex
	cond     sync.Cond // L is &mu; signalled when a key becomes ready
	items    map[K]*entry[K]
	ready    ring[*entry[K]]
	waiting  waitHeap[K]
	running  runList[K]
	pending  int // keys in flight with a re-run pending
	failures map[K]int
	seq      uint64 // orders equal deadlines

	timer    Timer // armed for the top of waiting, or nil
	timerAt  time.Time
	timerGen uint64 // tells the current timer's callback from stale ones

	adds, retries uint64
	shutDown      bool
}

// New returns an empty queue. It starts no goroutines.
func New[K comparable](o Options) *Queue[K] {
	q := &Queue[K]{
		backoff:  o.Backoff,
		clock:    o.Clock,
		rand:     o.Rand,
		maxItems: o.MaxItems,
		items:    make(map[K]*entry[K]),
		failures: make(map[K]int),
	}
	if q.backoff == (Backoff{}) {
		q.backoff = DefaultBackoff()
	}
	if q.clock == nil {
		q.clock = RealClock{}
	}
	if q.rand == nil {
		q.rand = rand.Float64
	}
	q.cond.L = &q.mu
	return q
}

// Add makes k ready now. If k is already ready, nothing changes; if it is
// waiting for a deadline, the wait is cancelled; if it is in flight, it is
// re-queued once when [Queue.Done] is called, however many times it is
// added meanwhile. Add returns [ErrShutDown] after [Queue.ShutDown] and
// [ErrFull] if k would be one key too many.
func (q *Queue[K]) Add(k K) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutDown {
		return ErrShutDown
	}
	return q.add(k)
}

// AddAfter makes k ready once d has elapsed, or now if d <= 0. If k is
// ready, or waiting for an earlier deadline, the earlier time is kept. If
// k is in flight, it is re-queued when [Queue.Done] is called, to wait
// until the deadline set here if that has not passed yet. Errors are as
// for [Queue.Add].
func (q *Queue[K]) AddAfter(k K, d time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutDown {
		return ErrShutDown
	}
	return q.addAfter(k, d)
}

// AddRateLimited adds k as [Queue.AddAfter] does, after the
// [Backoff.Delay] for k's failure count, and counts one more failure for
// k. On error the failure count is left as it was.
func (q *Queue[K]) AddRateLimited(k K) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutDown {
		return ErrShutDown
	}
	n := q.failures[k]
	if err := q.addAfter(k, q.backoff.Delay(n, q.rand())); err != nil {
		return err
	}
	q.failures[k] = n + 1
	q.retries++
	return nil
}

// Forget resets k's failure count, typically after a successful
// reconcile. Counts are kept for keys that are no longer queued, so
// callers must Forget keys that will not be retried.
func (q *Queue[K]) Forget(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.failures, k)
}

// Failures returns the number of AddRateLimited calls for k since it was
// last forgotten.
func (q *Queue[K]) Failures(k K) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failures[k]
}

// Get blocks until a key is ready and returns it, marked in flight until
// [Queue.Done]. It returns ok=false, without taking a key, once ctx is
// done or the queue is shut down. Keys are handed out in the order they
// became ready, and never while in flight.
func (q *Queue[K]) Get(ctx context.Context) (k K, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var stop func() bool
	for {
		if q.shutDown {
			break
		}
		if ctx.Err() != nil {
			// This waiter may have been signalled for a key. wake
			// usually broadcasts to the others too, but not if stop
			// below wins the race with it, so pass the signal on.
			if q.ready.len() > 0 {
				q.cond.Signal()
			}
			break
		}
		if q.ready.len() > 0 {
			k, ok = q.take(), true
			break
		}
		if stop == nil {
			stop = context.AfterFunc(ctx, q.wake)
		}
		q.cond.Wait()
	}
	if stop != nil {
		stop() // does not wait for wake, so holding mu is fine
	}
	return k, ok
}

// Done marks k as no longer in flight. If k was added while in flight, it
// becomes ready, or waits for the deadline of [Queue.AddAfter]. Done on a
// key that is not in flight does nothing.
func (q *Queue[K]) Done(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.items[k]
	if e == nil || e.state != stateInFlight {
		return
	}
	q.running.remove(e)
	switch {
	case !e.pending:
		delete(q.items, k)
	case e.pendingAt && e.due.After(q.clock.Now()):
		q.pending--
		q.park(e, e.due)
	default:
		q.pending--
		q.makeReady(e)
	}
	e.pending, e.pendingAt = false, false
}

// Len returns the number of ready keys.
func (q *Queue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ready.len()
}

// Stats returns a snapshot of the queue's counters.
func (q *Queue[K]) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := Stats{
		Ready:    q.ready.len(),
		InFlight: q.running.n,
		Waiting:  len(q.waiting),
		Adds:     q.adds,
		Retries:  q.retries,
	}
	if e := q.running.head; e != nil {
		s.LongestRunning = max(q.clock.Now().Sub(e.started), 0)
	}
	return s
}

// ShutDown drops every ready, waiting and pending key, stops the timer
// and wakes every [Queue.Get], which from then on returns ok=false. Adds
// return [ErrShutDown]. Keys in flight stay counted until [Queue.Done].
// ShutDown is idempotent.
func (q *Queue[K]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutDown {
		return
	}
	q.shutDown = true
	q.stopTimer()
	for q.ready.len() > 0 {
		delete(q.items, q.ready.pop().key)
	}
	q.ready.reset()
	for _, e := range q.waiting {
		delete(q.items, e.key)
	}
	q.waiting = nil
	for e := q.running.head; e != nil; e = e.next {
		e.pending, e.pendingAt = false, false
	}
	q.pending = 0
	q.cond.Broadcast()
}
