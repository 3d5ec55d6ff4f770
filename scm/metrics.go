package scm

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cup-dev/cup/internal/promreg"
)

// Metrics exports an HTTP client's calls and rate-limit budget to
// Prometheus, labelled with the provider it serves:
//
//   - cup_scm_requests_total{provider,code}: requests sent, retries
//     included, by HTTP status ("error" when no answer came);
//   - cup_scm_request_duration_seconds{provider}: how long they took, until
//     the answer's headers, waits excluded;
//   - cup_scm_rate_limit_waits_total{provider}: rate-limit waits;
//   - cup_scm_rate_limit_remaining{provider} and
//     cup_scm_rate_limit_limit{provider}: the budget the latest answer
//     reported (GitHub's core budget; not search or GraphQL), absent until
//     an answer reports one.
//
// A nil *Metrics exports nothing. Metrics is safe for concurrent use.
type Metrics struct {
	provider  string
	remaining *prometheus.GaugeVec
	limit     *prometheus.GaugeVec
	requests  *prometheus.CounterVec
	waits     *prometheus.CounterVec
	duration  *prometheus.HistogramVec
}

// NewMetrics registers the metrics with reg and returns them for the
// provider named, such as "github". Clients of several providers may share
// reg: the metrics are registered once and labelled per provider. A nil reg
// registers nothing (the metrics can then only be read in tests).
func NewMetrics(reg prometheus.Registerer, provider string) (*Metrics, error) {
	if provider == "" {
		return nil, errors.New("scm metrics: the provider name is required")
	}
	providerLabel := []string{"provider"}
	m := &Metrics{
		provider: provider,
		remaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cup_scm_rate_limit_remaining",
			Help: "Requests left in the SCM's rate-limit budget, as the latest answer reported.",
		}, providerLabel),
		limit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cup_scm_rate_limit_limit",
			Help: "Size of the SCM's rate-limit budget, as the latest answer reported.",
		}, providerLabel),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_scm_requests_total",
			Help: `Requests sent to the SCM, retries included, by HTTP status code ("error" without an answer).`,
		}, []string{"provider", "code"}),
		waits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_scm_rate_limit_waits_total",
			Help: "Waits for the SCM's rate limit.",
		}, providerLabel),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cup_scm_request_duration_seconds",
			Help:    "Time until the SCM's answer headers, per request, waits excluded.",
			Buckets: []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, providerLabel),
	}
	if err := errors.Join(register(reg, &m.remaining), register(reg, &m.limit), register(reg, &m.requests),
		register(reg, &m.waits), register(reg, &m.duration)); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers *c with reg, or when a collector of that name is
// registered already, as by another provider's Metrics, sets *c to it.
func register[C prometheus.Collector](reg prometheus.Registerer, c *C) error {
	if err := promreg.Register(reg, c); err != nil {
		return fmt.Errorf("scm metrics: %w", err)
	}
	return nil
}

func (m *Metrics) observe(code string, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(m.provider, code).Inc()
	m.duration.WithLabelValues(m.provider).Observe(d.Seconds())
}

func (m *Metrics) waited() {
	if m == nil {
		return
	}
	m.waits.WithLabelValues(m.provider).Inc()
}

func (m *Metrics) setBudget(remaining, limit int) {
	if m == nil {
		return
	}
	m.remaining.WithLabelValues(m.provider).Set(float64(remaining))
	if limit > 0 {
		m.limit.WithLabelValues(m.provider).Set(float64(limit))
	}
}
