package queue

import (
	"fmt"
	"time"
)

// CheckInvariants reports the first inconsistency in q's internal state,
// for the black-box tests in package queue_test.
func CheckInvariants[K comparable](q *Queue[K]) error {
	q.mu.Lock()
	defer q.mu.Unlock()

	inRing := make(map[K]int)
	for i := range q.ready.len() {
		e := q.ready.at(i)
		inRing[e.key]++
		if q.items[e.key] != e || e.state != stateReady {
			return fmt.Errorf("ready slot %d holds %v in state %d, not its entry", i, e.key, e.state)
		}
	}
	for i, e := range q.waiting {
		if e.index != i || q.items[e.key] != e || e.state != stateWaiting {
			return fmt.Errorf("heap slot %d holds %v with index %d, state %d", i, e.key, e.index, e.state)
		}
		if i > 0 && q.waiting.Less(i, (i-1)/2) {
			return fmt.Errorf("heap order broken at slot %d", i)
		}
	}
	running, last := 0, time.Time{}
	for e := q.running.head; e != nil; e = e.next {
		running++
		if q.items[e.key] != e || e.state != stateInFlight {
			return fmt.Errorf("running list holds %v in state %d", e.key, e.state)
		}
		if e.started.Before(last) {
			return fmt.Errorf("running list out of order at %v", e.key)
		}
		last = e.started
	}
	if running != q.running.n {
		return fmt.Errorf("running list has %d entries, counted %d", running, q.running.n)
	}

	pending := 0
	for k, e := range q.items {
		if e.key != k {
			return fmt.Errorf("entry for %v names %v", k, e.key)
		}
		if (e.state == stateReady) != (inRing[k] == 1) || inRing[k] > 1 {
			return fmt.Errorf("key %v in state %d is in the ready ring %d times", k, e.state, inRing[k])
		}
		if (e.state == stateWaiting) != (e.index >= 0) {
			return fmt.Errorf("key %v in state %d has heap index %d", k, e.state, e.index)
		}
		if e.pending {
			pending++
			if e.state != stateInFlight {
				return fmt.Errorf("key %v is pending but not in flight", k)
			}
		}
		if e.pendingAt && !e.pending {
			return fmt.Errorf("key %v has a pending deadline but nothing pending", k)
		}
	}
	if pending != q.pending {
		return fmt.Errorf("%d keys pending, counted %d", pending, q.pending)
	}
	if n := q.ready.len() + len(q.waiting) + running; n != len(q.items) {
		return fmt.Errorf("%d entries, but %d ready, waiting or running", len(q.items), n)
	}
	if q.maxItems > 0 && q.ready.len()+len(q.waiting)+q.pending > q.maxItems {
		return fmt.Errorf("more than MaxItems=%d keys held", q.maxItems)
	}
	switch {
	case len(q.waiting) == 0 && q.timer != nil:
		return fmt.Errorf("timer armed with nothing waiting")
	case len(q.waiting) > 0 && (q.timer == nil || !q.timerAt.Equal(q.waiting.top())):
		return fmt.Errorf("timer not armed for the earliest deadline")
	}
	return nil
}
