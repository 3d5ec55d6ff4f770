package queue_test

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cup-dev/cup/runtime/queue"
)

// TestNeverTwoWorkersOnOneKey runs workers and producers at once and
// checks that no key is ever held by two workers and that every add is
// followed by a processing that began after the add did.
func TestNeverTwoWorkersOnOneKey(t *testing.T) {
	t.Parallel()
	const (
		keys      = 16
		workers   = 8
		producers = 4
		adds      = 2000 // per producer
	)
	clock := queue.NewFakeClock(epoch)
	q := queue.New[int](queue.Options{Clock: clock, Backoff: queue.Backoff{Base: time.Millisecond, Factor: 2, Cap: 8 * time.Millisecond}})

	var (
		mu      sync.Mutex
		holder  [keys]bool
		added   [keys]int // adds begun per key
		covered [keys]int // highest added[k] seen when a processing began
		total   uint64
	)
	progress := make(chan struct{}, 1)

	var workerWG sync.WaitGroup
	t.Cleanup(func() {
		q.ShutDown()
		workerWG.Wait()
	})
	for range workers {
		workerWG.Go(func() {
			for {
				k, ok := q.Get(t.Context())
				if !ok {
					return
				}
				mu.Lock()
				if holder[k] {
					t.Errorf("key %d handed to two workers", k)
				}
				holder[k] = true
				covered[k] = max(covered[k], added[k])
				mu.Unlock()
				runtime.Gosched()
				mu.Lock()
				holder[k] = false
				mu.Unlock()
				q.Done(k)
				select {
				case progress <- struct{}{}:
				default:
				}
			}
		})
	}

	var producerWG sync.WaitGroup
	for p := range producers {
		producerWG.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(p), 1))
			for range adds {
				k := rng.IntN(keys)
				mu.Lock()
				added[k]++
				total++
				mu.Unlock()
				var err error
				switch rng.IntN(8) {
				case 0:
					err = q.AddAfter(k, time.Duration(rng.IntN(4))*time.Millisecond)
				case 1:
					err = q.AddRateLimited(k)
				case 2:
					q.Forget(k)
					fallthrough
				default:
					err = q.Add(k)
				}
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	stepping := make(chan struct{})
	stepperDone := make(chan struct{})
	go func() {
		defer close(stepperDone)
		for {
			select {
			case <-stepping:
				return
			default:
				clock.Step(time.Millisecond)
				runtime.Gosched()
			}
		}
	}()

	producerWG.Wait()
	close(stepping)
	<-stepperDone
	clock.Step(time.Hour) // past every deadline

	timeout := time.After(10 * time.Second) // a guard against a lost key, not a wait
	for {
		mu.Lock()
		done := covered == added
		mu.Unlock()
		if done {
			break
		}
		select {
		case <-progress:
		case <-timeout:
			mu.Lock()
			a, c := added, covered
			mu.Unlock()
			t.Fatalf("keys added but never processed after: added %v, covered %v", a, c)
		}
	}
	check(t, q)
	if s := q.Stats(); s.Adds != total {
		t.Errorf("Stats().Adds = %d, want %d", s.Adds, total)
	}
}
