package git_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/git"
)

// observed is a registry and an in-memory span exporter for a source.
type observed struct {
	reg   *prometheus.Registry
	spans *tracetest.InMemoryExporter
	opts  []git.Option
}

func newObserved(t *testing.T) *observed {
	t.Helper()
	o := &observed{reg: prometheus.NewRegistry(), spans: tracetest.NewInMemoryExporter()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(o.spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	o.opts = []git.Option{git.WithMetrics(o.reg), git.WithTracerProvider(tp)}
	return o
}

// count returns the value of counter name with label outcome.
func (o *observed) count(t *testing.T, name, outcome string) float64 {
	t.Helper()
	m := o.family(t, name)
	for _, s := range m.GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == "outcome" && l.GetValue() == outcome {
				return s.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("%s{outcome=%q} is not exported", name, outcome)
	return 0
}

// observations returns how many observations histogram name holds.
func (o *observed) observations(t *testing.T, name string) uint64 {
	t.Helper()
	return o.family(t, name).GetMetric()[0].GetHistogram().GetSampleCount()
}

func (o *observed) family(t *testing.T, name string) *dto.MetricFamily {
	t.Helper()
	fams, err := o.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f
		}
	}
	t.Fatalf("metric %s is not registered", name)
	return nil
}

// outcomes lists the outcome of each span named name, in order.
func (o *observed) outcomes(name string) []string {
	var out []string
	for _, s := range o.spans.GetSpans() {
		if s.Name != name {
			continue
		}
		for _, a := range s.Attributes {
			if a.Key == "cup.git.outcome" {
				out = append(out, a.Value.AsString())
			}
		}
	}
	return out
}

func TestFetchAndPushAreObserved(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	o := newObserved(t)
	src := r.start(t, o.opts...)
	if err := src.Fetch(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Another writer moves main: the first push loses, the update
	// fetches and pushes again.
	if _, err := gitrepo.Commit(r.dir, "main", map[string][]byte{"config/other.yaml": []byte("o: 1\n")}, "another writer\n"); err != nil {
		t.Fatal(err)
	}
	res, err := src.Update(t.Context(), &source.UpdateRequest{
		Message: "add b",
		Apply: func(_ context.Context, _ *source.Snapshot, w source.Writer) error {
			return w.WriteFile("config/b.yaml", []byte("b: 1\n"), 0o644)
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	if got, want := o.outcomes("git.fetch"), []string{"success", "unchanged", "success"}; !slices.Equal(got, want) {
		t.Errorf("fetch spans' outcomes = %q, want %q", got, want)
	}
	if got, want := o.outcomes("git.push"), []string{"conflict", "success"}; !slices.Equal(got, want) {
		t.Errorf("push spans' outcomes = %q, want %q", got, want)
	}
	for _, s := range o.spans.GetSpans() {
		if s.Status.Code == codes.Error {
			t.Errorf("span %s has status Error (%s); a lost race is not an error", s.Name, s.Status.Description)
		}
		if !slices.Contains(s.Attributes, attribute.String("cup.git.remote", r.url)) {
			t.Errorf("span %s lacks cup.git.remote=%s: %v", s.Name, r.url, s.Attributes)
		}
		if s.Name == "git.push" && !slices.Contains(s.Attributes, attribute.String("cup.git.branch", "main")) {
			t.Errorf("push span lacks cup.git.branch=main: %v", s.Attributes)
		}
	}
	// The fetch that settles the lost race runs inside the push's span.
	spans := o.spans.GetSpans()
	i := slices.IndexFunc(spans, func(s tracetest.SpanStub) bool { return s.Name == "git.push" })
	nested := i >= 0 && slices.ContainsFunc(spans, func(s tracetest.SpanStub) bool {
		return s.Name == "git.fetch" && s.Parent.SpanID() == spans[i].SpanContext.SpanID()
	})
	if !nested {
		t.Error("no fetch span is a child of the lost push's span")
	}

	for _, c := range []struct {
		name, outcome string
		want          float64
	}{
		{"cup_git_fetches_total", "success", 2},
		{"cup_git_fetches_total", "unchanged", 1},
		{"cup_git_fetches_total", "error", 0},
		{"cup_git_pushes_total", "success", 1},
		{"cup_git_pushes_total", "conflict", 1},
		{"cup_git_pushes_total", "rejected", 0},
	} {
		if got := o.count(t, c.name, c.outcome); got != c.want {
			t.Errorf("%s{outcome=%q} = %v, want %v", c.name, c.outcome, got, c.want)
		}
	}
	if got := o.observations(t, "cup_git_fetch_duration_seconds"); got != 3 {
		t.Errorf("cup_git_fetch_duration_seconds holds %d observations, want 3", got)
	}
	if got := o.observations(t, "cup_git_push_duration_seconds"); got != 2 {
		t.Errorf("cup_git_push_duration_seconds holds %d observations, want 2", got)
	}
	if res.Commit != r.branchHead(t, "main") {
		t.Errorf("main is at %s, want the update's commit %s", r.branchHead(t, "main"), res.Commit)
	}
}

func TestFailedFetchIsObserved(t *testing.T) {
	t.Parallel()
	o := newObserved(t)
	src, err := git.Open("http://127.0.0.1:1/nothing.git", append(o.opts, git.WithLogger(testLogger(t)), git.WithFetchInterval(0))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	if err := src.Start(t.Context()); !errors.Is(err, source.ErrUnavailable) {
		t.Fatalf("Start = %v, want an error wrapping source.ErrUnavailable", err)
	}
	if got := o.count(t, "cup_git_fetches_total", "error"); got != 1 {
		t.Errorf("cup_git_fetches_total{outcome=error} = %v, want 1", got)
	}
	spans := o.spans.GetSpans()
	if len(spans) != 1 || spans[0].Status.Code != codes.Error || len(spans[0].Events) == 0 {
		t.Fatalf("spans = %+v, want one git.fetch span with status Error and the error recorded", spans)
	}
}

func TestMetricsSharedBetweenSources(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	for range 2 {
		if _, err := git.Open("https://example.com/x.git", git.WithMetrics(reg)); err != nil {
			t.Fatalf("Open with a registry another source registered with: %v", err)
		}
	}
}
