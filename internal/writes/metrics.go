package writes

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cup-dev/cup/internal/promreg"
)

// metrics are the engine's group-commit metrics; engines that share a
// registry share them:
//   - cup_write_group_commits: commits each compare-and-swap (push)
//     published;
//   - cup_write_queue_seconds: how long an update waited in its branch's
//     queue before its group was applied;
//   - cup_write_group_reapplied_total: groups applied again because the
//     branch moved (a concurrent writer, another replica).
type metrics struct {
	commits   prometheus.Histogram
	queued    prometheus.Histogram
	reapplied prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		commits: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cup_write_group_commits",
			Help:    "Commits published by one compare-and-swap of a branch (one push): group commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 9),
		}),
		queued: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cup_write_queue_seconds",
			Help:    "Time a write waited for its branch's committer before it was applied.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		reapplied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cup_write_group_reapplied_total",
			Help: "Groups of writes applied again on a new head because the branch moved meanwhile.",
		}),
	}
	if err := errors.Join(promreg.Register(reg, &m.commits), promreg.Register(reg, &m.queued),
		promreg.Register(reg, &m.reapplied)); err != nil {
		return nil, err
	}
	return m, nil
}
