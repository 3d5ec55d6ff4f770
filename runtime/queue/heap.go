package queue

import "time"

// waitHeap is a min-heap of waiting entries ordered by due time, then by
// the order in which their due times were set, for use with container/heap.
// Each entry records its index so that it can be fixed or removed in
// O(log n).
type waitHeap[K comparable] []*entry[K]

func (h waitHeap[K]) Len() int { return len(h) }

func (h waitHeap[K]) Less(i, j int) bool {
	a, b := h[i], h[j]
	if !a.due.Equal(b.due) {
		return a.due.Before(b.due)
	}
	return a.seq < b.seq
}

func (h waitHeap[K]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *waitHeap[K]) Push(x any) {
	e := x.(*entry[K])
	e.index = len(*h)
	*h = append(*h, e)
}

func (h *waitHeap[K]) Pop() any {
	old := *h
	n := len(old) - 1
	e := old[n]
	old[n] = nil
	*h = old[:n]
	if c := cap(old); c > 64 && n < c/4 {
		*h = append(make(waitHeap[K], 0, c/2), old[:n]...)
	}
	e.index = -1
	return e
}

// top returns the earliest due time; the heap must not be empty.
func (h waitHeap[K]) top() time.Time { return h[0].due }
