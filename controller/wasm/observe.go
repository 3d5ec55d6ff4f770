package wasm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/lru"
)

// WithMetrics registers the Runtime's metrics with reg:
//
//   - cup_wasm_calls_total{controller,verb,outcome}: module runs, by
//     controller name, verb (get, list, put, delete, or the verb of an
//     [Controller.Exec] run, such as reconcile) and outcome: ok (exit
//     code 0), exit (another exit code: the module reported a failure, a
//     missing resource included), limit (memory or output), timeout,
//     canceled (by the caller) or trap (a crash of the module, or a
//     failure to instantiate it);
//   - cup_wasm_call_duration_seconds{controller,verb}: how long runs took,
//     the wait for the memory budget included;
//   - cup_wasm_instances_alive: module instances existing now;
//   - cup_wasm_compiles_total{cache}: modules compiled, by what the cache
//     directory did: hit (loaded the compiled code), miss (compiled, and
//     wrote it) or memory (compiled without a cache directory, or after it
//     failed);
//   - cup_wasm_compile_duration_seconds{cache}: how long compiles took;
//   - cup_wasm_reused_total{controller,verb}: gets and lists answered
//     with the output of an earlier run, without running the module (see
//     [WithReuseBytes]), which cup_wasm_calls_total does not count;
//   - cup_wasm_reuse_bytes: what the kept runs take.
//
// The default, and a nil reg, register none (they are still kept).
func WithMetrics(reg prometheus.Registerer) RuntimeOption {
	return func(c *runtimeConfig) { c.metrics = reg }
}

// WithTracerProvider sets where the Runtime's Controllers send their
// spans: one per module run, named "controller " and the verb
// ("controller get"), with the controller's name, the kind (but for an
// [Controller.Exec] run), the verb and the outcome as attributes. The default, and a nil tp: no spans.
func WithTracerProvider(tp trace.TracerProvider) RuntimeOption {
	return func(c *runtimeConfig) { c.tracerProvider = tp }
}

// tracerName names the package's tracer (the instrumentation scope).
const tracerName = "github.com/cup-dev/cup/controller/wasm"

// observer holds a Runtime's metrics and tracer, shared by its
// Controllers.
type observer struct {
	tracer   trace.Tracer
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	alive    prometheus.Gauge

	compiles        *prometheus.CounterVec
	compileDuration *prometheus.HistogramVec
	cacheEvictions  prometheus.Counter
	cacheBytes      prometheus.Gauge
	reused          *prometheus.CounterVec // controller, verb
}

func newObserver(cfg *runtimeConfig) (*observer, error) {
	tp := cfg.tracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	o := &observer{
		tracer: tp.Tracer(tracerName),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_wasm_calls_total",
			Help: "WASM controller module runs, by controller, verb and outcome (ok, exit, limit, timeout, canceled, trap).",
		}, []string{"controller", "verb", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cup_wasm_call_duration_seconds",
			Help:    "Time WASM controller module runs took, the wait for the memory budget included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"controller", "verb"}),
		alive: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cup_wasm_instances_alive",
			Help: "WASM controller module instances existing now.",
		}),
		compiles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_wasm_compiles_total",
			Help: "WASM modules compiled, by what the compilation cache directory did: hit (loaded the compiled code), miss (compiled and wrote it) or memory (no cache directory).",
		}, []string{"cache"}),
		compileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cup_wasm_compile_duration_seconds",
			Help:    "Time compiling a WASM module took, by what the compilation cache directory did (hit, miss or memory).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"cache"}),
		cacheEvictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cup_wasm_cache_evictions_total",
			Help: "Compiled WASM modules removed from the compilation cache directory to keep it within its bound (--wasm-cache-max-bytes).",
		}),
		cacheBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cup_wasm_cache_bytes",
			Help: "Bytes of compiled WASM modules in the compilation cache directory, as last counted.",
		}),
		reused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_wasm_reused_total",
			Help: "WASM controller gets and lists answered with the output of an earlier run of the same call, which read what the tree still holds, without running the module.",
		}, []string{"controller", "verb"}),
	}
	if cfg.metrics != nil {
		for _, c := range []prometheus.Collector{o.calls, o.duration, o.alive, o.compiles, o.compileDuration, o.cacheEvictions, o.cacheBytes, o.reused} {
			if err := cfg.metrics.Register(c); err != nil {
				return nil, fmt.Errorf("wasm runtime: metrics: %w", err)
			}
		}
	}
	return o, nil
}

// registerReuse registers the gauge of the bytes reuse keeps.
func (o *observer) registerReuse(cfg *runtimeConfig, reuse *lru.Cache[*reused]) error {
	if cfg.metrics == nil {
		return nil
	}
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "cup_wasm_reuse_bytes",
		Help: "Bytes of WASM controller get and list output kept for reuse (see cup_wasm_reused_total), keys and what the runs read included.",
	}, func() float64 { return float64(reuse.Bytes()) })
	if err := cfg.metrics.Register(g); err != nil {
		return fmt.Errorf("wasm runtime: metrics: %w", err)
	}
	return nil
}

// Outcomes of a module run, the outcome label of cup_wasm_calls_total.
const (
	outcomeOK       = "ok"
	outcomeExit     = "exit"
	outcomeLimit    = "limit"
	outcomeTimeout  = "timeout"
	outcomeCanceled = "canceled"
	outcomeTrap     = "trap"
)

// startRun starts observing one run of the module for cl. The returned
// context carries the run's span; end ends it with the run's outcome, and
// the exit code for outcomeExit.
func (c *Controller) startRun(ctx context.Context, cl *call) (context.Context, func(outcome string, exit uint32, err error)) {
	o := c.obs
	start := time.Now()
	attrs := []attribute.KeyValue{
		attribute.String("cup.controller", c.name),
		attribute.String("cup.controller.type", "wasm"),
		attribute.String("cup.verb", cl.verb),
	}
	if !cl.exec { // an Exec run is of no type
		attrs = append(attrs,
			attribute.String("cup.api_version", cl.typ.APIVersion()),
			attribute.String("cup.kind", cl.typ.Kind))
	}
	ctx, span := o.tracer.Start(ctx, "controller "+cl.verb, trace.WithAttributes(attrs...))
	return ctx, func(outcome string, exit uint32, err error) {
		o.calls.WithLabelValues(c.name, cl.verb, outcome).Inc()
		o.duration.WithLabelValues(c.name, cl.verb).Observe(time.Since(start).Seconds())
		if span.IsRecording() {
			span.SetAttributes(attribute.String("cup.wasm.outcome", outcome))
			if outcome == outcomeExit {
				span.SetAttributes(attribute.Int("cup.wasm.exit_code", int(exit)))
			}
			if err != nil && outcome != outcomeCanceled {
				span.SetStatus(codes.Error, outcome)
			}
		}
		span.End()
	}
}

// exitCode is res's exit code, or 0 without res.
func exitCode(res *result) uint32 {
	if res == nil {
		return 0
	}
	return res.exit
}

// runOutcome is the outcome of a run that returned err, or res.
func runOutcome(res *result, err error) string {
	switch {
	case err == nil && res.exit == 0:
		return outcomeOK
	case err == nil:
		return outcomeExit
	case errors.Is(err, controller.ErrLimit):
		return outcomeLimit
	case errors.Is(err, context.DeadlineExceeded):
		return outcomeTimeout
	case errors.Is(err, context.Canceled):
		return outcomeCanceled
	}
	return outcomeTrap
}
