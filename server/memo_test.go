package server

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestMemoDoComputesOnceForConcurrentCallers(t *testing.T) {
	t.Parallel()
	m := newMemo(1 << 20)
	k := memoKey{commit: "c", namespace: "ns"}
	var calls atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			v, err := m.do(t.Context(), k, func() (any, int64, error) {
				calls.Add(1)
				<-release
				return "listing", 10, nil
			})
			if err != nil || v != "listing" {
				t.Errorf("do = %v, %v", v, err)
			}
		})
	}
	// Let every caller arrive, then finish the one computation.
	for {
		m.mu.Lock()
		_, running := m.inflight[k]
		m.mu.Unlock()
		if running {
			break
		}
	}
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Fatalf("computed %d times, want once", n)
	}
	if el, ok := m.items[k]; !ok || el.Value.(*memoItem).val != "listing" {
		t.Fatalf("memoised %v, %v", el, ok)
	}
}

func TestMemoDoRecomputesWhenTheComputingCallerGaveUp(t *testing.T) {
	t.Parallel()
	m := newMemo(1 << 20)
	k := memoKey{commit: "c"}
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	leader := make(chan error, 1)
	go func() {
		_, err := m.do(ctx, k, func() (any, int64, error) {
			close(started)
			<-ctx.Done()
			return nil, 0, ctx.Err()
		})
		leader <- err
	}()
	<-started
	waiter := make(chan any, 1)
	go func() {
		v, err := m.do(t.Context(), k, func() (any, int64, error) { return "fresh", 5, nil })
		if err != nil {
			t.Error(err)
		}
		waiter <- v
	}()
	// Give the waiter time to start waiting on the leader's computation
	// (were it late, it would compute on its own and the test would prove
	// less, never fail wrongly).
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-leader; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v", err)
	}
	if v := <-waiter; v != "fresh" {
		t.Fatalf("waiter got %v, want its own computation", v)
	}
	// Errors other than the caller's context are shared and not memoised.
	boom := errors.New("boom")
	if _, err := m.do(t.Context(), memoKey{commit: "d"}, func() (any, int64, error) { return nil, 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("do = %v", err)
	}
	if _, ok := m.items[memoKey{commit: "d"}]; ok {
		t.Fatal("a failure was memoised")
	}
}
