package server

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
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
	if it, ok := m.items[m.hash(k)]; !ok || it.val != "listing" {
		t.Fatalf("memoised %v, %v", it, ok)
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
	if _, ok := m.items[m.hash(memoKey{commit: "d"})]; ok {
		t.Fatal("a failure was memoised")
	}
}

func TestMemoDoReleasesWaitersWhenTheComputationPanics(t *testing.T) {
	t.Parallel()
	m := newMemo(1 << 20)
	k := memoKey{commit: "c", namespace: "ns", name: "boom"}
	started, release := make(chan struct{}), make(chan struct{})
	waiter := make(chan error, 1)
	var leaderErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, leaderErr = m.do(t.Context(), k, func() (any, int64, error) {
			close(started)
			<-release
			panic("controller bug")
		})
	}()
	<-started
	go func() {
		_, err := m.do(t.Context(), k, func() (any, int64, error) { return "never", 1, nil })
		waiter <- err
	}()
	// Let the waiter join the computation under way, then let it panic.
	for {
		m.mu.Lock()
		c := m.inflight[k]
		m.mu.Unlock()
		if c != nil {
			break
		}
	}
	close(release)
	<-done
	if leaderErr == nil || !strings.Contains(leaderErr.Error(), "controller bug") {
		t.Fatalf("the computing caller got %v, want the panic as an error", leaderErr)
	}
	select {
	case err := <-waiter:
		// The waiter either joined the failed computation (Internal) or
		// came after it and computed the key itself.
		if err != nil && connect.CodeOf(err) != connect.CodeInternal {
			t.Fatalf("the waiting caller got %v, want Internal or a fresh value", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting caller is still blocked after the computation panicked")
	}
	// The failure was not memoised: the next read computes again (unless
	// the waiter already did).
	v, err := m.do(t.Context(), k, func() (any, int64, error) { return "fixed", 1, nil })
	if err != nil || (v != "fixed" && v != "never") {
		t.Fatalf("after the panic, do = %v, %v; want a new computation", v, err)
	}
}

// TestMemoKeysDoNotPinRequestStrings fills a small memo with keys cut out
// of large strings, as the REST form's path values are cut out of a request
// line: the memo must keep copies, so the large strings can be collected,
// and the budget must count the keys.
func TestMemoKeysDoNotPinRequestStrings(t *testing.T) {
	const budget = 256 << 10
	m := newMemo(budget)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 400 {
		line := strings.Repeat("x", 1<<20) + fmt.Sprintf("ns-%d", i) // a 1 MiB request line
		k := memoKey{commit: "c", namespace: line[len(line)-8:], name: line[:10]}
		if _, err := m.do(t.Context(), k, func() (any, int64, error) { return (*entry)(nil), 0, nil }); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > budget+(16<<20) {
		t.Fatalf("the heap grew by %d MiB after 400 memoised misses of 1 MiB request lines, with a budget of %d KiB", grown>>20, budget>>10)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.used > budget {
		t.Fatalf("the memo counts %d bytes, over its budget of %d", m.used, budget)
	}
	var counted int64
	for it := m.head.next; it != &m.head; it = it.next {
		counted += it.size
		if it.size < it.key.size() {
			t.Fatalf("an entry is counted as %d bytes, less than its key's %d", it.size, it.key.size())
		}
	}
	if counted != m.used {
		t.Fatalf("entries add up to %d bytes, the memo counts %d", counted, m.used)
	}
}
