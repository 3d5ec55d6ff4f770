package queue

import (
	"sync"
	"time"
)

// FakeClock is a [Clock] whose time moves only when [FakeClock.Step] is
// called, for tests of the queue and of packages that use it. It is safe
// for concurrent use. The zero value is not usable; call [NewFakeClock].
type FakeClock struct {
	step sync.Mutex // serialises Step calls

	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers []*fakeTimer
}

var _ Clock = (*FakeClock)(nil)

// NewFakeClock returns a FakeClock that reads start until it is stepped.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start}
}

// Now returns the clock's current time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f to run during the [FakeClock.Step] that moves the
// clock to or past Now()+d. A timer with d <= 0 fires at the next Step,
// even Step(0); it never fires inside AfterFunc.
func (c *FakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &fakeTimer{c: c, when: c.now.Add(max(d, 0)), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return t
}

// Step advances the clock by d and runs, one at a time and in deadline
// order, every timer that is due by then, including timers armed by the
// callbacks themselves. While a callback runs, Now reports that timer's
// deadline. Step returns after the last callback has returned. Callbacks
// must not call Step.
func (c *FakeClock) Step(d time.Duration) {
	c.step.Lock()
	defer c.step.Unlock()
	c.mu.Lock()
	target := c.now.Add(max(d, 0))
	for {
		t := c.popDue(target)
		if t == nil {
			break
		}
		if t.when.After(c.now) {
			c.now = t.when
		}
		c.mu.Unlock()
		t.f()
		c.mu.Lock()
	}
	c.now = target
	c.mu.Unlock()
}

// Timers returns the number of timers that are armed and not yet fired or
// stopped.
func (c *FakeClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// popDue removes and returns the earliest timer due by target, or nil. The
// caller holds c.mu.
func (c *FakeClock) popDue(target time.Time) *fakeTimer {
	best := -1
	for i, t := range c.timers {
		if t.when.After(target) {
			continue
		}
		if best < 0 || t.when.Before(c.timers[best].when) ||
			(t.when.Equal(c.timers[best].when) && t.seq < c.timers[best].seq) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	t := c.timers[best]
	c.remove(best)
	return t
}

// remove deletes c.timers[i]. The caller holds c.mu.
func (c *FakeClock) remove(i int) {
	last := len(c.timers) - 1
	c.timers[i] = c.timers[last]
	c.timers[last] = nil
	c.timers = c.timers[:last]
}

type fakeTimer struct {
	c    *FakeClock
	when time.Time
	seq  uint64
	f    func()
}

// Stop removes the timer if it has not fired.
func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, u := range t.c.timers {
		if u == t {
			t.c.remove(i)
			return true
		}
	}
	return false
}
