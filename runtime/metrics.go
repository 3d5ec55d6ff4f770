package runtime

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the runtime's metrics, with controller-runtime's names
// where they fit; the label controller is the reconciler's name.
type Metrics struct {
	total            *prometheus.CounterVec
	errors, panics   *prometheus.CounterVec
	duration         *prometheus.HistogramVec
	adds, retries    *prometheus.CounterVec
	depth, longest   prometheus.Gauge
	written, deleted *prometheus.CounterVec
	paused           *prometheus.CounterVec
	changeSets       prometheus.Gauge
}

// NewMetrics makes the metrics and registers them with reg (nil: none).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	by := []string{"controller"}
	m := &Metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "controller_runtime_reconcile_total",
			Help: "Reconciles, by reconciler and result (success, error, write, requeue_after)."}, []string{"controller", "result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "controller_runtime_reconcile_errors_total",
			Help: "Reconciles and output writes that failed."}, by),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "controller_runtime_reconcile_panics_total",
			Help: "Transforms that panicked (recovered)."}, by),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "controller_runtime_reconcile_time_seconds",
			Help: "Time a reconcile takes, transform included, write excluded.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, by),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workqueue_adds_total",
			Help: "Primaries added to the work queue."}, []string{"name"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workqueue_retries_total",
			Help: "Primaries queued again after a failure, with backoff."}, []string{"name"}),
		depth: prometheus.NewGauge(prometheus.GaugeOpts{Name: "workqueue_depth",
			Help: "Primaries queued or waiting for their backoff."}),
		longest: prometheus.NewGauge(prometheus.GaugeOpts{Name: "workqueue_longest_running_processor_seconds",
			Help: "How long the longest-running reconcile has run."}),
		written: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cup_reconciler_outputs_written_total",
			Help: "Outputs written (created or changed) by reconcilers."}, by),
		deleted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cup_reconciler_outputs_deleted_total",
			Help: "Outputs deleted by reconcilers (no longer produced, or their primary gone)."}, by),
		paused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cup_reconciler_paused_total",
			Help: "Times a reconciler was paused for writing more commits a minute than allowed."}, by),
		changeSets: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cup_reconciler_change_sets",
			Help: "Change sets (proposals) whose changes the reconcilers follow."}),
	}
	if reg != nil {
		reg.MustRegister(m.total, m.errors, m.panics, m.duration, m.adds, m.retries, m.depth, m.longest, m.written, m.deleted, m.paused, m.changeSets)
	}
	return m
}
