package queue

// minRing is the capacity a ring never shrinks below.
const minRing = 16

// ring is a FIFO of keys in a circular buffer that grows by doubling and
// shrinks by half when it is a quarter full. Push and pop are amortised
// O(1). The zero value is an empty ring.
type ring[K any] struct {
	buf  []K
	head int
	n    int
}

func (r *ring[K]) len() int { return r.n }

func (r *ring[K]) push(k K) {
	if r.n == len(r.buf) {
		r.resize(max(2*len(r.buf), minRing))
	}
	r.buf[(r.head+r.n)%len(r.buf)] = k
	r.n++
}

// pop removes and returns the oldest key; the ring must not be empty.
func (r *ring[K]) pop() K {
	var zero K
	k := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	if len(r.buf) > minRing && r.n <= len(r.buf)/4 {
		r.resize(len(r.buf) / 2)
	}
	return k
}

// at returns the i-th oldest key.
func (r *ring[K]) at(i int) K { return r.buf[(r.head+i)%len(r.buf)] }

func (r *ring[K]) resize(size int) {
	buf := make([]K, size)
	for i := range r.n {
		buf[i] = r.at(i)
	}
	r.buf, r.head = buf, 0
}

// reset empties the ring and releases its buffer.
func (r *ring[K]) reset() { *r = ring[K]{} }
