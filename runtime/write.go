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
// a batching window, else into the reconciler's batch.
func (rt *Runtime) enqueueWrite(ctx context.Context, w work, base string, changes []Change) {
	r := rt.rs[w.reconciler]
	rt.mu.Lock()
	if till, ok := rt.pausedTill[w.reconciler]; ok {
		if now := rt.o.Clock.Now(); now.Before(till) {
			rt.mu.Unlock()
			_ = rt.q.AddAfter(w, till.Sub(now))
			return
		}
		delete(rt.pausedTill, w.reconciler)
	}
	b := rt.batches[w.reconciler]
	if b == nil {
		b = &batch{changes: map[key][]Change{}, work: map[key]work{}}
		rt.batches[w.reconciler] = b
	}
	b.base = base // the newest view the changes were computed at
	b.changes[w.key] = changes
	b.work[w.key] = w
	if r.Write.BatchWindow > 0 {
		if b.timer == nil {
			rt.timers.Add(1) // Run waits for the write the window ends with
			b.timer = rt.o.Clock.AfterFunc(r.Write.BatchWindow, func() {
				defer rt.timers.Done()
				rt.flush(context.WithoutCancel(ctx), w.reconciler)
			})
		}
		rt.mu.Unlock()
		return
	}
	rt.mu.Unlock()
	rt.flush(ctx, w.reconciler)
}

// flushAll writes every open batch, at shutdown.
func (rt *Runtime) flushAll(ctx context.Context) {
	rt.mu.Lock()
	ids := slices.Collect(maps.Keys(rt.batches))
	rt.mu.Unlock()
	for _, i := range ids {
		rt.flush(ctx, i)
	}
}

// flush writes reconciler i's batch as one commit. A stale base or a
// failure queues its primaries again: they are computed anew at the head.
func (rt *Runtime) flush(ctx context.Context, i int) {
	r := rt.rs[i]
	rt.mu.Lock()
	b := rt.batches[i]
	delete(rt.batches, i)
	changeSet := rt.changeSets[i]
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
		Message: message(r, keys, changes)}
	res, err := rt.store.Write(ctx, req)
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
	rt.log.InfoContext(ctx, "reconcile outputs written", "reconciler", r.Name, "commit", res.Commit, "change_set", res.ChangeSet,
		"primaries", len(keys), "written", written, "deleted", deleted)
	now := rt.o.Clock.Now()
	rt.mu.Lock()
	if res.ChangeSet != "" {
		rt.changeSets[i] = res.ChangeSet
	}
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

// message is the commit message of a batch.
func message(r *Reconciler, keys []key, changes []Change) string {
	subject := fmt.Sprintf("Reconcile %s: %d output(s) for %s", r.Name, len(changes), keys[0])
	if len(keys) > 1 {
		subject = fmt.Sprintf("Reconcile %s: %d output(s) for %d primaries", r.Name, len(changes), len(keys))
	}
	var b strings.Builder
	b.WriteString(subject + "\n\n")
	for _, c := range changes {
		verb := "put"
		if c.Resource == nil {
			verb = "delete"
		}
		fmt.Fprintf(&b, "%s %s/%s/%s %s/%s\n", verb, c.Type.Group, c.Type.Version, c.Type.Plural, c.Namespace, c.Name)
	}
	return b.String()
}
