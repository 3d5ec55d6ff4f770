package scm_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cup-dev/cup/scm"
)

func TestMetrics(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		h := w.Header()
		budget := func(limit, remaining, resource string) {
			h.Set("X-RateLimit-Limit", limit)
			h.Set("X-RateLimit-Remaining", remaining)
			h.Set("X-RateLimit-Reset", "2000000000")
			h.Set("X-RateLimit-Resource", resource)
		}
		switch n {
		case 1:
			budget("5000", "4999", "core")
		case 2:
			h.Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		case 3:
			budget("5000", "4997", "core")
		case 4:
			// Search's budget is not the one exported.
			budget("30", "29", "search")
		}
		_, _ = io.WriteString(w, "{}")
	})
	reg := prometheus.NewPedanticRegistry()
	m, err := scm.NewMetrics(reg, "github")
	if err != nil {
		t.Fatal(err)
	}
	// A second provider shares the registry.
	if _, err := scm.NewMetrics(reg, "gitlab"); err != nil {
		t.Fatalf("a second provider: %v", err)
	}
	c := f.client(scm.HTTPOptions{Metrics: m})
	get(t, c, f.URL+"/repos/acme/config/pulls")
	get(t, c, f.URL+"/repos/acme/config/pulls")
	get(t, c, f.URL+"/search/issues")

	const want = `
# HELP cup_scm_rate_limit_limit Size of the SCM's rate-limit budget, as the latest answer reported.
# TYPE cup_scm_rate_limit_limit gauge
cup_scm_rate_limit_limit{provider="github"} 5000
# HELP cup_scm_rate_limit_remaining Requests left in the SCM's rate-limit budget, as the latest answer reported.
# TYPE cup_scm_rate_limit_remaining gauge
cup_scm_rate_limit_remaining{provider="github"} 4997
# HELP cup_scm_rate_limit_waits_total Waits for the SCM's rate limit.
# TYPE cup_scm_rate_limit_waits_total counter
cup_scm_rate_limit_waits_total{provider="github"} 1
# HELP cup_scm_requests_total Requests sent to the SCM, retries included, by HTTP status code ("error" without an answer).
# TYPE cup_scm_requests_total counter
cup_scm_requests_total{code="200",provider="github"} 3
cup_scm_requests_total{code="429",provider="github"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "cup_scm_rate_limit_limit",
		"cup_scm_rate_limit_remaining", "cup_scm_rate_limit_waits_total", "cup_scm_requests_total"); err != nil {
		t.Error(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var observed uint64
	for _, mf := range families {
		if mf.GetName() == "cup_scm_request_duration_seconds" {
			for _, m := range mf.GetMetric() {
				observed += m.GetHistogram().GetSampleCount()
			}
		}
	}
	if observed != 4 {
		t.Errorf("the duration histogram has %d observations, want 4", observed)
	}
}

func TestMetricsWithoutAnswers(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m, err := scm.NewMetrics(reg, "gitea")
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {})
	f.Close() // Calls fail to connect.
	c := scm.NewHTTPClient(scm.HTTPOptions{Metrics: m, Transport: f.Client().Transport})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.URL+"/pulls", nil)
	if res, err := c.Do(req); err == nil {
		res.Body.Close()
		t.Fatal("the call succeeded")
	}
	// No budget has been reported: the gauges stay absent rather than 0.
	const want = `
# HELP cup_scm_requests_total Requests sent to the SCM, retries included, by HTTP status code ("error" without an answer).
# TYPE cup_scm_requests_total counter
cup_scm_requests_total{code="error",provider="gitea"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "cup_scm_requests_total",
		"cup_scm_rate_limit_remaining", "cup_scm_rate_limit_limit"); err != nil {
		t.Error(err)
	}
}

func TestNewMetricsErrors(t *testing.T) {
	t.Parallel()
	if _, err := scm.NewMetrics(prometheus.NewRegistry(), ""); err == nil {
		t.Error("no error without a provider name")
	}
	// A different metric of the same name is in the way.
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "cup_scm_rate_limit_remaining", Help: "other"}))
	if _, err := scm.NewMetrics(reg, "github"); err == nil {
		t.Error("no error registering over a conflicting metric")
	}
	// A nil registerer registers nothing and works.
	if m, err := scm.NewMetrics(nil, "github"); err != nil || m == nil {
		t.Errorf("nil registerer: got %v, %v", m, err)
	}
}
