package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/server"
)

func TestStartingHandler(t *testing.T) {
	t.Parallel()
	h, err := server.NewStartingHandler(server.WithCORS([]string{"https://app.example"}))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)

	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/healthz", 200, "ok"},
		{"/readyz", 503, "starting"},
		{"/version", 200, `"goVersion"`},
		{"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags", 503, `"code":"unavailable"`},
		{"/", 503, `"code":"unavailable"`},
	} {
		res, err := http.Get(ts.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.code || !strings.Contains(string(b), tc.want) {
			t.Errorf("GET %s = %d %q, want %d and %q", tc.path, res.StatusCode, b, tc.code, tc.want)
		}
	}

	st, err := grpchealth.NewClient(ts.Client(), ts.URL).Check(t.Context(), &grpchealth.CheckRequest{})
	if err != nil || st.Status != grpchealth.StatusNotServing {
		t.Errorf("health = %v, %v; want not serving", st, err)
	}
	_, err = cupv1alpha1connect.NewResourceServiceClient(ts.Client(), ts.URL).List(t.Context(), connect.NewRequest(&cupv1alpha1.ListRequest{}))
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Errorf("List while starting: %v, want Unavailable", err)
	}

	req, _ := http.NewRequest("OPTIONS", ts.URL+"/cup.v1alpha1.ResourceService/List", nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "connect-protocol-version,content-type")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("preflight while starting: %v", res.Header)
	}
}

func TestCORSOrigins(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		origins []string
		ok      bool
	}{
		{[]string{"*"}, true},
		{[]string{"https://app.example", "http://localhost:5173"}, true},
		{[]string{"https://*.example.com"}, true},
		{[]string{"https://app.example/"}, true},
		{[]string{"app.example"}, false},
		{[]string{"https://app.example/path"}, false},
		{[]string{"https://*.*.example.com"}, false},
		{[]string{"https://user@app.example"}, false},
	} {
		_, err := server.NewStartingHandler(server.WithCORS(tc.origins))
		if (err == nil) != tc.ok {
			t.Errorf("WithCORS(%q): %v, want ok %v", tc.origins, err, tc.ok)
		}
	}
}

func TestVersionJSON(t *testing.T) {
	t.Parallel()
	h, err := server.NewStartingHandler()
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/version", nil))
	var v map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || v["version"] == "" || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("GET /version = %v %s", err, rec.Body)
	}
}

// TestStartingProgress: /readyz and the calls refused while starting say
// the step start-up is at.
func TestStartingProgress(t *testing.T) {
	t.Parallel()
	step := "loading the configuration"
	h, err := server.NewStartingHandler(server.WithStartingProgress(func() string { return step }))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	const want = "cupd is starting: loading the configuration; try again shortly"
	for _, path := range []string{"/readyz", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags"} {
		res, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), want) {
			t.Errorf("GET %s = %d %q, want 503 saying %q", path, res.StatusCode, b, want)
		}
	}
	_, err = cupv1alpha1connect.NewResourceServiceClient(ts.Client(), ts.URL).List(t.Context(), connect.NewRequest(&cupv1alpha1.ListRequest{}))
	if connect.CodeOf(err) != connect.CodeUnavailable || !strings.Contains(err.Error(), want) {
		t.Errorf("List while starting: %v, want Unavailable saying %q", err, want)
	}
}
