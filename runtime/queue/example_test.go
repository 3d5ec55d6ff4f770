package queue_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cup-dev/cup/runtime/queue"
)

// A worker takes keys until the queue is shut down, retries failures with
// backoff and forgets a key once it reconciles.
func Example() {
	clock := queue.NewFakeClock(time.Unix(0, 0))
	q := queue.New[string](queue.Options{Clock: clock})
	attempts := 0
	reconcile := func(ctx context.Context, key string) error {
		attempts++
		if attempts < 3 {
			return errors.New("push rejected")
		}
		return nil
	}
	process := func(ctx context.Context) {
		key, ok := q.Get(ctx)
		if !ok {
			return
		}
		defer q.Done(key)
		if err := reconcile(ctx, key); err != nil {
			fmt.Printf("%s: %v, retry %d\n", key, err, q.Failures(key)+1)
			_ = q.AddRateLimited(key)
			return
		}
		fmt.Printf("%s: reconciled after %d failures\n", key, q.Failures(key))
		q.Forget(key)
	}

	ctx := context.Background()
	_ = q.Add("repo/main")
	for q.Stats().Ready+q.Stats().Waiting > 0 {
		clock.Step(time.Minute) // a real worker would block in Get instead
		process(ctx)
	}
	q.ShutDown()
	// Output:
	// repo/main: push rejected, retry 1
	// repo/main: push rejected, retry 2
	// repo/main: reconciled after 2 failures
}
