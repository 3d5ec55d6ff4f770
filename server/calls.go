package server

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxControllerCalls is the default bound of controller calls the
// server runs at once: twice GOMAXPROCS (which follows the CPU quota of a
// container), and at least 4. A controller call is CPU work (a WASM module
// runs on the calling goroutine; a template controller decodes files), so
// running more calls than cores only shares the cores between more of them,
// and every call, and its memory (a WASM instance's linear memory), lasts
// longer; twice the cores leaves room for calls waiting on Git objects.
func DefaultMaxControllerCalls() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

// WithMaxConcurrentControllerCalls bounds the controller calls (the reads
// the memo does not answer, and the reads and writes of puts and deletes)
// the server runs at once. A call arriving while n run waits for one to
// end, up to its deadline, in a queue WithMaxQueuedControllerCalls bounds.
// Reads answered from the memo take no slot. Zero keeps the default,
// [DefaultMaxControllerCalls]; less than zero: no bound.
func WithMaxConcurrentControllerCalls(n int) Option {
	return func(c *config) { c.maxCalls = orDefault(n, DefaultMaxControllerCalls()) }
}

// WithMaxQueuedControllerCalls bounds the controller calls waiting for a
// slot (see WithMaxConcurrentControllerCalls). A call arriving while n wait
// fails at once with ResourceExhausted, which clients may retry after a
// pause (HTTP 429 on the REST form). Zero keeps the default,
// [DefaultMaxQueuedControllerCalls]; less than zero: no bound (each call
// still waits no longer than its deadline).
func WithMaxQueuedControllerCalls(n int) Option {
	return func(c *config) { c.maxQueued = orDefault(n, DefaultMaxQueuedControllerCalls) }
}

// WithMetrics registers the server's metrics with reg:
//
//   - cup_controller_calls_in_flight: controller calls running;
//   - cup_controller_calls_queued: controller calls waiting for a slot;
//   - cup_controller_calls_rejected_total: controller calls refused because
//     the queue was full.
//
// Default: none are registered (they are still kept).
func WithMetrics(reg prometheus.Registerer) Option { return func(c *config) { c.metrics = reg } }

// rejectWarnEvery is how often at most the server warns that it refuses
// controller calls.
const rejectWarnEvery = 10 * time.Second

// callSlots bounds the controller calls running at once and the calls
// waiting for them.
type callSlots struct {
	slots     chan struct{} // nil: no bound
	maxQueued int64         // zero or less: no bound
	waiting   atomic.Int64
	logger    *slog.Logger

	inFlight prometheus.Gauge
	queued   prometheus.Gauge
	rejected prometheus.Counter

	mu       sync.Mutex
	lastWarn time.Time
	unwarned int // refusals since the last warning
}

func newCallSlots(cfg *config) (*callSlots, error) {
	cs := &callSlots{
		maxQueued: int64(cfg.maxQueued),
		logger:    cfg.logger,
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cup_controller_calls_in_flight",
			Help: "Controller calls running (cupd --max-concurrent-controller-calls bounds them).",
		}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cup_controller_calls_queued",
			Help: "Controller calls waiting for a slot (cupd --max-queued-controller-calls bounds them).",
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cup_controller_calls_rejected_total",
			Help: "Controller calls refused with RESOURCE_EXHAUSTED because the queue was full.",
		}),
	}
	if cfg.maxCalls > 0 {
		cs.slots = make(chan struct{}, cfg.maxCalls)
	}
	if reg := cfg.metrics; reg != nil {
		for _, c := range []prometheus.Collector{cs.inFlight, cs.queued, cs.rejected} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("server: metrics: %w", err)
			}
		}
	}
	return cs, nil
}

// acquire takes a slot for one controller call, waiting in the queue while
// every slot is taken. It fails with ResourceExhausted when the queue is
// full, and with ctx's error when ctx ends first. release gives the slot
// back.
func (cs *callSlots) acquire(ctx context.Context) (release func(), err error) {
	if cs.slots == nil {
		cs.inFlight.Inc()
		return cs.inFlight.Dec, nil
	}
	select {
	case cs.slots <- struct{}{}:
		cs.inFlight.Inc()
		return cs.release, nil
	default:
	}
	if n := cs.waiting.Add(1); cs.maxQueued > 0 && n > cs.maxQueued {
		cs.waiting.Add(-1)
		return nil, cs.reject(ctx)
	}
	cs.queued.Inc()
	defer func() {
		cs.waiting.Add(-1)
		cs.queued.Dec()
	}()
	select {
	case cs.slots <- struct{}{}:
		cs.inFlight.Inc()
		return cs.release, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// free reports whether a call would get a slot now, without waiting.
func (cs *callSlots) free() bool {
	return cs.slots == nil || (len(cs.slots) < cap(cs.slots) && cs.waiting.Load() == 0)
}

func (cs *callSlots) release() {
	cs.inFlight.Dec()
	<-cs.slots
}

// reject counts a refused call, warns about refusals at most every
// rejectWarnEvery, and returns the caller's error.
func (cs *callSlots) reject(ctx context.Context) error {
	cs.rejected.Inc()
	cs.mu.Lock()
	cs.unwarned++
	now := time.Now()
	var refused int
	if cs.lastWarn.IsZero() || now.Sub(cs.lastWarn) >= rejectWarnEvery {
		refused, cs.unwarned, cs.lastWarn = cs.unwarned, 0, now
	}
	cs.mu.Unlock()
	if refused > 0 {
		cs.logger.WarnContext(ctx, "refusing controller calls: every slot is taken and the queue is full",
			"refused", refused, "running", cap(cs.slots), "queued", cs.maxQueued,
			"flags", "--max-concurrent-controller-calls, --max-queued-controller-calls")
	}
	return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf(
		"the server is running %d controller calls, its limit (cupd --max-concurrent-controller-calls), and %d more wait, the queue's limit (cupd --max-queued-controller-calls): retry in a moment",
		cap(cs.slots), cs.maxQueued))
}

// callController runs fn, a call of a controller, in a slot of s.calls.
func callController[T any](ctx context.Context, s *Server, fn func() (T, error)) (T, error) {
	waited := slotWait(ctx)
	release, err := s.calls.acquire(ctx)
	waited(err)
	if err != nil {
		var zero T
		return zero, err
	}
	defer release()
	return fn()
}

// callControllerErr is callController for calls that return only an error.
func callControllerErr(ctx context.Context, s *Server, fn func() error) error {
	_, err := callController(ctx, s, func() (struct{}, error) { return struct{}{}, fn() })
	return err
}
