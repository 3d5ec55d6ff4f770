package queue_test

import (
	"slices"
	"testing"
	"time"

	"github.com/cup-dev/cup/runtime/queue"
)

func TestFakeClockStep(t *testing.T) {
	t.Parallel()
	clock := queue.NewFakeClock(epoch)
	var fired []time.Duration
	record := func() { fired = append(fired, clock.Now().Sub(epoch)) }
	clock.AfterFunc(30*time.Millisecond, record)
	clock.AfterFunc(10*time.Millisecond, func() {
		record()
		// Armed from a callback and due within the same Step.
		clock.AfterFunc(5*time.Millisecond, record)
	})
	stopped := clock.AfterFunc(20*time.Millisecond, record)
	if !stopped.Stop() {
		t.Fatal("Stop() of a pending timer = false")
	}
	if stopped.Stop() {
		t.Fatal("second Stop() = true")
	}
	clock.Step(25 * time.Millisecond)
	if want := []time.Duration{10e6, 15e6}; !slices.Equal(fired, want) {
		t.Fatalf("fired at %v, want %v", fired, want)
	}
	if now := clock.Now().Sub(epoch); now != 25*time.Millisecond {
		t.Fatalf("Now() = epoch+%v after Step, want 25ms", now)
	}
	if n := clock.Timers(); n != 1 {
		t.Fatalf("Timers() = %d, want 1", n)
	}
	clock.Step(5 * time.Millisecond)
	if len(fired) != 3 || clock.Timers() != 0 {
		t.Fatalf("fired at %v with %d armed, want the 30ms timer fired", fired, clock.Timers())
	}
}

func TestFakeClockZeroDelay(t *testing.T) {
	t.Parallel()
	clock := queue.NewFakeClock(epoch)
	n := 0
	clock.AfterFunc(0, func() { n++ })
	clock.AfterFunc(-time.Second, func() { n++ })
	if n != 0 {
		t.Fatal("AfterFunc ran its function before a Step")
	}
	clock.Step(0)
	if n != 2 {
		t.Fatalf("Step(0) ran %d due timers, want 2", n)
	}
}
