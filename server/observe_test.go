package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/server"
)

// series returns the value of the counter, gauge or histogram (its count)
// named, with the labels given (others may differ), summed over the
// matching series; -1 when none matches.
func series(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum, found := 0.0, false
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metrics
				}
			}
			found = true
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	if !found {
		return -1
	}
	return sum
}

// attrs are a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	out := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value.Emit()
	}
	return out
}

func newObservedFixture(t *testing.T) (*callsFixture, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	f := newCallsFixture(t, server.WithTracerProvider(tp))
	close(f.ctrl.release)
	return f, exp
}

func TestCallsAreCountedAndTraced(t *testing.T) {
	t.Parallel()
	const (
		get  = "/cup.v1alpha1.ResourceService/Get"
		list = "/cup.v1alpha1.ResourceService/List"
		put  = "/cup.v1alpha1.ResourceService/Put"
	)
	tests := []struct {
		name      string
		call      func(t *testing.T, f *callsFixture)
		procedure string
		form      string
		code      string
	}{
		{
			name: "REST get of a missing resource",
			call: func(t *testing.T, f *callsFixture) {
				if code, body := f.rest(http.MethodGet, "/apis/test.cup.dev/v1/namespaces/default/widgets/a", ""); code != http.StatusNotFound {
					t.Fatalf("GET: %d %s", code, body)
				}
			},
			procedure: get, form: "rest", code: "not_found",
		},
		{
			name: "REST put",
			call: func(t *testing.T, f *callsFixture) {
				if code, body := f.rest(http.MethodPut, "/apis/test.cup.dev/v1/namespaces/default/widgets/a",
					`{"apiVersion":"test.cup.dev/v1","kind":"Widget","metadata":{"namespace":"default","name":"a"},"spec":{"x":1}}`); code != http.StatusNoContent {
					t.Fatalf("PUT: %d %s", code, body)
				}
			},
			procedure: put, form: "rest", code: "ok",
		},
		{
			name: "REST path no route serves",
			call: func(t *testing.T, f *callsFixture) {
				if code, body := f.rest(http.MethodGet, "/apis/nothing/here", ""); code != http.StatusNotFound {
					t.Fatalf("GET: %d %s", code, body)
				}
			},
			procedure: "/apis/", form: "rest", code: "not_found",
		},
		{
			name: "REST method no route serves",
			call: func(t *testing.T, f *callsFixture) {
				if code, body := f.rest(http.MethodPost, "/apis/test.cup.dev/v1/namespaces/default/widgets/a", ""); code != http.StatusMethodNotAllowed {
					t.Fatalf("POST: %d %s", code, body)
				}
			},
			procedure: "/apis/", form: "rest", code: "unimplemented",
		},
		{
			name: "REST OpenAPI document",
			call: func(t *testing.T, f *callsFixture) {
				if code, body := f.rest(http.MethodGet, "/openapi/v3/apis/test.cup.dev/v1", ""); code != http.StatusOK {
					t.Fatalf("GET: %d %s", code, body)
				}
			},
			procedure: "GET /openapi/v3/apis/{group}/{version}", form: "rest", code: "ok",
		},
		{
			name: "REST OpenAPI document of an unknown group",
			call: func(t *testing.T, f *callsFixture) {
				if code, body := f.rest(http.MethodGet, "/openapi/v3/apis/nope.cup.dev/v1", ""); code != http.StatusNotFound {
					t.Fatalf("GET: %d %s", code, body)
				}
			},
			procedure: "GET /openapi/v3/apis/{group}/{version}", form: "rest", code: "not_found",
		},
		{
			name: "Connect list",
			call: func(t *testing.T, f *callsFixture) {
				_, err := f.client().List(t.Context(), connect.NewRequest(&cupv1alpha1.ListRequest{
					Group: "test.cup.dev", Version: "v1", Plural: "widgets", Namespace: "default",
				}))
				if err != nil {
					t.Fatal(err)
				}
			},
			procedure: list, form: "connect", code: "ok",
		},
		{
			name: "Connect get of an unknown type",
			call: func(t *testing.T, f *callsFixture) {
				_, err := f.client().Get(t.Context(), connect.NewRequest(&cupv1alpha1.GetRequest{
					Group: "test.cup.dev", Version: "v1", Plural: "gadgets", Namespace: "default", Name: "a",
				}))
				if connect.CodeOf(err) != connect.CodeNotFound {
					t.Fatalf("got %v, want NotFound", err)
				}
			},
			procedure: get, form: "connect", code: "not_found",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, exp := newObservedFixture(t)
			tt.call(t, f)
			labels := map[string]string{"procedure": tt.procedure, "form": tt.form}
			if got := series(t, f.reg, "cup_server_started_total", labels); got != 1 {
				t.Errorf("cup_server_started_total%v = %v, want 1", labels, got)
			}
			if got := series(t, f.reg, "cup_server_handling_seconds", labels); got != 1 {
				t.Errorf("cup_server_handling_seconds%v count = %v, want 1", labels, got)
			}
			labels["code"] = tt.code
			if got := series(t, f.reg, "cup_server_handled_total", labels); got != 1 {
				t.Errorf("cup_server_handled_total%v = %v, want 1", labels, got)
			}
			if got := series(t, f.reg, "cup_server_handled_total", nil); got != 1 {
				t.Errorf("%v calls counted, want 1", got)
			}
			if got := series(t, f.reg, "cup_server_calls_in_flight", nil); got != 0 {
				t.Errorf("cup_server_calls_in_flight = %v after the call, want 0", got)
			}
			spans := exp.GetSpans().Snapshots()
			if len(spans) != 1 {
				t.Fatalf("%d spans, want 1: %v", len(spans), spans)
			}
			s := spans[0]
			if want := strings.TrimPrefix(tt.procedure, "/"); s.Name() != want {
				t.Errorf("span %q, want %q", s.Name(), want)
			}
			if s.SpanKind() != trace.SpanKindServer {
				t.Errorf("span kind %v, want server", s.SpanKind())
			}
			a := attrs(s)
			if a["cup.form"] != tt.form {
				t.Errorf("cup.form = %q, want %q", a["cup.form"], tt.form)
			}
			if tt.code != "ok" && a["rpc.connect_rpc.error_code"] != tt.code {
				t.Errorf("rpc.connect_rpc.error_code = %q, want %q", a["rpc.connect_rpc.error_code"], tt.code)
			}
		})
	}
}

func TestCallSpanContinuesTheCallersTrace(t *testing.T) {
	t.Parallel()
	f, exp := newObservedFixture(t)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req := httptest.NewRequest(http.MethodGet, "/apis/test.cup.dev/v1/namespaces/default/widgets", nil)
	req.Header.Set("Traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET: %d %s", rec.Code, rec.Body)
	}
	spans := exp.GetSpans().Snapshots()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if got := s.SpanContext().TraceID().String(); got != traceID {
		t.Errorf("trace %s, want the caller's %s", got, traceID)
	}
	if got := s.Parent().SpanID().String(); got != "00f067aa0ba902b7" {
		t.Errorf("parent span %s, want the caller's", got)
	}
	if a := attrs(s); a["http.route"] != "GET /apis/{group}/{version}/namespaces/{namespace}/{plural}" || a["http.request.method"] != "GET" {
		t.Errorf("attributes %v lack the route and method", a)
	}
	if ev := s.Events(); len(ev) != 1 || ev[0].Name != "controller slot" {
		t.Errorf("events %v, want the wait for a controller slot", ev)
	}
}

func TestMemoAndWritesAreCounted(t *testing.T) {
	t.Parallel()
	f, _ := newObservedFixture(t)
	for range 3 {
		if code, body := f.rest(http.MethodGet, "/apis/test.cup.dev/v1/namespaces/default/widgets", ""); code != http.StatusOK {
			t.Fatalf("GET: %d %s", code, body)
		}
	}
	if got := series(t, f.reg, "cup_server_memo_misses_total", nil); got != 1 {
		t.Errorf("memo misses %v, want 1", got)
	}
	if got := series(t, f.reg, "cup_server_memo_hits_total", nil); got != 2 {
		t.Errorf("memo hits %v, want 2", got)
	}
	if got := series(t, f.reg, "cup_server_memo_bytes", nil); got <= 0 {
		t.Errorf("memo bytes %v, want some", got)
	}
	put := `{"apiVersion":"test.cup.dev/v1","kind":"Widget","metadata":{"namespace":"default","name":"a"},"spec":{}}`
	f.rest(http.MethodPut, "/apis/test.cup.dev/v1/namespaces/default/widgets/a", put)
	f.rest(http.MethodPut, "/apis/test.cup.dev/v1/namespaces/default/widgets/a?resourceVersion=abc123", put)
	if got := series(t, f.reg, "cup_server_writes_total", map[string]string{"outcome": "unchanged"}); got != 1 {
		t.Errorf("unchanged writes %v, want 1", got)
	}
	if got := series(t, f.reg, "cup_server_writes_total", map[string]string{"outcome": "aborted"}); got != 1 {
		t.Errorf("aborted writes %v, want 1", got)
	}
	if got := series(t, f.reg, "cup_server_write_queue_seconds", nil); got != 2 {
		t.Errorf("write queue waits observed %v, want 2", got)
	}
}

func TestCallsAreLabelledWithTheirForm(t *testing.T) {
	t.Parallel()
	f, exp := newObservedFixture(t)
	ts := httptest.NewUnstartedServer(f.handler)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)
	forms := []struct {
		form string
		opts []connect.ClientOption
	}{
		{"connect", nil},
		{"grpc", []connect.ClientOption{connect.WithGRPC()}},
		{"grpc-web", []connect.ClientOption{connect.WithGRPCWeb()}},
	}
	for _, tt := range forms {
		c := cupv1alpha1connect.NewResourceServiceClient(ts.Client(), ts.URL, tt.opts...)
		if _, err := c.List(t.Context(), connect.NewRequest(&cupv1alpha1.ListRequest{
			Group: "test.cup.dev", Version: "v1", Plural: "widgets", Namespace: "default",
		})); err != nil {
			t.Fatalf("%s: %v", tt.form, err)
		}
		labels := map[string]string{"procedure": "/cup.v1alpha1.ResourceService/List", "form": tt.form, "code": "ok"}
		if got := series(t, f.reg, "cup_server_handled_total", labels); got != 1 {
			t.Errorf("cup_server_handled_total%v = %v, want 1", labels, got)
		}
	}
	spans := exp.GetSpans().Snapshots()
	if len(spans) != len(forms) {
		t.Fatalf("%d spans, want %d", len(spans), len(forms))
	}
	for i, s := range spans {
		want := map[string]string{"connect": "connect_rpc", "grpc": "grpc", "grpc-web": "grpc"}[forms[i].form]
		if a := attrs(s); a["cup.form"] != forms[i].form || a["rpc.system"] != want || a["rpc.service"] != "cup.v1alpha1.ResourceService" || a["rpc.method"] != "List" {
			t.Errorf("span %d attributes %v, want form %s, system %s, service and method", i, a, forms[i].form, want)
		}
	}
}

func TestApplyIsObserved(t *testing.T) {
	t.Parallel()
	f, exp := newObservedFixture(t)
	widget := func(name string) *cupv1alpha1.ApplyItem {
		return &cupv1alpha1.ApplyItem{Operation: &cupv1alpha1.ApplyItem_Put{Put: &cupv1alpha1.ApplyPut{
			Group: "test.cup.dev", Version: "v1", Plural: "widgets", Namespace: "default", Name: name,
			Resource: &cupv1alpha1.Resource{SpecJson: `{"x":1}`},
		}}}
	}
	res, err := f.client().Apply(t.Context(), connect.NewRequest(&cupv1alpha1.ApplyRequest{Items: []*cupv1alpha1.ApplyItem{widget("a"), widget("b"), widget("c")}}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Msg.Result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED || len(res.Msg.Items) != 3 {
		t.Fatalf("got %v", res.Msg)
	}
	if got := series(t, f.reg, "cup_server_apply_items", nil); got != 1 {
		t.Errorf("batches observed %v, want 1", got)
	}
	if got := series(t, f.reg, "cup_server_writes_total", map[string]string{"outcome": "unchanged"}); got != 1 {
		t.Errorf("unchanged writes %v, want 1: a batch is one write", got)
	}
	found := false
	for _, s := range exp.GetSpans().Snapshots() {
		if s.Name() == "cup.v1alpha1.ResourceService/Apply" {
			found = true
			if got := attrs(s)["cup.apply.items"]; got != "3" {
				t.Errorf("span attribute cup.apply.items = %q, want 3", got)
			}
		}
	}
	if !found {
		t.Error("no span for Apply")
	}
	if logs := f.logs.String(); !strings.Contains(logs, "msg=write") || !strings.Contains(logs, "verb=apply") || !strings.Contains(logs, "items=3") {
		t.Errorf("no write line for the batch:\n%s", logs)
	}
}
