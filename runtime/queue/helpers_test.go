package queue_test

import (
	"testing"
	"time"

	"github.com/cup-dev/cup/runtime/queue"
)

// epoch is the start time of every FakeClock in these tests.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// newFake returns a queue driven by a new FakeClock, checking the queue's
// invariants when the test ends.
func newFake(t *testing.T, o queue.Options) (*queue.Queue[string], *queue.FakeClock) {
	t.Helper()
	clock := queue.NewFakeClock(epoch)
	o.Clock = clock
	q := queue.New[string](o)
	t.Cleanup(func() { check(t, q) })
	return q, clock
}

// check fails the test if q's internal state is inconsistent.
func check[K comparable](t *testing.T, q *queue.Queue[K]) {
	t.Helper()
	if err := queue.CheckInvariants(q); err != nil {
		t.Fatal(err)
	}
}

// get takes the next key from q, failing the test instead of blocking if
// none is ready.
func get(t *testing.T, q *queue.Queue[string]) string {
	t.Helper()
	if q.Len() == 0 {
		t.Fatal("Get: no key ready")
	}
	k, ok := q.Get(t.Context())
	if !ok {
		t.Fatal("Get: ok=false with a key ready")
	}
	return k
}

// must fails the test if err is not nil.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantLen fails the test unless q has n ready keys.
func wantLen[K comparable](t *testing.T, q *queue.Queue[K], n int) {
	t.Helper()
	if got := q.Len(); got != n {
		t.Fatalf("Len() = %d, want %d", got, n)
	}
}
