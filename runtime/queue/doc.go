// Package queue is the keyed work queue of the reconciler runtime: keys
// name primaries that need a reconcile, and workers take them with
// [Queue.Get] and hand them back with [Queue.Done].
//
// The queue follows client-go's workqueue, with these guarantees:
//
//   - Coalescing: a key is queued at most once. Adding a key that is
//     already ready changes nothing; adding a key that a worker holds
//     marks it to run once more after [Queue.Done], however many times it
//     was added meanwhile.
//   - Exclusion: [Queue.Get] never hands out a key that is in flight, so
//     at most one worker reconciles a key at a time.
//   - Order: ready keys are handed out in the order they became ready.
//   - Delays: [Queue.AddAfter] and [Queue.AddRateLimited] park a key until
//     a deadline. Waiting keys live in a min-heap served by a single timer
//     of the injected [Clock], so every operation is O(log n) in the number
//     of keys.
//   - Backoff: [Queue.AddRateLimited] waits [Backoff.Delay] for the key's
//     failure count and counts one more failure; [Queue.Forget] resets it.
//
// [FakeClock] drives the queue's time in tests, here and in packages that
// use the queue.
package queue
