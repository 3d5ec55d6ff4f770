package queue_test

import (
	"testing"
	"time"

	"github.com/cup-dev/cup/runtime/queue"
)

// benchAddGetDone adds a new key, takes the oldest ready key and finishes
// it, b.N times, on a queue holding preload ready keys.
func benchAddGetDone(b *testing.B, preload int) {
	q := queue.New[int](queue.Options{})
	defer q.ShutDown()
	for k := range preload {
		if err := q.Add(k); err != nil {
			b.Fatal(err)
		}
	}
	ctx := b.Context()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := q.Add(preload + i); err != nil {
			b.Fatal(err)
		}
		k, ok := q.Get(ctx)
		if !ok {
			b.Fatal("Get: ok=false")
		}
		q.Done(k)
	}
}

func BenchmarkAddGetDone(b *testing.B) { benchAddGetDone(b, 0) }

func BenchmarkAddGetDone62k(b *testing.B) { benchAddGetDone(b, 62_000) }

// BenchmarkAddAfter62k keeps 62,000 keys waiting with distinct deadlines
// while each iteration parks a new key and cancels the wait of an old one
// from the middle of the heap, then takes and finishes it.
func BenchmarkAddAfter62k(b *testing.B) {
	const n = 62_000
	clock := queue.NewFakeClock(time.Unix(0, 0))
	q := queue.New[int](queue.Options{Clock: clock})
	defer q.ShutDown()
	for k := range n {
		if err := q.AddAfter(k, time.Duration(k*7919%n+1)*time.Second); err != nil {
			b.Fatal(err)
		}
	}
	ctx := b.Context()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := q.AddAfter(n+i, time.Duration((n+i)*7919%n+1)*time.Second); err != nil {
			b.Fatal(err)
		}
		if err := q.Add(i); err != nil { // waiting: moves to ready
			b.Fatal(err)
		}
		k, ok := q.Get(ctx)
		if !ok {
			b.Fatal("Get: ok=false")
		}
		q.Done(k)
	}
}
