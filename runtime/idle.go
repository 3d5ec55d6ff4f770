package runtime

import "context"

// Resync queues every primary of every reconciler at the head the
// runtime last read, and every primary that still owns outputs, as the
// periodic resync (Options.Resync) does: outputs that already match cost
// no commit. Keys already queued are not queued twice. It returns at
// once; [Runtime.WaitIdle] waits for the work to be done.
func (rt *Runtime) Resync() { rt.resync() }

// WaitIdle blocks until the runtime has caught up with the branch: it
// has read the head as the store reports it when the check is made, no
// primary is queued or being reconciled, and no batch of outputs is open
// or being written. Primaries waiting for a deadline (a backoff after a
// failure, a RequeueAfter, a paused reconciler) do not count: a runtime
// whose only work is in the future is idle. It returns ctx's error if ctx
// ends first, and the store's if reading the head fails.
//
// WaitIdle is for tests, benchmarks and tools that wait for the outputs
// of a change ("write, then wait until reconciled"); it needs Run to be
// running, and pokes the runtime when the head has moved. It is safe for
// concurrent use.
func (rt *Runtime) WaitIdle(ctx context.Context) error {
	for {
		rt.mu.Lock()
		if rt.changed == nil {
			rt.changed = make(chan struct{})
		}
		changed := rt.changed
		cur := rt.cur
		busy := len(rt.batches) > 0 || rt.flushing > 0 || rt.mapping || rt.lanesMovingLocked()
		rt.mu.Unlock()
		if st := rt.q.Stats(); !busy && cur != nil && st.Ready == 0 && st.InFlight == 0 {
			// busy and the queue's counts were read one after the other:
			// a reconcile that opened a batch after the first and ended
			// before the second looks like no work at all. It notified
			// on ending, so a closed changed means: look again.
			select {
			case <-changed:
				continue
			default:
			}
			head, err := rt.store.Head(ctx)
			if err != nil {
				return err
			}
			if head == cur.commit {
				return nil
			}
			rt.Poke()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// notify wakes the callers of WaitIdle: a reconcile or a write ended, or
// the runtime read a new head.
func (rt *Runtime) notify() {
	rt.mu.Lock()
	if rt.changed != nil {
		close(rt.changed)
		rt.changed = nil
	}
	rt.mu.Unlock()
}
