package scm_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/cup-dev/cup/scm"
)

func TestCallsAreTraced(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = io.WriteString(w, "{}")
	})
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	m, err := scm.NewMetrics(nil, "github")
	if err != nil {
		t.Fatal(err)
	}
	c := f.client(scm.HTTPOptions{Metrics: m, TracerProvider: tp, Token: scm.StaticToken("s3cret")})
	get(t, c, f.URL+"/repos/acme/config/pulls?token=s3cret")

	spans := exp.GetSpans().Snapshots()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want one for the call, its retry included", len(spans))
	}
	s := spans[0]
	if s.Name() != "scm GET" || s.SpanKind() != trace.SpanKindClient {
		t.Errorf("span %q of kind %v, want a client span scm GET", s.Name(), s.SpanKind())
	}
	want := map[attribute.Key]string{
		"http.request.method": "GET", "server.address": "127.0.0.1",
		"cup.scm.provider": "github", "http.response.status_code": "200",
	}
	got := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		got[kv.Key] = kv.Value.Emit()
		if strings.Contains(kv.Value.Emit(), "s3cret") {
			t.Errorf("attribute %s holds the secret", kv.Key)
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if s.Status().Code == codes.Error {
		t.Errorf("status %v, want unset", s.Status())
	}
	if ev := s.Events(); len(ev) != 1 || ev[0].Name != "rate-limit wait" {
		t.Errorf("events %v, want one rate-limit wait", ev)
	}
}
