package queue_test

import (
	"math"
	"testing"
	"time"

	"github.com/cup-dev/cup/runtime/queue"
)

// almostOne is the largest float64 below 1, the top of Rand's range.
var almostOne = math.Nextafter(1, 0)

func TestDefaultBackoff(t *testing.T) {
	t.Parallel()
	want := queue.Backoff{Base: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.5, Cap: time.Minute}
	if b := queue.DefaultBackoff(); b != want {
		t.Fatalf("DefaultBackoff() = %+v, want %+v", b, want)
	}
}

func TestBackoffDelay(t *testing.T) {
	t.Parallel()
	def := queue.DefaultBackoff()
	const ms = time.Millisecond
	for _, tc := range []struct {
		name     string
		b        queue.Backoff
		failures int
		r        float64
		want     time.Duration
	}{
		{"first", def, 0, 0.5, 500 * ms},
		{"second", def, 1, 0.5, 750 * ms},
		{"third", def, 2, 0.5, 1125 * ms},
		{"fourth", def, 3, 0.5, 1687500 * time.Microsecond},
		{"capped", def, 20, 0.5, time.Minute},
		{"huge count", def, math.MaxInt, 0.5, time.Minute},
		{"negative count", def, -3, 0.5, 500 * ms},
		{"jitter low", def, 0, 0, 250 * ms},
		{"jitter high", def, 1, almostOne, 1125 * ms},
		{"jitter low at cap", def, 20, 0, 30 * time.Second},
		{"jitter high at cap", def, 20, almostOne, time.Minute},
		{"jitter below zero", queue.Backoff{Base: time.Second, Factor: 2, Jitter: 3, Cap: time.Hour}, 0, 0, 0},
		{"no cap", queue.Backoff{Base: time.Second, Factor: 2}, 70, 0.5, math.MaxInt64},
		{"zero factor", queue.Backoff{Base: time.Second, Cap: time.Hour}, 1, 0.5, 0},
		{"NaN factor", queue.Backoff{Base: time.Second, Factor: math.NaN(), Cap: time.Hour}, 1, 0.5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.b.Delay(tc.failures, tc.r); got != tc.want {
				t.Fatalf("Delay(%d, %v) = %v, want %v", tc.failures, tc.r, got, tc.want)
			}
		})
	}
}

// waitFor asserts that a key added at the current time becomes ready
// after exactly d, and then takes and finishes it.
func waitFor(t *testing.T, q *queue.Queue[string], clock *queue.FakeClock, d time.Duration) {
	t.Helper()
	if d > 0 {
		clock.Step(d - 1)
		if q.Len() != 0 {
			t.Fatalf("key ready before %v", d)
		}
		clock.Step(1)
	}
	if q.Len() != 1 {
		t.Fatalf("key not ready after %v", d)
	}
	q.Done(get(t, q))
}

func TestAddRateLimited(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		r    float64
		want []time.Duration // then Cap repeats, scaled by the jitter at cap
		cap  time.Duration
	}{
		{"no jitter", 0.5, []time.Duration{500e6, 750e6, 1125e6, 1687.5e6, 2531.25e6}, time.Minute},
		{"jitter low", 0, []time.Duration{250e6, 375e6, 562.5e6, 843.75e6}, 30 * time.Second},
		{"jitter high", almostOne, []time.Duration{750e6, 1125e6, 1687.5e6}, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, clock := newFake(t, queue.Options{Rand: func() float64 { return tc.r }})
			for n, d := range tc.want {
				must(t, q.AddRateLimited("k"))
				if got := q.Failures("k"); got != n+1 {
					t.Fatalf("Failures() = %d, want %d", got, n+1)
				}
				waitFor(t, q, clock, d)
			}
			for range 20 {
				must(t, q.AddRateLimited("k"))
				// The delay for failure n-1 reaches the cap at n-1 = 12:
				// 0.5s * 1.5^11 < 60s < 0.5s * 1.5^12.
				if n := q.Failures("k"); n <= 12 {
					waitFor(t, q, clock, queue.DefaultBackoff().Delay(n-1, tc.r))
					continue
				}
				waitFor(t, q, clock, tc.cap)
			}
			q.Forget("k")
			if n := q.Failures("k"); n != 0 {
				t.Fatalf("Failures() after Forget = %d, want 0", n)
			}
			must(t, q.AddRateLimited("k"))
			waitFor(t, q, clock, tc.want[0])
			if s := q.Stats(); s.Retries != uint64(len(tc.want)+21) {
				t.Fatalf("Stats().Retries = %d, want %d", s.Retries, len(tc.want)+21)
			}
		})
	}
}

func TestAddCancelsBackoff(t *testing.T) {
	t.Parallel()
	q, clock := newFake(t, queue.Options{})
	must(t, q.AddRateLimited("k"))
	must(t, q.AddRateLimited("k")) // coalesced, keeps the earlier deadline
	if s := q.Stats(); s.Waiting != 1 || s.Ready != 0 {
		t.Fatalf("Stats() = %+v, want one key waiting", s)
	}
	must(t, q.Add("k"))
	wantLen(t, q, 1)
	if n := clock.Timers(); n != 0 {
		t.Fatalf("%d timers armed after the wait was cancelled", n)
	}
	if n := q.Failures("k"); n != 2 {
		t.Fatalf("Failures() = %d, want 2: Add does not forget", n)
	}
}
