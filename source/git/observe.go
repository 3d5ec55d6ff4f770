package git

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/cup-dev/cup/internal/promreg"
	"github.com/cup-dev/cup/source"
)

// Outcomes of fetches and pushes, as the metrics label them and spans
// record them (attribute cup.git.outcome).
const (
	// outcomeSuccess: the fetch brought new references, or the push
	// landed.
	outcomeSuccess = "success"
	// outcomeUnchanged: the fetch found the remote's references as they
	// were; nothing was downloaded.
	outcomeUnchanged = "unchanged"
	// outcomeConflict: the push found the branch moved by another writer.
	outcomeConflict = "conflict"
	// outcomeRejected: the remote refused the push for another reason.
	outcomeRejected = "rejected"
	// outcomeCanceled: the caller gave up (its context was done).
	outcomeCanceled = "canceled"
	// outcomeError: anything else, such as an unreachable remote or a
	// full cache directory.
	outcomeError = "error"
)

// tracerName names the tracer the source's spans come from.
const tracerName = "github.com/cup-dev/cup/source/git"

// metrics are the source's Prometheus metrics:
//
//   - cup_git_fetches_total{outcome}: fetches, by outcome;
//   - cup_git_fetch_duration_seconds: how long they took;
//   - cup_git_pushes_total{outcome}: pushes, by outcome;
//   - cup_git_push_duration_seconds: how long they took, settling a lost
//     answer included.
//
// A nil *metrics records nothing.
type metrics struct {
	fetches, pushes             *prometheus.CounterVec
	fetchDuration, pushDuration prometheus.Histogram
}

// gitBuckets span a local fetch (milliseconds) to a slow clone (a minute).
var gitBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// newMetrics registers the metrics with reg; a nil reg gives nil. Sources
// that share reg share the metrics.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	outcome := []string{"outcome"}
	m := &metrics{
		fetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_git_fetches_total",
			Help: "Fetches from the remote repository, by outcome (success, unchanged, canceled, error).",
		}, outcome),
		fetchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cup_git_fetch_duration_seconds",
			Help:    "Time a fetch from the remote repository took, listing its references included.",
			Buckets: gitBuckets,
		}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_git_pushes_total",
			Help: "Pushes to the remote repository, by outcome (success, conflict, rejected, canceled, error).",
		}, outcome),
		pushDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cup_git_push_duration_seconds",
			Help:    "Time a push to the remote repository took, settling a lost answer included.",
			Buckets: gitBuckets,
		}),
	}
	if err := errors.Join(register(reg, &m.fetches), register(reg, &m.fetchDuration),
		register(reg, &m.pushes), register(reg, &m.pushDuration)); err != nil {
		return nil, err
	}
	// Every outcome shows from the start, at zero.
	for _, o := range []string{outcomeSuccess, outcomeUnchanged, outcomeCanceled, outcomeError} {
		m.fetches.WithLabelValues(o)
	}
	for _, o := range []string{outcomeSuccess, outcomeConflict, outcomeRejected, outcomeCanceled, outcomeError} {
		m.pushes.WithLabelValues(o)
	}
	return m, nil
}

// register registers *c with reg, or when a collector of that name is
// registered already, as by another source, sets *c to it.
func register[C prometheus.Collector](reg prometheus.Registerer, c *C) error {
	if err := promreg.Register(reg, c); err != nil {
		return fmt.Errorf("git metrics: %w", err)
	}
	return nil
}

// tracer returns the tracer of the configured provider, or of the global
// one (otel.GetTracerProvider, read at each use so that a provider set
// after Open is used).
func (s *Source) tracer() trace.Tracer {
	tp := s.cfg.tracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(tracerName)
}

// op is one fetch or push under way: its span and its start.
type op struct {
	span  trace.Span
	start time.Time
}

// startOp starts the span of a fetch or push named name ("git.fetch",
// "git.push").
func (s *Source) startOp(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, op) {
	attrs = append(attrs, attribute.String("cup.git.remote", Redact(s.url)))
	ctx, span := s.tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, op{span: span, start: time.Now()}
}

// end ends o with outcome and err, and returns how long o took.
func (o op) end(outcome string, err error) time.Duration {
	took := time.Since(o.start)
	o.span.SetAttributes(attribute.String("cup.git.outcome", outcome))
	if err != nil && outcome != outcomeConflict {
		o.span.RecordError(err)
		o.span.SetStatus(codes.Error, err.Error())
	}
	o.span.End()
	return took
}

// fetchOutcome classifies a fetch's result.
func fetchOutcome(ctx context.Context, changed bool, err error) string {
	switch {
	case err == nil && changed:
		return outcomeSuccess
	case err == nil:
		return outcomeUnchanged
	case ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return outcomeCanceled
	default:
		return outcomeError
	}
}

// pushOutcome classifies a push's result.
func pushOutcome(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return outcomeSuccess
	case errors.Is(err, errMoved):
		return outcomeConflict
	case errors.Is(err, source.ErrRejected):
		return outcomeRejected
	case ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return outcomeCanceled
	default:
		return outcomeError
	}
}

func (m *metrics) fetched(outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.fetches.WithLabelValues(outcome).Inc()
	m.fetchDuration.Observe(took.Seconds())
}

func (m *metrics) pushed(outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.pushes.WithLabelValues(outcome).Inc()
	m.pushDuration.Observe(took.Seconds())
}
