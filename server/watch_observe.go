package server

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// watchMetrics are the watches' metrics (see newObserver).
type watchMetrics struct {
	open           prometheus.Gauge
	closed         *prometheus.CounterVec // reason
	sent           *prometheus.CounterVec // type
	computed       prometheus.Counter
	computedEvents prometheus.Counter
	catchUps       *prometheus.CounterVec // outcome
}

func newWatchMetrics() watchMetrics {
	return watchMetrics{
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cup_server_watches",
			Help: "Watches open now.",
		}),
		closed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_server_watches_closed_total",
			Help: "Watches ended, by reason: client (the client left), slow (it fell behind), shutdown, error.",
		}, []string{"reason"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_server_watch_events_sent_total",
			Help: "Events sent to watchers, by type (added, modified, deleted, bookmark).",
		}, []string{"type"}),
		computed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cup_server_watch_commits_computed_total",
			Help: "Commits (for a type and namespace) whose events were computed; every watcher shares them.",
		}),
		computedEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cup_server_watch_events_computed_total",
			Help: "Events the computed commits held.",
		}),
		catchUps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_server_watch_catch_ups_total",
			Help: "Fetches asked for by watches resuming from a commit this server did not have, by outcome: fetched, failed, skipped (one began less than a second before).",
		}, []string{"outcome"}),
	}
}

func (o *observer) catchUp(outcome string) { o.watch.catchUps.WithLabelValues(outcome).Inc() }

func (o *observer) watchStarted() { o.watch.open.Inc() }
func (o *observer) watchEnded(reason string) {
	o.watch.open.Dec()
	o.watch.closed.WithLabelValues(reason).Inc()
}

func (o *observer) eventSent(t cupv1alpha1.WatchEventType) {
	o.watch.sent.WithLabelValues(strings.ToLower(eventTypeName(t))).Inc()
}

func (o *observer) eventsComputed(n int) {
	o.watch.computed.Inc()
	o.watch.computedEvents.Add(float64(n))
}

// eventTypeName is t as the REST form and the metrics name it, "ADDED".
func eventTypeName(t cupv1alpha1.WatchEventType) string {
	return strings.TrimPrefix(t.String(), "WATCH_EVENT_TYPE_")
}
