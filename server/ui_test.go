package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/server"
)

// fakeUI answers every request with 200 and the path, or 404 for paths
// ending in /missing; built is what Built reports.
type fakeUI struct{ built bool }

func (u fakeUI) Built() bool { return u.built }

func (u fakeUI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/missing") {
		http.NotFound(w, r)
		return
	}
	_, _ = io.WriteString(w, "ui: "+r.URL.Path)
}

// firstAnswer sends method url as a browser does and returns the answer
// without following a redirect.
func firstAnswer(t *testing.T, method, url string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", browserAccept)
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// uiLink returns the index's link to the UI, read as JSON with token.
func uiLink(t *testing.T, url, token string) string {
	t.Helper()
	r := servertest.Do(t, "GET", url+"/", "", "Accept", "application/json", "Authorization", "Bearer "+token)
	var ix struct{ Links []struct{ Rel, Href string } }
	if err := json.Unmarshal([]byte(r.Body), &ix); r.Status != 200 || err != nil {
		t.Fatalf("GET / as JSON = %d %v\n%s", r.Status, err, r.Body)
	}
	for _, l := range ix.Links {
		if l.Rel == "ui" {
			return l.Href
		}
	}
	return ""
}

// TestUI: a built UI is served outside authentication, GET / sends
// browsers to it and JSON clients still get the index (behind
// authentication), and its answers are counted by status class.
func TestUI(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	f := newFixture(t, servertest.WithServerOptions(
		server.WithAuthorization(userAuthn{}, flagsOnly{}), server.WithMetrics(reg), server.WithUI(fakeUI{built: true})))

	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/ui/", "ui: /ui/"},
		{"GET", "/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/new-checkout", "ui: /ui/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/new-checkout"},
		{"GET", "/ui/assets/index.js", "ui: /ui/assets/index.js"},
		{"POST", "/ui/x", "ui: /ui/x"}, // every method is the UI's to answer
	} {
		if r := servertest.Do(t, tc.method, f.url+tc.path, ""); r.Status != 200 || r.Body != tc.want {
			t.Errorf("%s %s without credentials = %d %q, want the UI's answer", tc.method, tc.path, r.Status, r.Body)
		}
	}
	if r := servertest.Do(t, "GET", f.url+"/ui/missing", ""); r.Status != 404 {
		t.Errorf("GET /ui/missing = %d, want the UI's 404", r.Status)
	}
	if res := firstAnswer(t, "GET", f.url+"/ui"); res.StatusCode/100 != 3 || res.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui = %d to %q, want a redirect to /ui/", res.StatusCode, res.Header.Get("Location"))
	}

	for _, method := range []string{"GET", "HEAD"} {
		res := firstAnswer(t, method, f.url+"/")
		if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/ui/" || res.Header.Get("Vary") != "Accept" {
			t.Errorf("%s / as a browser, without credentials = %d to %q (Vary %q), want 302 to /ui/", method, res.StatusCode, res.Header.Get("Location"), res.Header.Get("Vary"))
		}
	}
	for _, accept := range []string{"application/json", "*/*", ""} {
		if r := servertest.Do(t, "GET", f.url+"/", "", "Accept", accept); r.Status != http.StatusUnauthorized {
			t.Errorf("GET / with Accept %q without credentials = %d %s, want 401", accept, r.Status, r.Body)
		}
	}
	if got := uiLink(t, f.url, "admin"); got != "/ui/" {
		t.Errorf("the index links to the UI at %q, want /ui/", got)
	}
	if r := servertest.Do(t, "GET", f.url+"/apis", "", "Accept", browserAccept); r.Status != http.StatusUnauthorized {
		t.Errorf("GET /apis without credentials = %d %s: only the UI is outside authentication", r.Status, r.Body)
	}

	// The UI answered three GETs and a POST with 200, and one GET with 404
	// (the mux, not the UI, redirected /ui).
	want := `
# HELP cup_ui_requests_total Answers of the web UI at /ui/, by status class ("2xx", "3xx", "4xx", "5xx").
# TYPE cup_ui_requests_total counter
cup_ui_requests_total{code="2xx"} 4
cup_ui_requests_total{code="3xx"} 0
cup_ui_requests_total{code="4xx"} 1
cup_ui_requests_total{code="5xx"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "cup_ui_requests_total"); err != nil {
		t.Error(err)
	}
}

// TestUIIndex: browsers asking for / get the HTML index, not a redirect,
// when the UI is not built (it still answers at /ui/, to say how to build
// it) or there is none (then /ui/ is a path like any other); the index
// does not link to a UI then.
func TestUIIndex(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []server.Option
		ui   int // the status of GET /ui/
	}{
		{"not built", []server.Option{server.WithUI(fakeUI{built: false})}, 200},
		{"none", nil, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, servertest.WithServerOptions(tc.opts...))
			if r := servertest.Do(t, "GET", f.url+"/ui/", ""); r.Status != tc.ui {
				t.Errorf("GET /ui/ = %d %q, want %d", r.Status, r.Body, tc.ui)
			}
			if res := firstAnswer(t, "GET", f.url+"/"); res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/html; charset=utf-8" {
				t.Errorf("GET / as a browser = %d %v, want the HTML index", res.StatusCode, res.Header)
			}
			if got := uiLink(t, f.url, ""); got != "" {
				t.Errorf("the index links to a UI: %q", got)
			}
		})
	}
}

// TestStartingHandlerServesUI: while the server starts, the UI is served
// already; the rest answers 503.
func TestStartingHandlerServesUI(t *testing.T) {
	t.Parallel()
	h, err := server.NewStartingHandler(server.WithUI(fakeUI{built: true}))
	if err != nil {
		t.Fatal(err)
	}
	url := servertest.Serve(t, h)
	if r := servertest.Do(t, "GET", url+"/ui/apis", ""); r.Status != 200 || r.Body != "ui: /ui/apis" {
		t.Errorf("GET /ui/apis while starting = %d %q, want the UI's answer", r.Status, r.Body)
	}
	if res := firstAnswer(t, "GET", url+"/"); res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET / while starting = %d, want 503", res.StatusCode)
	}
}
