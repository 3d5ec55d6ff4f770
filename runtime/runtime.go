package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/runtime/queue"
)

// Store is the repository as the runtime sees it: the served branch's
// head, the resources of a type at a commit, and writes. The server
// implements it over its source and controllers.
type Store interface {
	// Head returns the commit at the head of the served branch.
	Head(ctx context.Context) (string, error)
	// List returns every resource of t at commit, in every namespace.
	List(ctx context.Context, commit string, t controller.Type) ([]*controller.Resource, error)
	// CommitTime returns when commit was committed.
	CommitTime(ctx context.Context, commit string) (time.Time, error)
	// Write makes the changes one commit, through the normal write path.
	// In direct mode it fails with an error wrapping ErrStale when the
	// branch is no longer at req.Base: the changes were computed from
	// inputs that may have changed since.
	Write(ctx context.Context, req *WriteRequest) (*WriteResult, error)
}

// WriteRequest is one commit of a reconciler's outputs.
type WriteRequest struct {
	Reconciler string
	Mode       WriteMode
	// Base is the commit the changes were computed at.
	Base    string
	Changes []Change
	Message string
	// ChangeSet, in proposal mode, is the reconciler's change set to add
	// to; empty starts one.
	ChangeSet string
}

// WriteResult is what a write made.
type WriteResult struct {
	Commit string
	// ChangeSet is the change set written to, in proposal mode.
	ChangeSet string
}

// ErrStale reports a write whose base is no longer the branch's head.
var ErrStale = errors.New("the branch moved since the outputs were computed")

// ErrChangeSetGone reports a change set that cannot take more commits (it
// was merged or closed): the next write starts a new one.
var ErrChangeSetGone = errors.New("the change set is gone")

// Options tune a Runtime.
type Options struct {
	// Workers is how many reconciles run at once (default 4).
	Workers int
	// Resync reconciles every primary this often, with nothing changed
	// (default 10 minutes; negative: never). Outputs that already match
	// cost no commit.
	Resync time.Duration
	// Poll is how often the head is read when nothing pokes the runtime
	// (default 2 s).
	Poll time.Duration
	// Timeout bounds one transform call (default 30 s).
	Timeout time.Duration
	// Backoff of failed reconciles (default queue.DefaultBackoff()).
	Backoff *queue.Backoff
	// Clock, for tests (default the real one).
	Clock queue.Clock
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Metrics receives the runtime's metrics; nil keeps them unregistered.
	Metrics *Metrics
	// MaxQueued bounds the keys queued (default 1,000,000).
	MaxQueued int
}

// work is one primary of one reconciler.
type work struct {
	reconciler int
	key
}

// Runtime runs reconcilers against a Store.
type Runtime struct {
	store Store
	rs    []*Reconciler
	o     Options
	q     *queue.Queue[work]
	log   *slog.Logger
	m     *Metrics

	poke chan struct{}

	mu         sync.Mutex
	cur        *view
	batches    map[int]*batch
	writes     map[int][]time.Time // commit times of the last minute, per reconciler
	pausedTill map[int]time.Time
	changeSets map[int]string
	views      viewCache
}

// New checks the reconcilers and returns a runtime over store; Run starts
// it.
func New(store Store, rs []*Reconciler, o Options) (*Runtime, error) {
	if err := check(rs); err != nil {
		return nil, err
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Resync == 0 {
		o.Resync = 10 * time.Minute
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Clock == nil {
		o.Clock = queue.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxQueued <= 0 {
		o.MaxQueued = 1_000_000
	}
	b := queue.DefaultBackoff()
	if o.Backoff != nil {
		b = *o.Backoff
	}
	rt := &Runtime{
		store: store, rs: rs, o: o, log: o.Logger, m: o.Metrics,
		q:          queue.New[work](queue.Options{Backoff: b, Clock: o.Clock, MaxItems: o.MaxQueued}),
		poke:       make(chan struct{}, 1),
		batches:    map[int]*batch{},
		writes:     map[int][]time.Time{},
		pausedTill: map[int]time.Time{},
		changeSets: map[int]string{},
	}
	if rt.m == nil {
		rt.m = NewMetrics(nil)
	}
	return rt, nil
}

// Reconcilers returns the runtime's reconcilers.
func (rt *Runtime) Reconcilers() []*Reconciler { return rt.rs }

// Poke makes the runtime read the head now: a write through the server
// just moved it.
func (rt *Runtime) Poke() {
	select {
	case rt.poke <- struct{}{}:
	default:
	}
}

// Run reconciles until ctx ends: it follows the head, maps each change
// of an input to the primaries it wakes, and runs the workers.
func (rt *Runtime) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for range rt.o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rt.worker(ctx)
		}()
	}
	defer func() {
		rt.q.ShutDown()
		wg.Wait()
		rt.flushAll(context.WithoutCancel(ctx))
	}()
	lastResync := rt.o.Clock.Now()
	for {
		if err := rt.follow(ctx); err != nil && ctx.Err() == nil {
			rt.log.WarnContext(ctx, "reconcilers: reading the head failed", "error", err)
		}
		if rt.o.Resync > 0 && rt.o.Clock.Now().Sub(lastResync) >= rt.o.Resync {
			lastResync = rt.o.Clock.Now()
			rt.resync()
		}
		wait := make(chan struct{})
		t := rt.o.Clock.AfterFunc(rt.o.Poll, func() { close(wait) })
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-rt.poke:
			t.Stop()
		case <-wait:
		}
	}
}

// follow loads the view of a new head and queues what changed since the
// last one (every primary, the first time).
func (rt *Runtime) follow(ctx context.Context) error {
	head, err := rt.store.Head(ctx)
	if err != nil {
		return err
	}
	rt.mu.Lock()
	prev := rt.cur
	rt.mu.Unlock()
	if prev != nil && prev.commit == head {
		return nil
	}
	next, err := rt.viewAt(ctx, head)
	if err != nil {
		return err
	}
	rt.mu.Lock()
	rt.cur = next
	rt.mu.Unlock()
	if prev == nil {
		rt.resync()
		return nil
	}
	for i, r := range rt.rs {
		for _, k := range wake(prev, next, r) {
			rt.add(work{i, k})
		}
	}
	return nil
}

// resync queues every primary of every reconciler, and every primary that
// still owns outputs. Keys already queued are not queued twice.
func (rt *Runtime) resync() {
	rt.mu.Lock()
	v := rt.cur
	rt.mu.Unlock()
	if v == nil {
		return
	}
	for i, r := range rt.rs {
		for k := range v.objectsOf(r.For).byKey {
			rt.add(work{i, k})
		}
		for k := range v.indexOf(r).owned {
			rt.add(work{i, k})
		}
	}
}

func (rt *Runtime) add(w work) {
	if err := rt.q.Add(w); err != nil && !errors.Is(err, queue.ErrShutDown) {
		rt.log.Warn("reconcilers: the queue is full; the next resync picks the primary up", "reconciler", rt.rs[w.reconciler].Name, "primary", w.key.String())
	}
	rt.m.adds.WithLabelValues(rt.rs[w.reconciler].Name).Inc()
}

func (rt *Runtime) worker(ctx context.Context) {
	for {
		w, ok := rt.q.Get(ctx)
		if !ok {
			return
		}
		rt.reconcile(ctx, w)
		rt.q.Done(w)
		st := rt.q.Stats()
		rt.m.depth.Set(float64(st.Ready + st.Waiting))
		rt.m.longest.Set(st.LongestRunning.Seconds())
	}
}

// current returns the latest view.
func (rt *Runtime) current() *view {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.cur
}

// reconcile runs one primary and hands its changes to the writer.
func (rt *Runtime) reconcile(ctx context.Context, w work) {
	r := rt.rs[w.reconciler]
	v := rt.current()
	if v == nil {
		return
	}
	start := rt.o.Clock.Now()
	tctx, cancel := context.WithTimeout(ctx, rt.o.Timeout)
	out := evaluate(tctx, v, r, v.indexOf(r), w.key)
	cancel()
	rt.m.duration.WithLabelValues(r.Name).Observe(rt.o.Clock.Now().Sub(start).Seconds())
	result := "success"
	switch {
	case out.panicked:
		rt.m.panics.WithLabelValues(r.Name).Inc()
		fallthrough
	case out.err != nil:
		result = "error"
		rt.m.errors.WithLabelValues(r.Name).Inc()
		rt.log.WarnContext(ctx, "reconcile failed", "reconciler", r.Name, "primary", w.key.String(), "commit", v.commit, "error", out.err)
		if out.invalid {
			rt.q.Forget(w) // nothing to retry until an input changes
		} else {
			_ = rt.q.AddRateLimited(w)
			rt.m.retries.WithLabelValues(r.Name).Inc()
		}
	case len(out.changes) > 0:
		result = "write"
		rt.enqueueWrite(ctx, w, v.commit, out.changes)
	default:
		rt.q.Forget(w)
		if out.resp != nil && out.resp.RequeueAfter > 0 {
			result = "requeue_after"
			_ = rt.q.AddAfter(w, time.Duration(out.resp.RequeueAfter))
		}
	}
	rt.m.total.WithLabelValues(r.Name, result).Inc()
	rt.log.DebugContext(ctx, "reconciled", "reconciler", r.Name, "primary", w.key.String(), "commit", v.commit,
		"result", result, "changes", len(out.changes), "conflicts", len(out.conflicts))
}

// wake returns the primaries of r that the changes between two views
// wake: changed primaries, the primaries changed inputs map to (before
// and after the change), the owners of changed outputs, and the primaries
// whose outputs were bound to a changed input.
func wake(prev, next *view, r *Reconciler) []key {
	seen := map[key]bool{}
	var out []key
	add := func(k key) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	pix, nix := prev.indexOf(r), next.indexOf(r)
	for _, k := range changedKeys(prev.objectsOf(r.For), next.objectsOf(r.For)) {
		add(k)
	}
	for i, w := range r.Watches {
		po, no := prev.objectsOf(w.Type), next.objectsOf(w.Type)
		for _, k := range changedKeys(po, no) {
			for _, pair := range []struct {
				v   *view
				ix  *reconcilerIndex
				res *controller.Resource
			}{{prev, pix, po.byKey[k]}, {next, nix, no.byKey[k]}} {
				if pair.res == nil {
					continue
				}
				for _, pk := range pair.v.primariesOf(r, pair.ix, i, pair.res) {
					add(pk)
				}
				for _, pk := range pair.ix.bound[refString(w.Type, pair.res)] {
					add(pk)
				}
			}
		}
	}
	for _, o := range r.Outputs {
		po, no := prev.objectsOf(o.Type), next.objectsOf(o.Type)
		for _, k := range changedKeys(po, no) {
			for _, res := range []*controller.Resource{po.byKey[k], no.byKey[k]} {
				if res == nil {
					continue
				}
				if pk, ok := ownerKey(res, AnnotationOwner, k.Namespace); ok && ownedBy(res, r.Name) {
					add(pk)
				}
			}
		}
	}
	return out
}

func ownedBy(res *controller.Resource, reconciler string) bool {
	v := res.Metadata.Annotations[AnnotationOwner]
	return len(v) > len(reconciler) && v[:len(reconciler)] == reconciler && v[len(reconciler)] == '/'
}

// changedKeys returns the keys whose resources differ between a and b.
func changedKeys(a, b *objects) []key {
	var out []key
	for k, ra := range a.byKey {
		if rb, ok := b.byKey[k]; !ok || rb.Metadata.ResourceVersion != ra.Metadata.ResourceVersion || rb.Metadata.ResourceVersion == "" {
			out = append(out, k)
		}
	}
	for k := range b.byKey {
		if _, ok := a.byKey[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// Status derives the conditions of primary (namespace, name) of every
// reconciler whose primary type is t, at commit ("" for the head): a pure
// function of the commit and the reconcilers, so any replica answers the
// same. ObservedRevision is the commit, and LastTransitionTime the time of
// that commit (the runtime keeps no history of conditions: the commit is
// when the state it describes was reached). A paused reconciler adds
// Paused, which is the runtime's own state.
func (rt *Runtime) Status(ctx context.Context, commit string, t controller.Type, namespace, name string) ([]Condition, error) {
	if commit == "" {
		head, err := rt.store.Head(ctx)
		if err != nil {
			return nil, err
		}
		commit = head
	}
	v, err := rt.viewAt(ctx, commit)
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
		tctx, cancel := context.WithTimeout(ctx, rt.o.Timeout)
		out := evaluate(tctx, v, r, v.indexOf(r), key{namespace, name})
		cancel()
		cs := conditionsOf(r, out)
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
	switch {
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
