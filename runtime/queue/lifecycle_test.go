package queue_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cup-dev/cup/runtime/queue"
)

type result struct {
	key string
	ok  bool
}

// goGet calls q.Get(ctx) in a new goroutine and delivers its result.
func goGet(ctx context.Context, q *queue.Queue[string]) <-chan result {
	ch := make(chan result, 1)
	go func() {
		k, ok := q.Get(ctx)
		ch <- result{k, ok}
	}()
	return ch
}

// blocked fails the test if ch already has a result.
func blocked(t *testing.T, ch <-chan result) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("Get returned %+v, want it blocked", r)
	default:
	}
}

func TestGetBlocksUntilAdd(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		q := queue.New[string](queue.Options{})
		ch := goGet(t.Context(), q)
		synctest.Wait()
		blocked(t, ch)
		must(t, q.Add("k"))
		if r := <-ch; r != (result{"k", true}) {
			t.Fatalf("Get() = %+v, want k", r)
		}
		q.ShutDown()
	})
}

func TestShutDownUnblocksGet(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		clock := queue.NewFakeClock(epoch)
		q := queue.New[string](queue.Options{Clock: clock})
		must(t, q.Add("busy"))
		if k, _ := q.Get(t.Context()); k != "busy" {
			t.Fatalf("Get() = %q, want busy", k)
		}
		must(t, q.Add("busy")) // pending re-run, dropped by ShutDown
		must(t, q.AddAfter("later", time.Minute))
		gets := []<-chan result{goGet(t.Context(), q), goGet(t.Context(), q), goGet(t.Context(), q)}
		synctest.Wait()
		for _, ch := range gets {
			blocked(t, ch)
		}
		q.ShutDown()
		q.ShutDown() // idempotent
		for _, ch := range gets {
			if r := <-ch; r.ok {
				t.Fatalf("Get() after ShutDown = %+v, want ok=false", r)
			}
		}
		if _, ok := q.Get(t.Context()); ok {
			t.Fatal("Get() on a shut-down queue: ok=true")
		}
		for name, err := range map[string]error{
			"Add":            q.Add("k"),
			"AddAfter":       q.AddAfter("k", time.Second),
			"AddRateLimited": q.AddRateLimited("k"),
		} {
			if !errors.Is(err, queue.ErrShutDown) {
				t.Errorf("%s after ShutDown: err = %v, want ErrShutDown", name, err)
			}
		}
		if n := clock.Timers(); n != 0 {
			t.Errorf("%d timers armed after ShutDown", n)
		}
		if s := q.Stats(); s.Ready != 0 || s.Waiting != 0 || s.InFlight != 1 {
			t.Errorf("Stats() after ShutDown = %+v, want only the key in flight", s)
		}
		q.Done("busy")
		if s := q.Stats(); s.InFlight != 0 || s.Ready != 0 {
			t.Errorf("Stats() after Done = %+v, want nothing in flight or ready", s)
		}
		check(t, q)
	})
}

func TestGetContextCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		q := queue.New[string](queue.Options{})
		ctx, cancel := context.WithCancel(t.Context())
		ch := goGet(ctx, q)
		synctest.Wait()
		blocked(t, ch)
		cancel()
		if r := <-ch; r.ok {
			t.Fatalf("Get() after cancel = %+v, want ok=false", r)
		}

		// A done context takes nothing, even with a key ready.
		must(t, q.Add("k"))
		if _, ok := q.Get(ctx); ok {
			t.Fatal("Get() with a done context: ok=true")
		}
		wantLen(t, q, 1)
		check(t, q)
	})
}

func TestGetDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		q := queue.New[string](queue.Options{})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		if _, ok := q.Get(ctx); ok {
			t.Fatal("Get() past its deadline: ok=true")
		}
		if d := time.Since(start); d != time.Second {
			t.Fatalf("Get returned after %v, want 1s", d)
		}
	})
}

// A waiter whose context ends just as it is signalled for a key must not
// leave that key sitting while another worker sleeps.
func TestCancelledWaiterPassesOnWakeup(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		q := queue.New[string](queue.Options{})
		ctx, cancel := context.WithCancel(t.Context())
		first := goGet(ctx, q)
		synctest.Wait()
		second := goGet(t.Context(), q)
		synctest.Wait()
		must(t, q.Add("k")) // signals the first waiter...
		cancel()            // ...which then gives up
		if r := <-first; r.ok {
			// Both orders are legal; then the second must see nothing.
			synctest.Wait()
			blocked(t, second)
			q.ShutDown()
			<-second
			return
		}
		if r := <-second; r != (result{"k", true}) {
			t.Fatalf("second Get() = %+v, want k", r)
		}
		q.ShutDown()
	})
}

func TestRealClockAddAfter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		q := queue.New[string](queue.Options{})
		defer q.ShutDown()
		must(t, q.AddAfter("k", time.Second))
		time.Sleep(time.Second - time.Nanosecond)
		synctest.Wait()
		wantLen(t, q, 0)
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		wantLen(t, q, 1)
		check(t, q)
	})
}
