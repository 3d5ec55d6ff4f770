package wasm

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// errOutputFull is what a module's writes to a full stdout or stderr return
// (WASI turns it into an I/O error for the module), and why the call is
// stopped.
var errOutputFull = errors.New("output limit reached")

// cappedBuffer keeps what a module writes to stdout or stderr, up to max
// bytes. The write that would pass max keeps what fits, fails, and calls
// full, which stops the module; later writes fail too.
type cappedBuffer struct {
	buf  bytes.Buffer
	max  int64
	over bool
	full func()
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.over {
		return 0, errOutputFull
	}
	room := b.max - int64(b.buf.Len())
	if int64(len(p)) <= room {
		return b.buf.Write(p)
	}
	b.buf.Write(p[:room])
	b.over = true
	b.full()
	return int(room), errOutputFull
}

// memoryLimiter is the memory allocator of one call: it refuses to grow the
// module's linear memory past limit bytes and remembers that it did, so that
// a module that fails for want of memory reports ErrLimit. (wazero's own
// limit refuses silently.) The initial size always succeeds: New checks
// that it fits, and wazero cannot recover from a failed first allocation.
type memoryLimiter struct {
	limit uint64
	hit   atomic.Bool

	mu   sync.Mutex
	mems []*linearMemory
}

var _ experimental.MemoryAllocator = (*memoryLimiter)(nil)

// Allocate implements experimental.MemoryAllocator.
func (l *memoryLimiter) Allocate(_, _ uint64) experimental.LinearMemory {
	m := &linearMemory{limiter: l}
	l.mu.Lock()
	l.mems = append(l.mems, m)
	l.mu.Unlock()
	return m
}

// release hands the memory of the call to later calls. The caller calls it
// once the module is closed and its run has returned: wazero frees memory
// when the module exits or is closed, which can be before the run returns.
func (l *memoryLimiter) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.mems {
		if m.buf != nil {
			b := m.buf[:0]
			memories.Put(&b)
			m.buf = nil
		}
	}
	l.mems = nil
}

// memories keeps the buffers of finished calls for later ones: clearing
// the part of a buffer a call uses costs less than allocating it afresh and
// collecting it after.
var memories sync.Pool

// linearMemory is one module instance's memory.
type linearMemory struct {
	limiter *memoryLimiter
	buf     []byte
	// made is set once the memory has its initial size, which the module
	// asked for and checkModule checked: later sizes are checked here.
	made bool
}

// Reallocate implements experimental.LinearMemory: it returns the memory
// grown to size bytes, contents kept and the rest zero, or nil when size is
// beyond the limit.
func (m *linearMemory) Reallocate(size uint64) []byte {
	limit := m.limiter.limit
	if !m.made {
		m.made = true
		if b, ok := memories.Get().(*[]byte); ok {
			m.buf = (*b)[:0]
		}
	} else if size > limit {
		m.limiter.hit.Store(true)
		return nil
	}
	if n := uint64(len(m.buf)); size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		clear(m.buf[n:])
		return m.buf
	}
	// Grow geometrically, as append would, but not past the limit.
	capacity := max(size, min(2*uint64(cap(m.buf)), limit))
	buf := make([]byte, size, capacity)
	copy(buf, m.buf)
	m.buf = buf
	return buf
}

// Free implements experimental.LinearMemory. The buffer stays until the
// call releases it.
func (m *linearMemory) Free() {}
