package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A change set (the branch of a proposal) that a write through the server
// added to is reconciled as the served branch is, in a lane of its own:
// the changes of its commits wake primaries, which are reconciled at the
// change set's head, and their outputs are committed to the change set.
// A flag changed in a proposal and its bundle's new content are reviewed
// and merged together; once merged, the outputs already match on the
// branch and cost no commit there.
//
// Lanes follow the writes the server reports (PokeChangeSet): a commit
// pushed to the branch from elsewhere is seen at the next write through
// the server, or when a write of outputs finds the branch moved.

// lane is one change set's state.
type lane struct {
	// followed is the commit whose changes are mapped: reconciles of the
	// lane run at its view.
	followed string
	// head is the newest commit known on the change set.
	head string
	// poked is when the lane was last poked, to evict the oldest.
	poked time.Time
}

// DefaultMaxChangeSets is how many change sets the runtime follows at
// once unless Options.MaxChangeSets says otherwise.
const DefaultMaxChangeSets = 256

// PokeChangeSet says that a write through the server added commit, on
// top of base, to change set name (a branch that is not the served one).
// The runtime maps the changes and reconciles the primaries they wake at
// commit; their outputs join the change set. It returns at once.
//
// At most Options.MaxChangeSets change sets are followed: a new one
// beyond that evicts the one poked longest ago, whose pending work is
// dropped.
func (rt *Runtime) PokeChangeSet(name, base, commit string) {
	if name == "" || commit == "" {
		return
	}
	rt.mu.Lock()
	rt.pokeLaneLocked(name, base, commit)
	rt.mu.Unlock()
	rt.Poke()
}

func (rt *Runtime) pokeLaneLocked(name, base, commit string) {
	l := rt.lanes[name]
	if l == nil {
		if base == "" {
			base = commit
		}
		if len(rt.lanes) >= rt.o.MaxChangeSets {
			oldest := ""
			for n, x := range rt.lanes {
				if oldest == "" || x.poked.Before(rt.lanes[oldest].poked) {
					oldest = n
				}
			}
			delete(rt.lanes, oldest)
			rt.log.Warn("reconcilers: following too many change sets; the oldest is no longer reconciled",
				"change_set", oldest, "max", rt.o.MaxChangeSets)
		}
		l = &lane{followed: base}
		rt.lanes[name] = l
	}
	l.head = commit
	l.poked = rt.o.Clock.Now()
	rt.m.changeSets.Set(float64(len(rt.lanes)))
}

// followLanes maps the changes of every change set whose head moved since
// it was last followed. Calls are serialised with follow.
func (rt *Runtime) followLanes(ctx context.Context) {
	rt.followMu.Lock()
	defer rt.followMu.Unlock()
	type move struct{ name, from, to string }
	var moves []move
	rt.mu.Lock()
	for name, l := range rt.lanes {
		if l.head != l.followed {
			moves = append(moves, move{name, l.followed, l.head})
		}
	}
	if len(moves) > 0 {
		rt.mapping = true
	}
	rt.mu.Unlock()
	if len(moves) == 0 {
		return
	}
	defer func() {
		rt.mu.Lock()
		rt.mapping = false
		rt.mu.Unlock()
		rt.notify()
	}()
	for _, m := range moves {
		if ctx.Err() != nil {
			return
		}
		err := rt.followLane(ctx, m.name, m.from, m.to)
		if err != nil {
			// A change set whose commits cannot be read is not retried
			// at every poll: the next write to it starts it again.
			rt.log.WarnContext(ctx, "reconcilers: reading a change set failed; it is no longer reconciled",
				"change_set", m.name, "commit", m.to, "error", err)
			rt.dropLane(m.name)
		}
	}
}

func (rt *Runtime) followLane(ctx context.Context, name, from, to string) error {
	prev, err := rt.viewAt(ctx, from)
	if err != nil {
		return err
	}
	next, err := rt.viewAt(ctx, to)
	if err != nil {
		return err
	}
	rt.mu.Lock()
	l := rt.lanes[name]
	if l == nil || l.followed != from {
		rt.mu.Unlock()
		return nil // evicted or dropped meanwhile
	}
	l.followed = to
	rt.mu.Unlock()
	n := 0
	for i, r := range rt.rs {
		for _, k := range wake(prev, next, r, nil) {
			rt.add(work{reconciler: i, key: k, lane: name})
			n++
		}
	}
	rt.log.DebugContext(ctx, "reconcilers: change set moved", "change_set", name, "from", from, "to", to, "primaries", n)
	return nil
}

// laneView returns the view reconciles of change set name run at; false
// when the runtime no longer follows it.
func (rt *Runtime) laneView(ctx context.Context, name string) (*view, bool, error) {
	rt.mu.Lock()
	l := rt.lanes[name]
	var commit string
	if l != nil {
		commit = l.followed
	}
	rt.mu.Unlock()
	if l == nil {
		return nil, false, nil
	}
	v, err := rt.viewAt(ctx, commit)
	return v, err == nil, err
}

// dropLane stops following change set name: it was merged or closed, or
// cannot be read.
func (rt *Runtime) dropLane(name string) {
	rt.mu.Lock()
	delete(rt.lanes, name)
	rt.m.changeSets.Set(float64(len(rt.lanes)))
	rt.mu.Unlock()
}

// lanesMoving reports whether a change set has commits not yet mapped.
// The caller holds rt.mu.
func (rt *Runtime) lanesMovingLocked() bool {
	for _, l := range rt.lanes {
		if l.head != l.followed {
			return true
		}
	}
	return false
}

// StaleError is the ErrStale of a write whose base was not the head of
// its branch or change set; Head is where the branch was.
type StaleError struct {
	Base, Head string
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("%s: at %.12s, not %.12s", ErrStale, e.Head, e.Base)
}

// Is makes errors.Is(err, ErrStale) hold.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// staleHead returns the head a stale write found, if it says.
func staleHead(err error) string {
	var se *StaleError
	if errors.As(err, &se) {
		return se.Head
	}
	return ""
}
