package runtime

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
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
	// List returns the resources of t at commit in the namespaces given,
	// or in every namespace for nil; an error wrapping
	// ErrNamespacesUnknown says t's controller cannot tell which
	// namespaces hold resources (then the runtime names them). The
	// runtime never modifies the resources returned (it hands clones to
	// transforms), so a store may share them between calls and commits.
	List(ctx context.Context, commit string, t controller.Type, namespaces []string) ([]*controller.Resource, error)
	// CommitTime returns when commit was committed.
	CommitTime(ctx context.Context, commit string) (time.Time, error)
	// Write makes the changes one commit, through the normal write path.
	// In direct mode, and when joining a change set (req.Join), it fails
	// with an error wrapping ErrStale (a *StaleError naming the head, when
	// it can) when the branch or change set is no longer at req.Base: the
	// changes were computed from inputs that may have changed since.
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
	// to; empty starts one. With Join it is the change set of another
	// writer that the outputs were computed in.
	ChangeSet string
	// Join says that the outputs join ChangeSet, a change set another
	// writer made (see Runtime.PokeChangeSet), whatever the reconciler's
	// mode: the write adds to it although another requester owns it, and
	// only if it is still at Base.
	Join bool
}

// WriteResult is what a write made.
type WriteResult struct {
	Commit string
	// ChangeSet is the change set written to, in proposal mode.
	ChangeSet string
}

// ErrNamespacesUnknown reports a type whose namespaces a store cannot
// list: its inputs are read in the namespaces of the primaries.
var ErrNamespacesUnknown = errors.New("the type's namespaces cannot be listed")

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
	// MaxChangeSets bounds the change sets followed at once (default
	// DefaultMaxChangeSets); see Runtime.PokeChangeSet.
	MaxChangeSets int
}

// work is one primary of one reconciler, on the served branch (lane "")
// or in a change set.
type work struct {
	reconciler int
	key
	lane string
}

// batchKey names the batch of one reconciler's outputs on the served
// branch (lane "") or in one change set; garbage collection (gc: deletes
// of orphaned outputs) is batched apart, to be committed on its own.
type batchKey struct {
	reconciler int
	lane       string
	gc         bool
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
	batches    map[batchKey]*batch
	lanes      map[string]*lane
	writes     map[int][]time.Time // commit times of the last minute, per reconciler
	pausedTill map[int]time.Time
	changeSets map[int]string
	views      viewCache
	// blocked holds, per reconciler, the outputs that primaries want but
	// another owner holds (a conflict), and blocking the same by primary:
	// when such an output changes, its primaries are reconciled again.
	blocked  map[int]map[ref]map[key]bool
	blocking map[work][]ref
	// timers counts the batch windows armed and not yet stopped or done.
	timers sync.WaitGroup
	// followMu serialises follow: the head read moves only forward.
	followMu sync.Mutex
	// mapping says that follow has read a new head and is queueing the
	// primaries its changes wake.
	mapping bool
	// same remembers the outputs found up to date.
	same sameSpecs
	// statuses keeps the conditions Status derived.
	statuses statusCache
	// flushing counts the batches being written.
	flushing int
	// changed is closed (and cleared) when a reconcile or a write ends
	// or a new head is read: WaitIdle looks again.
	changed chan struct{}
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
	if o.MaxChangeSets <= 0 {
		o.MaxChangeSets = DefaultMaxChangeSets
	}
	b := queue.DefaultBackoff()
	if o.Backoff != nil {
		b = *o.Backoff
	}
	rt := &Runtime{
		store: store, rs: rs, o: o, log: o.Logger, m: o.Metrics,
		q:          queue.New[work](queue.Options{Backoff: b, Clock: o.Clock, MaxItems: o.MaxQueued}),
		poke:       make(chan struct{}, 1),
		batches:    map[batchKey]*batch{},
		lanes:      map[string]*lane{},
		writes:     map[int][]time.Time{},
		pausedTill: map[int]time.Time{},
		changeSets: map[int]string{},
		blocked:    map[int]map[ref]map[key]bool{},
		blocking:   map[work][]ref{},
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
		rt.timers.Wait() // a window that closed meanwhile is being written
	}()
	lastResync := rt.o.Clock.Now()
	for {
		if err := rt.follow(ctx); err != nil && ctx.Err() == nil {
			rt.log.WarnContext(ctx, "reconcilers: reading the head failed", "error", err)
		}
		rt.followLanes(ctx)
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
// last one (every primary, the first time). Calls are serialised.
func (rt *Runtime) follow(ctx context.Context) error {
	rt.followMu.Lock()
	defer rt.followMu.Unlock()
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
	rt.mapping = true // until the changes are queued: not idle
	rt.mu.Unlock()
	defer func() {
		rt.mu.Lock()
		rt.mapping = false
		rt.mu.Unlock()
		rt.notify()
	}()
	if prev == nil {
		rt.resync()
		return nil
	}
	for i, r := range rt.rs {
		for _, k := range wake(prev, next, r, func(o ref) []key { return rt.blockedOn(i, o) }) {
			rt.add(work{reconciler: i, key: k})
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
		// Each key once: a key queued twice could be taken by a worker
		// in between, and reconciled twice.
		primaries, owners := v.objectsOf(r.For).byKey, v.indexOf(r).owned
		for k := range primaries {
			rt.add(work{reconciler: i, key: k})
		}
		for k := range owners {
			if _, ok := primaries[k]; !ok {
				rt.add(work{reconciler: i, key: k})
			}
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
		rt.notify()
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
	if w.lane != "" {
		var ok bool
		var err error
		if v, ok, err = rt.laneView(ctx, w.lane); !ok {
			if err != nil && ctx.Err() == nil {
				rt.log.WarnContext(ctx, "reconcilers: reading a change set failed; it is no longer reconciled",
					"change_set", w.lane, "error", err)
				rt.dropLane(w.lane)
			}
			rt.q.Forget(w) // the change set is no longer followed
			return
		}
	}
	if v == nil {
		return
	}
	start := rt.o.Clock.Now()
	tctx, cancel := context.WithTimeout(ctx, rt.o.Timeout)
	out := evaluate(tctx, v, r, v.indexOf(r), w.key, &rt.same, w.lane)
	cancel()
	rt.m.duration.WithLabelValues(r.Name).Observe(rt.o.Clock.Now().Sub(start).Seconds())
	result := "success"
	switch {
	case out.err != nil:
		result = "error"
		if out.panicked {
			rt.m.panics.WithLabelValues(r.Name).Inc()
		}
		rt.m.errors.WithLabelValues(r.Name).Inc()
		rt.log.WarnContext(ctx, "reconcile failed", "reconciler", r.Name, "primary", w.key.String(), "commit", v.commit,
			"change_set", w.lane, "error", out.err)
		if out.invalid {
			rt.q.Forget(w) // nothing to retry until an input changes
		} else {
			_ = rt.q.AddRateLimited(w)
			rt.m.retries.WithLabelValues(r.Name).Inc()
		}
	case len(out.changes) > 0:
		rt.setBlocked(w, v, out.blocked)
		result = "write"
		rt.enqueueWrite(ctx, w, v.commit, out.changes)
	default:
		rt.setBlocked(w, v, out.blocked)
		rt.q.Forget(w)
		if out.resp != nil && out.resp.RequeueAfter > 0 {
			result = "requeue_after"
			_ = rt.q.AddAfter(w, time.Duration(out.resp.RequeueAfter))
		}
	}
	rt.m.total.WithLabelValues(r.Name, result).Inc()
	rt.log.DebugContext(ctx, "reconciled", "reconciler", r.Name, "primary", w.key.String(), "commit", v.commit,
		"change_set", w.lane, "result", result, "changes", len(out.changes), "conflicts", len(out.conflicts))
}

// setBlocked records the outputs that primary w wants and another owner
// holds, as evaluated at v: a change of one of them wakes w (see wake).
// If the runtime has read a newer head meanwhile, whose changes were
// mapped before this record was made, w is queued again. Only the served
// branch keeps the record: in a change set a conflict is a condition
// until the change set's next commit.
func (rt *Runtime) setBlocked(w work, v *view, refs []ref) {
	if w.lane != "" {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, o := range rt.blocking[w] {
		if m := rt.blocked[w.reconciler][o]; m != nil {
			delete(m, w.key)
			if len(m) == 0 {
				delete(rt.blocked[w.reconciler], o)
			}
		}
	}
	delete(rt.blocking, w)
	if len(refs) == 0 {
		return
	}
	rt.blocking[w] = refs
	byRef := rt.blocked[w.reconciler]
	if byRef == nil {
		byRef = map[ref]map[key]bool{}
		rt.blocked[w.reconciler] = byRef
	}
	for _, o := range refs {
		if byRef[o] == nil {
			byRef[o] = map[key]bool{}
		}
		byRef[o][w.key] = true
	}
	if rt.cur != v {
		_ = rt.q.Add(w) // re-run after this reconcile: the head moved
	}
}

// blockedOn returns the primaries of reconciler i that want output o,
// which another owner holds.
func (rt *Runtime) blockedOn(i int, o ref) []key {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return slices.Collect(maps.Keys(rt.blocked[i][o]))
}
