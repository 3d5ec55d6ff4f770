package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// batch gathers one reconciler's changes until its window closes.
type batch struct {
	base    string
	changes map[key][]Change // by primary; the newest reconcile wins
	work    map[key]work
	timer   interface{ Stop() bool }
}

// enqueueWrite hands a reconcile's changes to the writer: at once without
// a batching window, else into the reconciler's batch for w's lane.
func (rt *Runtime) enqueueWrite(ctx context.Context, w work, base string, changes []Change) {
	r := rt.rs[w.reconciler]
	bk := batchKey{w.reconciler, w.lane, collects(changes)}
	rt.mu.Lock()
	if till, ok := rt.pausedTill[w.reconciler]; ok {
		if now := rt.o.Clock.Now(); now.Before(till) {
			rt.mu.Unlock()
			_ = rt.q.AddAfter(w, till.Sub(now))
			return
		}
		delete(rt.pausedTill, w.reconciler)
	}
	b := rt.batches[bk]
	if b == nil {
		b = &batch{changes: map[key][]Change{}, work: map[key]work{}}
		rt.batches[bk] = b
	}
	b.base = base // the newest view the changes were computed at
	b.changes[w.key] = changes
	b.work[w.key] = w
	if r.Write.BatchWindow > 0 {
		if b.timer == nil {
			rt.timers.Add(1) // Run waits for the write the window ends with
			b.timer = rt.o.Clock.AfterFunc(r.Write.BatchWindow, func() {
				defer rt.timers.Done()
				rt.flush(context.WithoutCancel(ctx), bk)
			})
		}
		rt.mu.Unlock()
		return
	}
	rt.mu.Unlock()
	rt.flush(ctx, bk)
}

// flushAll writes every open batch, at shutdown.
func (rt *Runtime) flushAll(ctx context.Context) {
	rt.mu.Lock()
	ids := slices.Collect(maps.Keys(rt.batches))
	rt.mu.Unlock()
	for _, bk := range ids {
		rt.flush(ctx, bk)
	}
}

// flush writes a reconciler's batch as one commit: on the served branch
// (or into the reconciler's own change set, in proposal mode), or into
// the change set of its lane. A stale base or a failure queues its
// primaries again: they are computed anew at the head.
func (rt *Runtime) flush(ctx context.Context, bk batchKey) {
	i := bk.reconciler
	r := rt.rs[i]
	rt.mu.Lock()
	b := rt.batches[bk]
	delete(rt.batches, bk)
	changeSet := rt.changeSets[i]
	if bk.lane != "" {
		changeSet = bk.lane
	}
	if b != nil {
		rt.flushing++
	}
	rt.mu.Unlock()
	if b == nil {
		return
	}
	defer func() {
		rt.mu.Lock()
		rt.flushing--
		rt.mu.Unlock()
		rt.notify()
	}()
	if b.timer != nil && b.timer.Stop() {
		rt.timers.Done() // the window will not end: Run need not wait for it
	}
	if len(b.changes) == 0 {
		return
	}
	keys := slices.SortedFunc(maps.Keys(b.changes), func(a, b key) int { return strings.Compare(a.String(), b.String()) })
	var changes []Change
	for _, k := range keys {
		changes = append(changes, b.changes[k]...)
	}
	req := &WriteRequest{Reconciler: r.Name, Mode: r.Write.Mode, Base: b.base, Changes: changes, ChangeSet: changeSet,
		Join: bk.lane != "", Message: message(r, keys, changes)}
	res, err := rt.store.Write(ctx, req)
	if bk.lane != "" {
		rt.flushed(ctx, bk, b, keys, changes, res, err)
		return
	}
	if errors.Is(err, ErrChangeSetGone) && changeSet != "" {
		rt.mu.Lock()
		delete(rt.changeSets, i)
		rt.mu.Unlock()
		req.ChangeSet = ""
		res, err = rt.store.Write(ctx, req)
	}
	switch {
	case errors.Is(err, ErrStale):
		// Read the new head before the primaries run again, so that they
		// are computed from it and not from the base refused.
		rt.log.DebugContext(ctx, "reconcile outputs are stale; computing them again at the head", "reconciler", r.Name, "primaries", len(keys))
		if err := rt.follow(ctx); err != nil {
			rt.log.WarnContext(ctx, "reconcilers: reading the head failed", "error", err)
			rt.Poke()
		}
		for _, k := range keys {
			rt.add(b.work[k])
		}
		return
	case err != nil:
		rt.log.WarnContext(ctx, "writing reconcile outputs failed", "reconciler", r.Name, "primaries", len(keys), "error", err)
		rt.m.errors.WithLabelValues(r.Name).Inc()
		for _, k := range keys {
			_ = rt.q.AddRateLimited(b.work[k])
			rt.m.retries.WithLabelValues(r.Name).Inc()
		}
		return
	}
	rt.mu.Lock()
	if res.ChangeSet != "" {
		rt.changeSets[i] = res.ChangeSet
	}
	rt.mu.Unlock()
	rt.written(ctx, bk, b, keys, changes, res)
}

// flushed ends the write of a batch into a change set that the lane
// follows: a stale base reads the change set's new head first, a change
// set that is gone (merged or closed) is no longer followed.
func (rt *Runtime) flushed(ctx context.Context, bk batchKey, b *batch, keys []key, changes []Change, res *WriteResult, err error) {
	r := rt.rs[bk.reconciler]
	switch {
	case errors.Is(err, ErrChangeSetGone):
		rt.log.InfoContext(ctx, "a change set is gone (merged or closed); its changes are reconciled on the branch",
			"reconciler", r.Name, "change_set", bk.lane)
		rt.dropLane(bk.lane)
		for _, k := range keys {
			rt.q.Forget(b.work[k])
		}
		return
	case errors.Is(err, ErrStale):
		head := staleHead(err)
		rt.log.DebugContext(ctx, "reconcile outputs are stale; computing them again at the change set's head",
			"reconciler", r.Name, "change_set", bk.lane, "head", head, "primaries", len(keys))
		rt.mu.Lock()
		if l := rt.lanes[bk.lane]; l != nil && head != "" {
			rt.pokeLaneLocked(bk.lane, "", head)
		}
		rt.mu.Unlock()
		// The lane's new head is mapped before these run again: they
		// were woken by changes the new head may have undone.
		rt.followLanes(ctx)
		for _, k := range keys {
			rt.add(b.work[k])
		}
		return
	case err != nil:
		rt.log.WarnContext(ctx, "writing reconcile outputs failed", "reconciler", r.Name, "change_set", bk.lane,
			"primaries", len(keys), "error", err)
		rt.m.errors.WithLabelValues(r.Name).Inc()
		for _, k := range keys {
			_ = rt.q.AddRateLimited(b.work[k])
			rt.m.retries.WithLabelValues(r.Name).Inc()
		}
		return
	}
	if res.Commit != "" {
		rt.mu.Lock()
		if l := rt.lanes[bk.lane]; l != nil {
			rt.pokeLaneLocked(bk.lane, "", res.Commit)
		}
		rt.mu.Unlock()
	}
	rt.written(ctx, bk, b, keys, changes, res)
}

// written accounts for a batch that was written: metrics, the log, the
// runaway guard, and the primaries' backoff.
func (rt *Runtime) written(ctx context.Context, bk batchKey, b *batch, keys []key, changes []Change, res *WriteResult) {
	i := bk.reconciler
	r := rt.rs[i]
	var written, deleted int
	for _, c := range changes {
		if c.Resource == nil {
			deleted++
		} else {
			written++
		}
	}
	rt.m.written.WithLabelValues(r.Name).Add(float64(written))
	rt.m.deleted.WithLabelValues(r.Name).Add(float64(deleted))
	changeSet := res.ChangeSet
	if bk.lane != "" {
		changeSet = bk.lane
	}
	rt.log.InfoContext(ctx, "reconcile outputs written", "reconciler", r.Name, "commit", res.Commit, "change_set", changeSet,
		"joined", bk.lane != "", "primaries", len(keys), "written", written, "deleted", deleted)
	now := rt.o.Clock.Now()
	rt.mu.Lock()
	recent := rt.writes[i][:0]
	for _, t := range rt.writes[i] {
		if now.Sub(t) < time.Minute {
			recent = append(recent, t)
		}
	}
	if res.Commit != "" {
		recent = append(recent, now)
	}
	rt.writes[i] = recent
	if len(recent) > r.maxWrites() {
		rt.pausedTill[i] = now.Add(time.Minute)
		rt.log.WarnContext(ctx, "reconciler paused: a runaway", "reconciler", r.Name, "commits_last_minute", len(recent), "resume", now.Add(time.Minute))
		rt.m.paused.WithLabelValues(r.Name).Inc()
	}
	rt.mu.Unlock()
	for _, k := range keys {
		rt.q.Forget(b.work[k])
	}
	rt.Poke()
}

// collects reports whether changes are garbage collection only: deletes
// of orphaned outputs.
func collects(changes []Change) bool {
	for _, c := range changes {
		if c.Resource != nil || c.Orphaned == "" {
			return false
		}
	}
	return len(changes) > 0
}

// message is the commit message of a batch.
func message(r *Reconciler, keys []key, changes []Change) string {
	subject := fmt.Sprintf("Reconcile %s: %d output(s) for %s", r.Name, len(changes), keys[0])
	if len(keys) > 1 {
		subject = fmt.Sprintf("Reconcile %s: %d output(s) for %d primaries", r.Name, len(changes), len(keys))
	}
	if collects(changes) {
		subject = fmt.Sprintf("Collect %s: %d orphaned output(s) no longer referenced", r.Name, len(changes))
	}
	var b strings.Builder
	b.WriteString(subject + "\n\n")
	for _, c := range changes {
		verb := "put"
		if c.Resource == nil {
			verb = "delete"
		}
		fmt.Fprintf(&b, "%s %s/%s/%s %s/%s", verb, c.Type.Group, c.Type.Version, c.Type.Plural, c.Namespace, c.Name)
		if c.Orphaned != "" {
			fmt.Fprintf(&b, " (orphaned at %.12s, no longer referenced)", c.Orphaned)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
