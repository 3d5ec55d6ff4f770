package queue

import "time"

// Clock is the source of time for a [Queue]. Implementations must be safe
// for concurrent use. AfterFunc must not call f before it returns, because
// the queue arms its timer while holding its lock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine, or synchronously from a
	// driver such as [FakeClock.Step], once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending call made by [Clock.AfterFunc].
type Timer interface {
	// Stop prevents the call if it has not happened yet. It reports
	// whether it did so, like [time.Timer.Stop].
	Stop() bool
}

// RealClock is the [Clock] of the time package; it is the default.
type RealClock struct{}

var _ Clock = RealClock{}

// Now returns [time.Now].
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc wraps [time.AfterFunc].
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
