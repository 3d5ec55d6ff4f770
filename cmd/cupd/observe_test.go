//go:build unix

package main

import (
	"bufio"
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it keeps the spans posted
// to /v1/traces.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string // service.name of each batch's resource
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusNotFound)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	var req collectortrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				o.services = append(o.services, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			o.spans = append(o.spans, ss.GetSpans()...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func spanAttrs(s *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, kv := range s.GetAttributes() {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			m[kv.GetKey()] = v.GetStringValue()
		default:
			m[kv.GetKey()] = strconv.FormatInt(v.GetIntValue(), 10)
		}
	}
	return m
}

// sample is one line of Prometheus's text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// scrape reads url's /metrics.
func scrape(t *testing.T, url string) []sample {
	t.Helper()
	res, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", res.Status)
	}
	var out []sample
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := sampleLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		s := sample{name: m[1], labels: map[string]string{}, value: v}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			s.labels[p[1]] = p[2]
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// value sums the samples named with the labels given (others may differ);
// -1 when none matches.
func value(samples []sample, name string, labels map[string]string) float64 {
	sum, found := 0.0, false
next:
	for _, s := range samples {
		if s.name != name {
			continue
		}
		for k, v := range labels {
			if s.labels[k] != v {
				continue next
			}
		}
		sum, found = sum+s.value, true
	}
	if !found {
		return -1
	}
	return sum
}

// TestObservedCalls runs cupd as a process, exporting traces to a
// receiver in the test as the OTEL_* variables ask, makes a REST get (of a
// resource a WASM controller serves), a Connect list and a REST put, and
// checks the series /metrics shows and the spans that arrive.
func TestObservedCalls(t *testing.T) {
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	t.Cleanup(collector.Close)
	p := startProcess(t, buildCupd(t), []string{
		"OTEL_TRACES_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_SERVICE_NAME=",
	}, "serve", "--address", "127.0.0.1:0")

	const segment = "/apis/flags.cup.dev/v1alpha1/namespaces/default/segments/beta-testers"
	if code, body := get(t, p.url+segment); code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", segment, code, body)
	}
	client := cupv1alpha1connect.NewResourceServiceClient(http.DefaultClient, p.url)
	if _, err := client.List(t.Context(), connect.NewRequest(&cupv1alpha1.ListRequest{
		Group: "flags.cup.dev", Version: "v1alpha1", Plural: "segments", Namespace: "default",
	})); err != nil {
		t.Fatalf("List: %v", err)
	}
	const flag = "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/observed"
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, p.url+flag,
		strings.NewReader(`{"spec": {"description": "Written to be watched.", "enabled": true, "rollout": 10}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("PUT %s: %s %s", flag, res.Status, b)
	}

	t.Run("metrics", func(t *testing.T) {
		samples := scrape(t, p.url)
		const (
			get  = "/cup.v1alpha1.ResourceService/Get"
			list = "/cup.v1alpha1.ResourceService/List"
			put  = "/cup.v1alpha1.ResourceService/Put"
		)
		for _, tt := range []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{"cup_server_handled_total", map[string]string{"procedure": get, "form": "rest", "code": "ok"}, 1},
			{"cup_server_handled_total", map[string]string{"procedure": list, "form": "connect", "code": "ok"}, 1},
			{"cup_server_handled_total", map[string]string{"procedure": put, "form": "rest", "code": "ok"}, 1},
			{"cup_server_started_total", map[string]string{"procedure": get, "form": "rest"}, 1},
			{"cup_server_handling_seconds_count", map[string]string{"procedure": list, "form": "connect"}, 1},
			{"cup_server_calls_in_flight", nil, 0},
			{"cup_server_writes_total", map[string]string{"outcome": "committed"}, 1},
			{"cup_server_write_queue_seconds_count", nil, 1},
			{"cup_wasm_instances_alive", nil, 0},
		} {
			if got := value(samples, tt.name, tt.labels); got != tt.want {
				t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
			}
		}
		for _, tt := range []struct {
			name   string
			labels map[string]string
		}{
			{"cup_server_memo_misses_total", nil},
			{"cup_server_memo_bytes", nil},
			{"cup_wasm_calls_total", map[string]string{"controller": "segments", "verb": "get", "outcome": "ok"}},
			{"cup_wasm_call_duration_seconds_count", map[string]string{"controller": "segments", "verb": "list"}},
		} {
			if got := value(samples, tt.name, tt.labels); got < 1 {
				t.Errorf("%s%v = %v, want at least 1", tt.name, tt.labels, got)
			}
		}
		for _, s := range samples {
			for k, v := range s.labels {
				if strings.Contains(v, "beta-testers") || strings.Contains(v, "observed") {
					t.Errorf("%s has the label %s=%q, a request's path: series must stay bounded", s.name, k, v)
				}
			}
		}
	})

	t.Run("traces", func(t *testing.T) {
		p.stop(t) // flushes the spans not yet sent
		recv.mu.Lock()
		defer recv.mu.Unlock()
		for _, s := range recv.services {
			if s != "cupd" {
				t.Errorf("service.name %q, want cupd", s)
			}
		}
		byName := map[string][]*tracepb.Span{}
		for _, s := range recv.spans {
			byName[s.GetName()] = append(byName[s.GetName()], s)
		}
		one := func(name string) *tracepb.Span {
			t.Helper()
			if len(byName[name]) != 1 {
				names := []string{}
				for n := range byName {
					names = append(names, n)
				}
				t.Fatalf("%d spans named %q, want 1; got spans %q", len(byName[name]), name, names)
			}
			return byName[name][0]
		}
		getSpan := one("cup.v1alpha1.ResourceService/Get")
		if getSpan.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
			t.Errorf("get span kind %v, want server", getSpan.GetKind())
		}
		if a := spanAttrs(getSpan); a["cup.form"] != "rest" || a["rpc.method"] != "Get" || a["http.route"] == "" {
			t.Errorf("get span attributes %v, want form rest, method Get and a route", a)
		}
		if a := spanAttrs(one("cup.v1alpha1.ResourceService/List")); a["cup.form"] != "connect" || a["rpc.system"] != "connect_rpc" {
			t.Errorf("list span attributes %v, want form connect", a)
		}
		if a := spanAttrs(one("cup.v1alpha1.ResourceService/Put")); a["cup.form"] != "rest" {
			t.Errorf("put span attributes %v, want form rest", a)
		}
		ctrl := one("controller get")
		if a := spanAttrs(ctrl); a["cup.controller"] != "segments" || a["cup.kind"] != "Segment" || a["cup.wasm.outcome"] != "ok" {
			t.Errorf("controller span attributes %v, want controller segments, kind Segment, outcome ok", a)
		}
		if hex.EncodeToString(ctrl.GetParentSpanId()) != hex.EncodeToString(getSpan.GetSpanId()) ||
			hex.EncodeToString(ctrl.GetTraceId()) != hex.EncodeToString(getSpan.GetTraceId()) {
			t.Errorf("the controller span is not a child of the get span")
		}
	})
}
