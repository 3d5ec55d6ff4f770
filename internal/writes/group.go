package writes

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/cup-dev/cup/internal/changeset"
	"github.com/cup-dev/cup/source"
)

// Group commit. Updates of one branch that exists go through the
// branch's queue. One committer at a time (a goroutine started when the
// queue gains its first update, gone when it is empty) takes up to
// Config.GroupMax of them, applies each on the commit the one before it
// made, starting from the branch's head, and publishes them all with one
// compare-and-swap: one push for a remote. Every update stays a commit
// of its own, with its own message, trailers and idempotency key.
//
// What each update is told waits for the swap, so that nothing is
// answered from a commit that never landed:
//   - the swap lands: the updates that made commits answer with them;
//     the others with what they found (unchanged, replayed, Apply's
//     error);
//   - the branch moved (a concurrent writer): the whole group is applied
//     again on the new head, preconditions and keys checked again, up to
//     Config.MaxRetries times, and then fails with source.ErrConflict;
//   - the swap fails otherwise: every update that was applied on a
//     commit of the group fails with that error, since what it found
//     depended on commits that did not land; the ones applied on the
//     branch's head keep their own answer.
//
// While a group is published the next queues, so a lone writer waits for
// nothing and many writers share the cost of a swap.

// queue holds the updates of one branch waiting for a committer.
type queue struct {
	ops     []*op
	running bool          // a committer works on the branch
	full    chan struct{} // signalled when ops reaches GroupMax, for GroupWait
}

// op is one update in a queue.
type op struct {
	w      *write
	ctx    context.Context
	done   chan struct{} // closed when result and err are final
	queued time.Time

	result *source.UpdateResult
	err    error

	// Set by the committer for the attempt under way.
	prepared *changeset.Prepared // the commit it made; nil when none
	onHead   bool                // applied on the branch's head, not on a commit of the group
}

// grouped queues w's update on its branch and waits for its answer. A
// caller whose context ends while its update still waits in the queue
// takes it out and returns; one already being committed waits for the
// outcome, which is short.
func (e *Engine) grouped(ctx context.Context, w *write) (*source.UpdateResult, error) {
	o := &op{w: w, ctx: ctx, done: make(chan struct{}), queued: time.Now()}
	e.enqueue(o)
	select {
	case <-o.done:
		return o.result, o.err
	case <-ctx.Done():
		if e.withdraw(o) {
			return nil, ctx.Err()
		}
		<-o.done
		return o.result, o.err
	}
}

func (e *Engine) enqueue(o *op) {
	branch := o.w.write
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.queues == nil {
		e.queues = make(map[string]*queue)
	}
	q := e.queues[branch]
	if q == nil {
		q = &queue{full: make(chan struct{}, 1)}
		e.queues[branch] = q
	}
	q.ops = append(q.ops, o)
	if len(q.ops) >= e.cfg.GroupMax {
		select {
		case q.full <- struct{}{}:
		default:
		}
	}
	if !q.running {
		q.running = true
		go e.commitQueued(branch, q)
	}
}

// withdraw takes o out of its queue, unless a committer took it.
func (e *Engine) withdraw(o *op) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := e.queues[o.w.write]
	if q == nil {
		return false
	}
	for i, x := range q.ops {
		if x == o {
			q.ops = append(q.ops[:i], q.ops[i+1:]...)
			return true
		}
	}
	return false
}

// commitQueued commits the branch's queued updates, a group at a time,
// until none are left.
func (e *Engine) commitQueued(branch string, q *queue) {
	for {
		if e.cfg.GroupWait > 0 {
			e.gather(q)
		}
		e.mu.Lock()
		n := min(len(q.ops), e.cfg.GroupMax)
		if n == 0 {
			q.running = false
			delete(e.queues, branch)
			e.mu.Unlock()
			return
		}
		group := make([]*op, n)
		copy(group, q.ops)
		q.ops = append(q.ops[:0], q.ops[n:]...)
		e.mu.Unlock()
		if e.metrics != nil {
			for _, o := range group {
				e.metrics.queued.Observe(time.Since(o.queued).Seconds())
			}
		}
		e.commitGroup(group)
	}
}

// gather waits up to GroupWait for the queue to fill a group, unless it
// is empty.
func (e *Engine) gather(q *queue) {
	e.mu.Lock()
	enough := len(q.ops) == 0 || len(q.ops) >= e.cfg.GroupMax
	if !enough {
		select {
		case <-q.full: // left from a group already taken
		default:
		}
	}
	e.mu.Unlock()
	if enough {
		return
	}
	t := time.NewTimer(e.cfg.GroupWait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-q.full:
	}
}

// commitGroup applies group's updates one on another and publishes them
// with one swap, as the comment at the top of the file describes, then
// answers each.
func (e *Engine) commitGroup(group []*op) {
	defer func() {
		for _, o := range group {
			close(o.done)
		}
	}()
	first := group[0].w
	ctx, cancel := groupContext(group)
	defer cancel()
	for attempt := 0; ; attempt++ {
		head, err := first.head(ctx)
		if err != nil {
			for _, o := range group {
				o.result, o.err = nil, err
			}
			return
		}
		var links []Link
		tip := head
		committer := source.Signature{Name: e.cfg.AuthorName, Email: e.cfg.AuthorEmail, When: e.cfg.Clock()}
		for _, o := range group {
			o.prepared, o.onHead = nil, len(links) == 0
			o.result, o.err = o.apply(tip, committer)
			if o.prepared != nil {
				links = append(links, Link{Commit: o.prepared.Commit, Tree: o.prepared.Tree, Changes: o.prepared.Changes})
				tip = Ref{Commit: o.prepared.Commit, Tree: o.prepared.Tree, Branch: head.Branch}
			}
		}
		if len(links) == 0 {
			return
		}
		last := links[len(links)-1]
		msg := "commit: " + group[len(group)-1].w.req.Message
		if len(links) > 1 {
			msg = fmt.Sprintf("commit: group of %d: %s", len(links), subject(group[len(group)-1].w.req.Message))
		}
		err = first.refs.CompareAndSwap(ctx, Swap{
			Branch: first.write, Old: head.Commit, New: last.Commit, Tree: last.Tree, Changes: last.Changes,
			Earlier: links[:len(links)-1], Committer: committer, Message: msg,
		})
		switch {
		case err == nil:
			if e.metrics != nil {
				e.metrics.commits.Observe(float64(len(links)))
			}
			for _, o := range group {
				if o.prepared != nil {
					o.result.Branch, o.result.Commit = short(first.write), o.prepared.Commit.String()
				}
			}
			if len(group) > 1 {
				e.cfg.Logger.DebugContext(ctx, "group committed", "branch", short(first.write), "updates", len(group), "commits", len(links), "attempts", attempt+1)
			}
			return
		case errors.Is(err, ErrMoved) && attempt < e.cfg.MaxRetries:
			if e.metrics != nil {
				e.metrics.reapplied.Inc()
			}
			e.cfg.Logger.DebugContext(ctx, "branch moved during update; applying the group again", "branch", short(first.write), "updates", len(group), "attempt", attempt+1, "reason", err)
			continue
		case errors.Is(err, ErrMoved):
			err = fmt.Errorf("%w: %s moved %d times while the change was being made; try again", source.ErrConflict, short(first.write), attempt+1)
		}
		for _, o := range group {
			if o.prepared != nil || !o.onHead {
				o.result, o.err = nil, err
			}
		}
		return
	}
}

// groupContext returns the context of a group's reads of the branch and
// of its swap (a push). They are the group's, not one caller's: they go on
// when the caller whose context carries them (its trace, its values)
// leaves, until the last deadline of the group's callers, if they all
// have one.
func groupContext(group []*op) (context.Context, context.CancelFunc) {
	ctx := context.WithoutCancel(group[0].ctx)
	var last time.Time
	for _, o := range group {
		d, ok := o.ctx.Deadline()
		if !ok {
			return context.WithCancel(ctx)
		}
		if d.After(last) {
			last = d
		}
	}
	return context.WithDeadline(ctx, last)
}

// apply applies o's update on tip (the branch's head, or the commit the
// update before it in the group made): it answers with an earlier
// attempt's result when o's key has one, and otherwise commits the change
// to the object store, setting o.prepared, unless it changes nothing or
// fails.
func (o *op) apply(tip Ref, committer source.Signature) (result *source.UpdateResult, err error) {
	// The update's Apply runs controllers in the committer's goroutine, not
	// the caller's, whose server would answer a panic with Internal: here
	// it would end the process. It ends this write alone.
	defer func() {
		if p := recover(); p != nil {
			o.prepared = nil
			result, err = nil, fmt.Errorf("panic while applying the update: %v\n%s", p, debug.Stack())
		}
	}()
	w := o.w
	if err := o.ctx.Err(); err != nil {
		return nil, err
	}
	if result, err := w.replay(o.ctx, tip.Commit); result != nil || err != nil {
		return result, err
	}
	p, _, err := changeset.Prepare(o.ctx, w.objects,
		changeset.Base{Revision: w.rev, Commit: tip.Commit, Tree: tip.Tree},
		w.req, committer, w.cfg.Signer)
	if err != nil {
		return nil, err
	}
	if p.Result.Unchanged {
		p.Result.Branch = short(w.write)
		return p.Result, nil
	}
	o.prepared = p
	return p.Result, nil
}

// subject returns a message's first line.
func subject(msg string) string {
	line, _, _ := strings.Cut(msg, "\n")
	return line
}
