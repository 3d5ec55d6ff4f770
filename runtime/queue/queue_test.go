package queue_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cup-dev/cup/runtime/queue"
)

func TestAddCoalesces(t *testing.T) {
	t.Parallel()
	q, _ := newFake(t, queue.Options{})
	for range 3 {
		must(t, q.Add("k"))
	}
	wantLen(t, q, 1)
	if k := get(t, q); k != "k" {
		t.Fatalf("Get() = %q, want k", k)
	}
	wantLen(t, q, 0)
	q.Done("k")
	if s := q.Stats(); s != (queue.Stats{Adds: 3}) {
		t.Fatalf("Stats() = %+v, want only Adds: 3", s)
	}
}

func TestAddWhileInFlightRequeuesOnce(t *testing.T) {
	t.Parallel()
	q, _ := newFake(t, queue.Options{})
	must(t, q.Add("k"))
	get(t, q)
	for range 3 {
		must(t, q.Add("k"))
	}
	wantLen(t, q, 0) // never handed out while in flight
	check(t, q)
	q.Done("k")
	wantLen(t, q, 1)
	get(t, q)
	q.Done("k")
	wantLen(t, q, 0)
	if s := q.Stats(); s.Ready+s.InFlight+s.Waiting != 0 {
		t.Fatalf("Stats() = %+v, want an empty queue", s)
	}
}

func TestDoneWithoutGetIsIgnored(t *testing.T) {
	t.Parallel()
	q, _ := newFake(t, queue.Options{})
	q.Done("never-added")
	must(t, q.Add("k"))
	q.Done("k") // ready, not in flight
	wantLen(t, q, 1)
}

func TestGetFIFO(t *testing.T) {
	t.Parallel()
	q, clock := newFake(t, queue.Options{})
	must(t, q.AddAfter("late", 20*time.Millisecond))
	must(t, q.AddAfter("early", 10*time.Millisecond))
	for _, k := range []string{"a", "b", "c", "a", "b"} {
		must(t, q.Add(k))
	}
	clock.Step(time.Second)
	must(t, q.Add("d"))
	var got []string
	for q.Len() > 0 {
		got = append(got, get(t, q))
	}
	want := []string{"a", "b", "c", "early", "late", "d"}
	if !slices.Equal(got, want) {
		t.Fatalf("Get order = %v, want %v", got, want)
	}
}

func TestMaxItems(t *testing.T) {
	t.Parallel()
	q, _ := newFake(t, queue.Options{MaxItems: 2})
	must(t, q.Add("a"))
	must(t, q.AddAfter("b", time.Minute))
	must(t, q.Add("a")) // coalesced: no new key
	must(t, q.Add("b")) // moves b from waiting to ready
	for name, err := range map[string]error{
		"Add":            q.Add("c"),
		"AddAfter":       q.AddAfter("c", time.Second),
		"AddRateLimited": q.AddRateLimited("c"),
	} {
		if !errors.Is(err, queue.ErrFull) {
			t.Errorf("%s on a full queue: err = %v, want ErrFull", name, err)
		}
	}
	if n := q.Failures("c"); n != 0 {
		t.Errorf("Failures(c) = %d after a refused AddRateLimited, want 0", n)
	}
	get(t, q) // a is in flight: one slot free
	must(t, q.Add("c"))
	if err := q.Add("a"); !errors.Is(err, queue.ErrFull) {
		t.Fatalf("re-adding an in-flight key to a full queue: err = %v, want ErrFull", err)
	}
	q.Done("a")
	get(t, q) // b
	must(t, q.Add("b"))
	must(t, q.Add("b")) // already pending
	if s := q.Stats(); s.Adds != 7 {
		t.Fatalf("Stats().Adds = %d, want 7 accepted adds", s.Adds)
	}
}

func TestAddAfter(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	for _, tc := range []struct {
		name string
		ops  func(q *queue.Queue[string], clock *queue.FakeClock)
		// ready is the clock offset at which k becomes ready.
		ready time.Duration
	}{
		{"delay", func(q *queue.Queue[string], _ *queue.FakeClock) {
			q.AddAfter("k", 10*ms)
		}, 10 * ms},
		{"zero delay is Add", func(q *queue.Queue[string], _ *queue.FakeClock) {
			q.AddAfter("k", 0)
		}, 0},
		{"earlier deadline wins", func(q *queue.Queue[string], _ *queue.FakeClock) {
			q.AddAfter("k", 10*ms)
			q.AddAfter("k", 5*ms)
		}, 5 * ms},
		{"later deadline is ignored", func(q *queue.Queue[string], _ *queue.FakeClock) {
			q.AddAfter("k", 5*ms)
			q.AddAfter("k", 10*ms)
		}, 5 * ms},
		{"ready key stays ready", func(q *queue.Queue[string], _ *queue.FakeClock) {
			q.Add("k")
			q.AddAfter("k", 10*ms)
		}, 0},
		{"Add cancels the wait", func(q *queue.Queue[string], _ *queue.FakeClock) {
			q.AddAfter("k", time.Hour)
			q.Add("k")
		}, 0},
		{"in flight, done before the deadline", func(q *queue.Queue[string], clock *queue.FakeClock) {
			q.Add("k")
			q.Get(t.Context())
			q.AddAfter("k", 10*ms)
			clock.Step(4 * ms)
			q.Done("k")
		}, 10 * ms},
		{"in flight, done after the deadline", func(q *queue.Queue[string], clock *queue.FakeClock) {
			q.Add("k")
			q.Get(t.Context())
			q.AddAfter("k", 10*ms)
			clock.Step(15 * ms)
			q.Done("k")
		}, 15 * ms},
		{"in flight, earlier deadline wins", func(q *queue.Queue[string], clock *queue.FakeClock) {
			q.Add("k")
			q.Get(t.Context())
			q.AddAfter("k", 10*ms)
			q.AddAfter("k", 6*ms)
			q.AddAfter("k", 8*ms)
			q.Done("k")
		}, 6 * ms},
		{"in flight, Add then AddAfter", func(q *queue.Queue[string], clock *queue.FakeClock) {
			q.Add("k")
			q.Get(t.Context())
			q.Add("k")
			q.AddAfter("k", 10*ms)
			q.Done("k")
		}, 0},
		{"in flight, AddAfter then Add", func(q *queue.Queue[string], clock *queue.FakeClock) {
			q.Add("k")
			q.Get(t.Context())
			q.AddAfter("k", 10*ms)
			q.Add("k")
			clock.Step(2 * ms)
			q.Done("k")
		}, 2 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, clock := newFake(t, queue.Options{})
			tc.ops(q, clock)
			check(t, q)
			now := clock.Now().Sub(epoch)
			if now > tc.ready {
				t.Fatalf("test steps the clock to %v, past %v", now, tc.ready)
			}
			if now < tc.ready {
				clock.Step(tc.ready - now - 1)
				wantLen(t, q, 0)
				if s := q.Stats(); s.Waiting != 1 {
					t.Fatalf("Stats().Waiting = %d before the deadline, want 1", s.Waiting)
				}
				clock.Step(1)
			}
			wantLen(t, q, 1)
			get(t, q)
			q.Done("k")
			clock.Step(time.Hour)
			wantLen(t, q, 0)
			if n := clock.Timers(); n != 0 {
				t.Fatalf("%d timers armed with nothing waiting", n)
			}
		})
	}
}

func TestOneTimerForAllWaitingKeys(t *testing.T) {
	t.Parallel()
	q, clock := newFake(t, queue.Options{})
	delays := []int{50, 10, 40, 30, 20, 10, 60}
	for i, d := range delays {
		must(t, q.AddAfter(string(rune('a'+i)), time.Duration(d)*time.Millisecond))
		if n := clock.Timers(); n != 1 {
			t.Fatalf("%d timers armed, want 1", n)
		}
	}
	must(t, q.Add("b")) // cancel the earliest wait: the timer moves
	if n := clock.Timers(); n != 1 {
		t.Fatalf("%d timers armed after a cancel, want 1", n)
	}
	var got []string
	for range 6 {
		clock.Step(10 * time.Millisecond)
		check(t, q)
		for q.Len() > 0 {
			got = append(got, get(t, q))
		}
	}
	want := []string{"b", "f", "e", "d", "c", "a", "g"}
	if !slices.Equal(got, want) {
		t.Fatalf("Get order = %v, want %v", got, want)
	}
	if n := clock.Timers(); n != 0 {
		t.Fatalf("%d timers armed with nothing waiting", n)
	}
}

func TestStats(t *testing.T) {
	t.Parallel()
	q, clock := newFake(t, queue.Options{Rand: func() float64 { return 0.5 }})
	must(t, q.Add("a"))
	must(t, q.Add("b"))
	must(t, q.Add("c"))
	must(t, q.AddAfter("d", time.Minute))
	get(t, q)
	clock.Step(5 * time.Second)
	get(t, q)
	clock.Step(2 * time.Second)
	must(t, q.AddRateLimited("e"))
	want := queue.Stats{Ready: 1, InFlight: 2, Waiting: 2, Adds: 5, Retries: 1, LongestRunning: 7 * time.Second}
	if s := q.Stats(); s != want {
		t.Fatalf("Stats() = %+v, want %+v", s, want)
	}
	q.Done("a")
	if s := q.Stats(); s.LongestRunning != 2*time.Second || s.InFlight != 1 {
		t.Fatalf("after Done(a): Stats() = %+v, want LongestRunning 2s, InFlight 1", s)
	}
}

// TestFIFOGrowAndShrink keeps the order across the ready buffer's growth,
// wrap-around and shrinking.
func TestFIFOGrowAndShrink(t *testing.T) {
	t.Parallel()
	q := queue.New[int](queue.Options{Clock: queue.NewFakeClock(epoch)})
	next, want := 0, 0
	take := func(n int) {
		for range n {
			k, ok := q.Get(t.Context())
			if !ok || k != want {
				t.Fatalf("Get() = %d, %v; want %d", k, ok, want)
			}
			q.Done(k)
			want++
		}
	}
	for _, round := range []struct{ add, take int }{{1000, 500}, {700, 1100}, {3, 1}, {40, 42}, {5000, 5100}} {
		for range round.add {
			must(t, q.Add(next))
			next++
		}
		take(round.take)
		check(t, q)
	}
	wantLen(t, q, 0)
}
