package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
)

// tracerName names the server's tracer (the instrumentation scope).
const tracerName = "github.com/cup-dev/cup/server"

// WithTracerProvider sets where the server's spans go: one span per call,
// named after its procedure ("cup.v1alpha1.ResourceService/Get", for the
// REST form too), a child of the caller's span when the request carries a
// W3C traceparent header. Default, and a nil tp: no spans, at no cost.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracerProvider = tp }
}

// observer holds the server's per-call metrics and its tracer.
type observer struct {
	tracer     trace.Tracer // nil: no spans
	propagator propagation.TextMapPropagator

	started    *prometheus.CounterVec   // procedure, form
	handled    *prometheus.CounterVec   // procedure, form, code
	handling   *prometheus.HistogramVec // procedure, form
	inFlight   prometheus.Gauge
	writes     *prometheus.CounterVec // outcome
	writeQueue prometheus.Histogram
	applyItems prometheus.Histogram
	mu         sync.RWMutex
	series     map[seriesKey]*callSeries
	watch      watchMetrics
}

// memoStats counts the memo's lookups, read by the metrics.
type memoStats struct {
	hits, misses atomic.Int64
}

func (m *memoStats) hit()  { m.hits.Add(1) }
func (m *memoStats) miss() { m.misses.Add(1) }

// newObserver makes the server's metrics, registered with cfg.metrics when
// set, and its tracer. mem is the memo whose use the metrics report.
//
// The metrics follow grpc-prometheus's and controller-runtime's names:
//
//   - cup_server_started_total{procedure,form}: calls started;
//   - cup_server_handled_total{procedure,form,code}: calls ended, by
//     Connect code ("ok" for success);
//   - cup_server_handling_seconds{procedure,form}: how long calls took;
//   - cup_server_calls_in_flight: calls running;
//   - cup_server_memo_hits_total, cup_server_memo_misses_total: reads the
//     memo answered, or had to compute (a read waiting for another's
//     computation of the same key is a hit);
//   - cup_server_memo_bytes, cup_server_memo_budget_bytes: what the memo
//     holds, and may hold (cupd --cache-bytes);
//   - cup_server_gets_from_listings_total: gets answered from a listing of
//     their namespace the memo held (counted as memo hits too);
//   - cup_server_listing_prefetches_total{outcome}: namespaces listed in
//     the background after a Get of a controller whose Get costs a List
//     (listed, unkept: too large for the memo, failed, canceled, skipped:
//     every controller call slot or prefetch was taken);
//   - cup_server_writes_total{outcome}: puts and deletes by outcome
//     (committed, unchanged, dry_run) or, when they failed, by Connect code;
//   - cup_server_write_queue_seconds: how long a write waited before its
//     change began (for a write slot, and for the source's lock on its
//     target);
//   - cup_server_apply_items: the items of each Apply batch (each batch
//     counts once in cup_server_writes_total);
//   - cup_server_watches: watches open; cup_server_watches_closed_total{reason}:
//     watches ended, by why (client, slow, error);
//   - cup_server_watch_events_sent_total{type}: events sent to watchers;
//   - cup_server_watch_commits_computed_total and
//     cup_server_watch_events_computed_total: commits whose events were
//     computed (once for every watcher), and the events they held.
//
// procedure is the RPC a call is ("/cup.v1alpha1.ResourceService/Get");
// the REST form's calls carry the RPC their route maps to, or the route's
// pattern, never the request's path. form is rest, connect, grpc or
// grpc-web.
func newObserver(cfg *config, mem *memo) (*observer, error) {
	o := &observer{
		series:     make(map[seriesKey]*callSeries),
		propagator: propagation.TraceContext{},
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_server_started_total",
			Help: "Calls started, by procedure and form (rest, connect, grpc, grpc-web).",
		}, []string{"procedure", "form"}),
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_server_handled_total",
			Help: `Calls ended, by procedure, form and Connect code ("ok" for success).`,
		}, []string{"procedure", "form", "code"}),
		handling: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cup_server_handling_seconds",
			Help:    "Time calls took, from their decoded request to their answer, by procedure and form.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"procedure", "form"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cup_server_calls_in_flight",
			Help: "Calls running now.",
		}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_server_writes_total",
			Help: "Puts, deletes and Apply batches, by outcome (committed, unchanged, dry_run), or by Connect code when they failed.",
		}, []string{"outcome"}),
		writeQueue: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cup_server_write_queue_seconds",
			Help:    "Time a write waited before its change began: for a write slot and for the source's lock on its target.",
			Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5, 10, 30},
		}),
		applyItems: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cup_server_apply_items",
			Help:    "Items in each Apply batch asked for (valid or not).",
			Buckets: []float64{1, 2, 5, 10, 50, 100, 500, 1000, 5000, 10000},
		}),
	}
	if tp := cfg.tracerProvider; tp != nil {
		o.tracer = tp.Tracer(tracerName)
	}
	o.watch = newWatchMetrics()
	reg := cfg.metrics
	if reg == nil {
		return o, nil
	}
	collectors := []prometheus.Collector{
		o.started, o.handled, o.handling, o.inFlight, o.writes, o.writeQueue, o.applyItems,
		o.watch.open, o.watch.closed, o.watch.sent, o.watch.computed, o.watch.computedEvents, o.watch.catchUps,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "cup_server_memo_hits_total",
			Help: "Reads the memo answered (waits for another call's computation of the same read included).",
		}, func() float64 { return float64(mem.stats.hits.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "cup_server_memo_misses_total",
			Help: "Reads the memo did not hold, computed by a controller call.",
		}, func() float64 { return float64(mem.stats.misses.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cup_server_memo_bytes",
			Help: "Bytes the memo holds, roughly (keys and values).",
		}, func() float64 { return float64(mem.usedBytes()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cup_server_memo_budget_bytes",
			Help: "Bytes the memo may hold (cupd --cache-bytes).",
		}, func() float64 { return float64(mem.budget) }),
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("server: metrics: %w", err)
		}
	}
	return o, nil
}

// usedBytes is what m holds, roughly, in bytes.
func (m *memo) usedBytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// observed is the metrics and span of one call (call.obs).
type observed struct {
	o      *observer
	series *callSeries
	start  time.Time
	span   trace.Span
}

// observeCall starts observing one call of procedure in form: it counts it
// and starts its span, a child of the span h's traceparent names. The
// returned context carries the span.
func (s *Server) observeCall(ctx context.Context, procedure, form string, h http.Header) (context.Context, *observed) {
	o := s.obs
	var span trace.Span = noop.Span{}
	if o.tracer != nil {
		if h != nil {
			ctx = o.propagator.Extract(ctx, propagation.HeaderCarrier(h))
		}
		ctx, span = o.tracer.Start(ctx, strings.TrimPrefix(procedure, "/"), trace.WithSpanKind(trace.SpanKindServer))
	}
	if span.IsRecording() {
		service, method := splitProcedure(procedure)
		span.SetAttributes(
			attribute.String("rpc.system", rpcSystem(form)),
			attribute.String("rpc.service", service),
			attribute.String("rpc.method", method),
			attribute.String("cup.form", form),
		)
	}
	c := &observed{o: o, series: o.seriesOf(procedure, form), start: time.Now(), span: span}
	c.series.started.Inc()
	o.inFlight.Inc()
	return ctx, c
}

// callSeries are the series of one procedure in one form.
type callSeries struct {
	procedure, form string
	started         prometheus.Counter
	handling        prometheus.Observer
	// handled holds the counter of each code, "ok" at 0 (no Connect code
	// is 0), made on first use.
	handled [maxCode + 1]atomic.Pointer[prometheus.Counter]
}

// maxCode is the largest Connect code.
const maxCode = connect.CodeUnauthenticated

type seriesKey struct{ procedure, form string }

// seriesOf returns the series of procedure in form, made on first use, so
// that a call finds its series without the vectors' hashing.
func (o *observer) seriesOf(procedure, form string) *callSeries {
	k := seriesKey{procedure, form}
	o.mu.RLock()
	cs := o.series[k]
	o.mu.RUnlock()
	if cs != nil {
		return cs
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if cs = o.series[k]; cs == nil {
		cs = &callSeries{
			procedure: procedure, form: form,
			started:  o.started.WithLabelValues(procedure, form),
			handling: o.handling.WithLabelValues(procedure, form),
		}
		o.series[k] = cs
	}
	return cs
}

// handledWith returns the counter of calls ended with code, 0 for
// success.
func (cs *callSeries) handledWith(o *observer, code connect.Code) prometheus.Counter {
	if code > maxCode {
		code = connect.CodeUnknown
	}
	if c := cs.handled[code].Load(); c != nil {
		return *c
	}
	label := "ok"
	if code != 0 {
		label = code.String()
	}
	c := o.handled.WithLabelValues(cs.procedure, cs.form, label)
	cs.handled[code].Store(&c)
	return c
}

// end ends the observed call c with code (0 for success).
func (c *observed) end(code connect.Code) {
	if code != 0 {
		c.span.SetAttributes(attribute.String("rpc.connect_rpc.error_code", code.String()))
		if serverFault(code) {
			c.span.SetStatus(codes.Error, code.String())
		}
	}
	d := time.Since(c.start)
	c.o.inFlight.Dec()
	c.series.handledWith(c.o, code).Inc()
	c.series.handling.Observe(d.Seconds())
	c.span.End()
}

// serverFault reports whether code is the server's fault rather than the
// caller's, as OpenTelemetry's RPC conventions mark a server span's error.
func serverFault(code connect.Code) bool {
	switch code {
	case connect.CodeUnknown, connect.CodeDeadlineExceeded, connect.CodeUnimplemented,
		connect.CodeInternal, connect.CodeUnavailable, connect.CodeDataLoss:
		return true
	}
	return false
}

// splitProcedure splits "/pkg.Service/Method" into its service and method;
// a REST pattern without an RPC is its own service.
func splitProcedure(p string) (service, method string) {
	p = strings.TrimPrefix(p, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 && !strings.Contains(p, " ") {
		return p[:i], p[i+1:]
	}
	return p, ""
}

func rpcSystem(form string) string {
	switch form {
	case formGRPC, formGRPCWeb:
		return "grpc"
	case formREST:
		return "http"
	}
	return "connect_rpc"
}

// restProcedures maps the REST form's route patterns to the RPCs they
// serve, the procedure label of their calls.
var restProcedures = map[string]string{
	"GET /apis":             cupv1alpha1connect.DiscoveryServiceListDefinitionsProcedure,
	"GET /apis/{$}":         cupv1alpha1connect.DiscoveryServiceListDefinitionsProcedure,
	"GET " + collectionPath: cupv1alpha1connect.ResourceServiceListProcedure,
	"GET " + itemPath:       cupv1alpha1connect.ResourceServiceGetProcedure,
	"PUT " + itemPath:       cupv1alpha1connect.ResourceServicePutProcedure,
	// A create is a put that refuses an existing resource.
	"POST " + collectionPath: cupv1alpha1connect.ResourceServicePutProcedure,
	"PATCH " + itemPath:      cupv1alpha1connect.ResourceServicePatchProcedure,
	"DELETE " + itemPath:     cupv1alpha1connect.ResourceServiceDeleteProcedure,
	"GET " + proposalsPath:   cupv1alpha1connect.ProposalServiceListProposalsProcedure,
	"GET " + proposalPath:    cupv1alpha1connect.ProposalServiceGetProposalProcedure,
	"GET " + historyPath:     cupv1alpha1connect.ResourceServiceHistoryProcedure,
	"GET " + statusPath:      cupv1alpha1connect.ResourceServiceGetStatusProcedure,
	"GET " + renderPath:      cupv1alpha1connect.ResourceServiceRenderProcedure,
	"GET " + graphPath:       cupv1alpha1connect.DiscoveryServiceGetDependencyGraphProcedure,
	"GET " + namespacesPath:  cupv1alpha1connect.DiscoveryServiceListNamespacesProcedure,
	// An access review is posted: its checks are a body.
	"POST " + accessReviewsPath: cupv1alpha1connect.DiscoveryServiceCheckAccessProcedure,
	// A list across namespaces; with watch=true, a watch (watchAllPattern).
	"GET " + allNamespacesPath: cupv1alpha1connect.ResourceServiceListProcedure,
	// A watch is a GET of a list with watch=true.
	watchPattern:    cupv1alpha1connect.ResourceServiceWatchProcedure,
	watchAllPattern: cupv1alpha1connect.ResourceServiceWatchProcedure,
}

// restProcedure is the procedure label of a REST call of the route
// pattern: the RPC it maps to (see restProcedures), or else the pattern,
// never the request's path, which would make a label value per resource.
func restProcedure(pattern string) string {
	if p, ok := restProcedures[pattern]; ok {
		return p
	}
	return pattern
}

// slotWait starts timing a call's wait for a controller slot; the
// function it returns records the wait on the call's span as the event
// "controller slot", with the error that ended it when it failed. Without
// a recording span it does nothing.
func slotWait(ctx context.Context) func(err error) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return func(error) {}
	}
	start := time.Now()
	return func(err error) {
		attrs := []attribute.KeyValue{attribute.Float64("cup.wait_seconds", time.Since(start).Seconds())}
		if err != nil {
			attrs = append(attrs, attribute.String("error", err.Error()))
		}
		span.AddEvent("controller slot", trace.WithAttributes(attrs...))
	}
}

// write is one observed put or delete.
type write struct {
	o     *observer
	start time.Time
	began atomic.Bool
}

// startWrite starts observing a put or delete: call began when its change
// begins, and end with its result.
func (s *Server) startWrite() *write {
	return &write{o: s.obs, start: time.Now()}
}

// beginChange records the wait of the write until its change began, once.
func (w *write) beginChange() {
	if w.began.CompareAndSwap(false, true) {
		w.o.writeQueue.Observe(time.Since(w.start).Seconds())
	}
}

// end counts the write by its outcome.
func (w *write) end(res *cupv1alpha1.WriteResult, err error) {
	outcome := "unknown"
	switch {
	case err != nil:
		outcome = connect.CodeOf(toConnect(err)).String()
	case res != nil:
		switch res.Outcome {
		case cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED:
			outcome = "committed"
		case cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED:
			outcome = "unchanged"
		case cupv1alpha1.WriteOutcome_WRITE_OUTCOME_DRY_RUN:
			outcome = "dry_run"
		}
	}
	w.o.writes.WithLabelValues(outcome).Inc()
}
