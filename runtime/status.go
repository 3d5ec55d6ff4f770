package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cup-dev/cup/controller"
)

// Status derives the conditions of primary (namespace, name) of every
// reconciler whose primary type is t, at commit ("" for the head): a pure
// function of the commit and the reconcilers, so any replica answers the
// same. ObservedRevision is the commit, and LastTransitionTime the time of
// that commit (the runtime keeps no history of conditions: the commit is
// when the state it describes was reached). A paused reconciler adds
// Paused, which is the runtime's own state. Derived conditions are kept
// by commit, reconciler and primary (8 MiB at most), so asking again
// does not run the transform again.
func (rt *Runtime) Status(ctx context.Context, commit string, t controller.Type, namespace, name string) ([]Condition, error) {
	v, err := rt.viewOf(ctx, commit)
	if err != nil {
		return nil, err
	}
	when, err := rt.store.CommitTime(ctx, v.commit)
	if err != nil {
		return nil, err
	}
	var conds []Condition
	for i, r := range rt.rs {
		if typeKey(r.For) != typeKey(t) {
			continue
		}
		sk := statusKey(v.commit, r.Name, key{namespace, name})
		cs, ok := rt.statuses.get(sk)
		if !ok {
			tctx, cancel := context.WithTimeout(ctx, rt.o.Timeout)
			out := evaluate(tctx, v, r, v.indexOf(r), key{namespace, name}, &rt.same, "")
			cancel()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			cs = conditionsOf(r, out)
			if !errors.Is(out.err, context.DeadlineExceeded) && !errors.Is(out.err, context.Canceled) {
				rt.statuses.add(sk, cs)
			}
		}
		rt.mu.Lock()
		till, paused := rt.pausedTill[i]
		rt.mu.Unlock()
		if paused && rt.o.Clock.Now().Before(till) {
			cs = append(cs, Condition{Type: ConditionPaused, Status: True, Reason: "Runaway",
				Message: fmt.Sprintf("more than %d commits in a minute; writes resume at %s", r.maxWrites(), till.UTC().Format(time.RFC3339))})
		}
		for j := range cs {
			cs[j].Reconciler = r.Name
			cs[j].ObservedRevision = v.commit
			cs[j].LastTransitionTime = when.UTC()
		}
		conds = append(conds, cs...)
	}
	return conds, nil
}

func (r *Reconciler) maxWrites() int {
	if r.Write.MaxWritesPerMinute > 0 {
		return r.Write.MaxWritesPerMinute
	}
	return DefaultMaxWritesPerMinute
}

// conditionsOf turns an outcome into conditions.
func conditionsOf(r *Reconciler, out *outcome) []Condition {
	cond := func(t string, s Status, reason, msg string) Condition {
		return Condition{Type: t, Status: s, Reason: reason, Message: msg}
	}
	var cs []Condition
	var ie *InvalidError
	switch {
	case errors.As(out.err, &ie):
		cs = append(cs, cond(ConditionReady, False, ie.Reason, ie.Message), cond(ie.Type, True, ie.Reason, ie.Message))
		return cs
	case out.invalid:
		cs = append(cs, cond(ConditionReady, False, "InvalidInput", out.err.Error()),
			cond(ConditionInvalidInput, True, "InvalidInput", out.err.Error()))
		return cs
	case out.err != nil:
		cs = append(cs, cond(ConditionReady, False, "TransformFailed", out.err.Error()),
			cond(ConditionTransformFailed, True, "TransformFailed", out.err.Error()))
		return cs
	}
	ready := cond(ConditionReady, True, "Converged", "the outputs match the inputs")
	conv := cond(ConditionConverged, True, "Converged", "the outputs match the inputs")
	if n := len(out.changes); n > 0 {
		msg := fmt.Sprintf("%d output(s) to write or delete", n)
		ready = cond(ConditionReady, False, "Pending", msg)
		conv = cond(ConditionConverged, False, "Pending", msg)
	}
	if len(out.conflicts) > 0 {
		msg := out.conflicts[0]
		if len(out.conflicts) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(out.conflicts)-1)
		}
		ready = cond(ConditionReady, False, "Conflict", msg)
		cs = append(cs, cond(ConditionConflict, True, "OwnedElsewhere", msg))
	}
	cs = append([]Condition{ready, conv}, cs...)
	if out.resp != nil {
		cs = append(cs, out.resp.Conditions...)
	}
	return cs
}

// Rendering is what one reconciler makes of its primary at one commit,
// without writing it: Render's answer.
type Rendering struct {
	Reconciler string
	// Outputs are every output the primary should have, as they would be
	// written (each a put, whether or not the tree holds it already);
	// none when the transform failed.
	Outputs []Change
	// Primary is the primary as the reconciler would write it; nil when it
	// would not change it.
	Primary *controller.Resource
	// Changes are what a write would do to the tree.
	Changes []Change
	// Conditions are as Status derives them.
	Conditions []Condition
}

// Render runs the reconcilers whose primary type is t on primary
// (namespace, name) at commit ("" for the head) and answers what each
// makes of it, writing nothing: a dry run. Each call runs the transforms
// (a cue transform's results are cached by content).
func (rt *Runtime) Render(ctx context.Context, commit string, t controller.Type, namespace, name string) ([]Rendering, error) {
	v, err := rt.viewOf(ctx, commit)
	if err != nil {
		return nil, err
	}
	var out []Rendering
	for _, r := range rt.rs {
		if typeKey(r.For) != typeKey(t) {
			continue
		}
		tctx, cancel := context.WithTimeout(ctx, rt.o.Timeout)
		o := evaluate(tctx, v, r, v.indexOf(r), key{namespace, name}, &rt.same, "")
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rd := Rendering{Reconciler: r.Name, Changes: o.changes, Conditions: conditionsOf(r, o)}
		if o.err == nil {
			rd.Outputs = o.desired
		}
		for _, c := range o.changes {
			if typeKey(c.Type) == typeKey(r.For) && c.Namespace == namespace && c.Name == name && c.Resource != nil {
				rd.Primary = c.Resource
			}
		}
		for j := range rd.Conditions {
			rd.Conditions[j].Reconciler = r.Name
			rd.Conditions[j].ObservedRevision = v.commit
		}
		out = append(out, rd)
	}
	return out, nil
}

// viewOf returns the view of commit, or of the head for "".
func (rt *Runtime) viewOf(ctx context.Context, commit string) (*view, error) {
	if commit == "" {
		head, err := rt.store.Head(ctx)
		if err != nil {
			return nil, err
		}
		commit = head
	}
	return rt.viewAt(ctx, commit)
}
