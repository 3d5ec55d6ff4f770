// Package testlog captures what code under test writes, such as its log,
// for the test to read while that code still runs.
//
// It is for tests only: import it from _test.go files, never from a
// program.
package testlog

import (
	"bytes"
	"io"
	"sync"
)

var _ io.Writer = (*Buffer)(nil)

// A Buffer collects what is written to it. It is safe for concurrent use:
// a logger or a process may write to it while the test reads it. The zero
// value is an empty buffer ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer. It never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
