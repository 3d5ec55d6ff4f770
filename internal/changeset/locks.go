package changeset

import (
	"context"
	"sync"
)

// Locks makes the updates of one branch through one source take turns.
// The zero value is ready to use; it is safe for concurrent use.
type Locks struct {
	mu sync.Mutex
	m  map[string]chan struct{} // branch → one-slot semaphore
}

// Lock takes the lock of branch, waiting until ctx is done.
func (l *Locks) Lock(ctx context.Context, branch string) (unlock func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[string]chan struct{})
	}
	sem, ok := l.m[branch]
	if !ok {
		sem = make(chan struct{}, 1)
		l.m[branch] = sem
	}
	l.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
