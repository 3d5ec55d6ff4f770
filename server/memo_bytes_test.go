package server

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// memoFill memoises, at commit, a listing of n resources of about 500 bytes
// in their REST form and a get of each, as a namespace listed and then read
// resource by resource is, through the interner as the server reads them.
func memoFill(t *testing.T, m *memo, in *interner, typ *Type, commit string, n int) {
	t.Helper()
	l := &listing{items: make([]*entry, 0, n)}
	for i := range n {
		r := &controller.Resource{APIVersion: "t.cup.dev/v1", Kind: "Item",
			Metadata: controller.Metadata{Namespace: "default", Name: fmt.Sprintf("item-%06d", i),
				Labels: map[string]string{"shard": fmt.Sprintf("s%d", i%16), "team": fmt.Sprintf("team-%d", i%7)}},
			Spec: fmt.Appendf(nil, `{"owner":"owner-%d@example.com","replicas":%d,"enabled":true,"note":"%0200d"}`, i, i%5, i)}
		e, ref, err := in.entryRef(r)
		if err != nil {
			t.Fatal(err)
		}
		in.remember(in.hash(keyedKey{typ: typ, namespace: "default", key: fmt.Sprintf("%040x", i)}), ref)
		l.add(e)
	}
	k := memoKey{commit: commit, typ: typ, namespace: "default"}
	if _, err := m.do(t.Context(), k, func() (any, int64, error) { return l, int64(cap(l.items))*8 + 64, nil }); err != nil {
		t.Fatal(err)
	}
	for _, e := range l.items {
		k.name = e.name
		if _, err := m.do(t.Context(), k, func() (any, int64, error) { return e, 0, nil }); err != nil {
			t.Fatal(err)
		}
	}
}

// heapAfterGC is the heap in use after collections that also let the
// interner's cleanups of entries collected before run.
func heapAfterGC() int64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // not a timing: a chance for the cleanup goroutine to run
	}
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestMemoAccountsWhatTheHeapHolds checks that --cache-bytes is honest: the
// bytes the memo counts for a namespace listed and read at two commits
// (entries shared between them, as after a write) are within 20% of what
// the heap grew by.
func TestMemoAccountsWhatTheHeapHolds(t *testing.T) {
	const n = 20000
	typ := &Type{Type: controller.Type{Group: "t.cup.dev", Version: "v1", Kind: "Item", Plural: "items"}}
	m, in := newMemo(1<<40), newInterner()
	before := heapAfterGC()
	memoFill(t, m, in, typ, "1111111111111111111111111111111111111111", n)
	memoFill(t, m, in, typ, "2222222222222222222222222222222222222222", n) // the same resources: shared entries
	grown := heapAfterGC() - before
	m.mu.Lock()
	used := m.used
	m.mu.Unlock()
	t.Logf("%d resources at two commits: the memo counts %d bytes (%d a resource), the heap grew by %d (%d a resource)",
		n, used, used/n, grown, grown/n)
	if ratio := float64(used) / float64(grown); ratio < 0.8 || ratio > 1.2 {
		t.Errorf("the memo counts %d bytes for %d of heap: off by more than 20%%", used, grown)
	}
	runtime.KeepAlive(m)
	runtime.KeepAlive(in)
}

// TestMemoStaysWithinItsBudget fills a memo of 2 MiB with ten times as
// much: it counts no more than its budget, and the heap holds not much
// more (the interner's maps, which keep their room, besides).
func TestMemoStaysWithinItsBudget(t *testing.T) {
	const budget = 2 << 20
	typ := &Type{Type: controller.Type{Group: "t.cup.dev", Version: "v1", Kind: "Item", Plural: "items"}}
	m, in := newMemo(budget), newInterner()
	before := heapAfterGC()
	for c := range 4 {
		memoFill(t, m, in, typ, fmt.Sprintf("%040d", c), 10000)
	}
	grown := heapAfterGC() - before
	m.mu.Lock()
	used := m.used
	m.mu.Unlock()
	t.Logf("budget %d: the memo counts %d bytes, the heap grew by %d", budget, used, grown)
	if used > budget {
		t.Errorf("the memo counts %d bytes, over its budget of %d", used, budget)
	}
	if grown > budget*3/2+(2<<20) {
		t.Errorf("the heap grew by %d bytes with a memo of %d", grown, budget)
	}
	runtime.KeepAlive(m)
	runtime.KeepAlive(in)
}

// TestMemoKeepsWhatALargerListingWouldEvict: a listing whose entries alone
// take more than the budget is not stored, and what the memo held stays.
func TestMemoKeepsWhatALargerListingWouldEvict(t *testing.T) {
	const budget = 1 << 20
	typ := &Type{Type: controller.Type{Group: "t.cup.dev", Version: "v1", Kind: "Item", Plural: "items"}}
	m, in := newMemo(budget), newInterner()
	small := memoKey{commit: fmt.Sprintf("%040d", 1), typ: typ, namespace: "small"}
	if _, err := m.do(t.Context(), small, func() (any, int64, error) { return &listing{}, 64, nil }); err != nil {
		t.Fatal(err)
	}
	l := &listing{}
	for i := range 5000 { // about 4 MiB of entries
		e, err := in.entry(&controller.Resource{APIVersion: "t.cup.dev/v1", Kind: "Item",
			Metadata: controller.Metadata{Namespace: "default", Name: fmt.Sprintf("item-%06d", i)},
			Spec:     fmt.Appendf(nil, `{"note":"%0700d"}`, i)})
		if err != nil {
			t.Fatal(err)
		}
		l.add(e)
	}
	large := memoKey{commit: small.commit, typ: typ, namespace: "default"}
	if _, err := m.do(t.Context(), large, func() (any, int64, error) { return l, int64(cap(l.items))*8 + 64, nil }); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.items[m.hash(small)]; !ok {
		t.Error("a listing larger than the budget evicted what the memo held")
	}
	if _, ok := m.items[m.hash(large)]; ok {
		t.Error("a listing larger than the budget was stored")
	}
	if m.used > budget {
		t.Errorf("the memo counts %d bytes, over its budget of %d", m.used, budget)
	}
	runtime.KeepAlive(in)
}

// TestProtoSizeIsItsHeap checks protoSize, what the cache of messages
// counts for one, against the heap's growth for resources of three
// shapes: benchrepo's, many small numbers, and a few long strings.
func TestProtoSizeIsItsHeap(t *testing.T) {
	const n = 2000
	for _, tc := range []struct {
		name string
		spec func(i int) string
	}{
		{"benchrepo", func(i int) string {
			return fmt.Sprintf(`{"owner":"owner-%d@example.com","replicas":%d,"enabled":true,"note":"%0200d"}`, i, i%5, i)
		}},
		{"numbers", func(i int) string {
			return fmt.Sprintf(`{"rollout":[%s%d],"nested":{"a":{"b":[true,false,null]}}}`, strings.Repeat("1,", 100), i)
		}},
		{"strings", func(i int) string {
			return fmt.Sprintf(`{"a":"%02000d","b":"%01000d"}`, i, i)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := make([]*controller.Resource, n)
			for i := range n {
				rs[i] = &controller.Resource{APIVersion: "t.cup.dev/v1", Kind: "Item",
					Metadata: controller.Metadata{Namespace: "default", Name: fmt.Sprintf("item-%06d", i), ResourceVersion: "0123456789abcdef0123456789abcdef",
						Labels: map[string]string{"shard": fmt.Sprintf("s%d", i%16), "team": fmt.Sprintf("team-%d", i%7)}},
					Spec: []byte(tc.spec(i))}
			}
			pbs := make([]*cupv1alpha1.Resource, n)
			before := heapAfterGC()
			var counted int64
			for i, r := range rs {
				pb, err := resourceProto(r)
				if err != nil {
					t.Fatal(err)
				}
				pbs[i] = pb
				counted += protoSize(pb)
			}
			grown := heapAfterGC() - before
			t.Logf("%s: protoSize %d bytes a message, the heap grew %d", tc.name, counted/n, grown/n)
			if ratio := float64(counted) / float64(grown); ratio < 0.75 || ratio > 1.33 {
				t.Errorf("protoSize counts %d bytes for %d of heap", counted, grown)
			}
			runtime.KeepAlive(pbs)
			runtime.KeepAlive(rs)
		})
	}
}
