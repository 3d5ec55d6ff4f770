package benchrepo

import (
	"slices"
	"testing"
	"time"
)

// ReportPercentiles adds p50 and p90 of durs to the benchmark's metrics.
func ReportPercentiles(b *testing.B, durs []time.Duration) {
	if len(durs) == 0 {
		return
	}
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(durs[len(durs)*9/10].Microseconds()), "p90-µs")
}
