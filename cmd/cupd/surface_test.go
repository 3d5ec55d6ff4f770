package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/internal/gittest"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/internal/testlog"
	"github.com/cup-dev/cup/web"
)

// h2cClient speaks HTTP/2 without TLS, as gRPC clients do.
func h2cClient() *http.Client {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: p}, Timeout: 30 * time.Second}
}

// healthOf asks cupd at url for the health of service over gRPC.
func healthOf(t *testing.T, url, service string) (grpchealth.Status, error) {
	t.Helper()
	res, err := grpchealth.NewClient(h2cClient(), url, connect.WithGRPC()).Check(t.Context(), &grpchealth.CheckRequest{Service: service})
	if err != nil {
		return 0, err
	}
	return res.Status, nil
}

// origin is the web page's origin in the CORS tests.
const origin = "http://app.example:3000"

// TestSurface checks, against one running cupd, what it shows of itself:
// grpc.health.v1, GET / in both forms, GET /version and `cupd --version`,
// and CORS for a browser on another origin.
func TestSurface(t *testing.T) {
	t.Parallel()
	url, _, _ := start(t, "--address", "127.0.0.1:0", "--cors-allowed-origins", "https://other.example,"+origin)
	t.Run("health, index and version", func(t *testing.T) { testHealthIndexVersion(t, url) })
	t.Run("CORS", func(t *testing.T) { testCORS(t, url) })
}

func testHealthIndexVersion(t *testing.T, url string) {
	for _, service := range []string{"", "cup.v1alpha1.ResourceService"} {
		if st, err := healthOf(t, url, service); err != nil || st != grpchealth.StatusServing {
			t.Errorf("health of %q = %v, %v; want serving", service, st, err)
		}
	}
	if _, err := healthOf(t, url, "no.such.Service"); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("health of an unknown service: %v, want NotFound", err)
	}

	code, body := do(t, "GET", url+"/", "", "Accept", "application/json")
	var ix struct {
		Name, Version, Branch string
		Types                 []struct{ Group, Version, Kind, Plural, Path string }
		Links                 []struct{ Rel, Href string }
	}
	if err := json.Unmarshal([]byte(body), &ix); code != 200 || err != nil {
		t.Fatalf("GET / as JSON = %d %v\n%s", code, err, body)
	}
	if ix.Name != "cupd" || ix.Branch != "main" || !slices.ContainsFunc(ix.Types, func(ty struct{ Group, Version, Kind, Plural, Path string }) bool {
		return ty.Kind == "Flag" && ty.Path == "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags"
	}) {
		t.Errorf("GET / as JSON lacks the branch or the Flag type: %+v", ix)
	}
	rels := map[string]string{}
	for _, l := range ix.Links {
		rels[l.Rel] = l.Href
	}
	if rels["apis"] != "/apis" || rels["version"] != "/version" || !strings.HasPrefix(rels["docs"], "https://") {
		t.Errorf("GET / links = %v, want apis, version and docs", rels)
	}
	testBrowserIndex(t, url, rels["ui"])
	if code, body := do(t, "GET", url+"/no/such/page", ""); code != http.StatusNotFound {
		t.Errorf("GET /no/such/page = %d %s, want 404 as before", code, body)
	}

	code, body = do(t, "GET", url+"/version", "")
	var v struct {
		Version   string `json:"version"`
		GoVersion string `json:"goVersion"`
	}
	if err := json.Unmarshal([]byte(body), &v); code != 200 || err != nil || v.Version == "" || v.GoVersion != runtime.Version() {
		t.Errorf("GET /version = %d %v %s, want a version and %s", code, err, body, runtime.Version())
	}

	stdout := &testlog.Buffer{}
	cmd := newRootCommand(stdout, stdout)
	cmd.SetArgs([]string{"--version"})
	if err := cmd.ExecuteContext(t.Context()); err != nil || !strings.HasPrefix(stdout.String(), "cupd version "+v.Version+" ("+runtime.Version()) {
		t.Errorf("cupd --version = %v %q, want the version /version gives", err, stdout)
	}
}

// testBrowserIndex checks what a browser gets at GET / and /ui/: with the
// web UI built into this binary (make ui), a redirect to it, which the
// JSON index links to (uiLink); without, the HTML index, and at /ui/ how to
// build the UI.
func testBrowserIndex(t *testing.T, url, uiLink string) {
	const accept = "text/html,application/xhtml+xml,*/*;q=0.8"
	req, err := http.NewRequestWithContext(t.Context(), "GET", url+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	res, err := http.DefaultTransport.RoundTrip(req) // no redirects followed
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	ui := web.NewHandler(web.Dist()).Built()
	if !ui {
		code, body := do(t, "GET", url+"/", "", "Accept", accept)
		if code != 200 || !strings.Contains(body, "<!doctype html>") || !strings.Contains(body, `href="/apis"`) || !strings.Contains(body, "/namespaces/default/flags") {
			t.Errorf("GET / as HTML without a UI = %d\n%s", code, body)
		}
		if code, body := do(t, "GET", url+"/ui/", ""); code != http.StatusServiceUnavailable || body != web.NotBuiltMessage {
			t.Errorf("GET /ui/ without a UI = %d %q, want 503 and how to build it", code, body)
		}
		if uiLink != "" {
			t.Errorf("the index links to a UI that is not built: %q", uiLink)
		}
		return
	}
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/ui/" {
		t.Errorf("GET / as HTML = %d to %q, want 302 to the UI", res.StatusCode, res.Header.Get("Location"))
	}
	if uiLink != "/ui/" {
		t.Errorf("the index links to the UI at %q, want /ui/", uiLink)
	}
	for _, path := range []string{"/ui/", "/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/flags"} {
		r := servertest.Do(t, "GET", url+path, "", "Accept", accept)
		if r.Status != 200 || !strings.Contains(r.Body, `<div id="app">`) || r.Header.Get("Content-Security-Policy") != web.ContentSecurityPolicy {
			t.Errorf("GET %s = %d %v\n%s\nwant the app with its Content-Security-Policy", path, r.Status, r.Header, r.Body)
		}
	}
}

// testCORS calls cupd as a browser on another origin does: a preflight,
// then the call, for Connect, gRPC-Web and the REST form.
func testCORS(t *testing.T, url string) {
	list := url + "/cup.v1alpha1.ResourceService/List"

	for _, tc := range []struct {
		name, method, url, headers string
	}{
		// Browsers send the header names in lower case, sorted.
		{"connect", "POST", list, "connect-protocol-version,connect-timeout-ms,content-type"},
		{"grpc-web", "POST", list, "content-type,x-grpc-web,x-user-agent"},
		{"rest write", "PUT", url + flagPath, "authorization,content-type,idempotency-key,if-match"},
	} {
		code, hdr := preflight(t, tc.url, origin, tc.method, tc.headers)
		if code/100 != 2 || hdr.Get("Access-Control-Allow-Origin") != origin ||
			!strings.Contains(hdr.Get("Access-Control-Allow-Methods"), tc.method) ||
			!strings.EqualFold(hdr.Get("Access-Control-Allow-Headers"), tc.headers) {
			t.Errorf("%s preflight = %d %v, want the origin, method and headers allowed", tc.name, code, hdr)
		}
	}
	if code, hdr := preflight(t, list, "http://evil.example", "POST", "connect-protocol-version,content-type"); hdr.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin = %d %v, want no Access-Control-Allow-Origin", code, hdr)
	}

	res := servertest.Do(t, "POST", list, `{"group":"flags.cup.dev","version":"v1alpha1","plural":"flags","namespace":"default"}`,
		"Origin", origin, "Content-Type", "application/json", "Connect-Protocol-Version", "1")
	if res.Status != 200 || res.Header.Get("Access-Control-Allow-Origin") != origin || !strings.Contains(res.Body, "new-checkout") {
		t.Errorf("List from %s = %d %v\n%s", origin, res.Status, res.Header, res.Body)
	}
	res = servertest.Do(t, "GET", url+flagPath, "", "Origin", origin)
	exposed := strings.ToLower(res.Header.Get("Access-Control-Expose-Headers"))
	for _, h := range []string{"etag", "cup-commit", "grpc-status", "grpc-message", "x-request-id", "connect-content-encoding"} {
		if !strings.Contains(exposed, h) {
			t.Errorf("Access-Control-Expose-Headers %q lacks %s", exposed, h)
		}
	}
	if res.Status != 200 || res.Header.Get("Access-Control-Allow-Origin") != origin || res.Header.Get("Cup-Commit") == "" {
		t.Errorf("REST GET from %s = %d %v", origin, res.Status, res.Header)
	}
}

// TestCORSBadOrigin: an origin cupd cannot use stops start-up.
func TestCORSBadOrigin(t *testing.T) {
	t.Parallel()
	cmd := newRootCommand(&testlog.Buffer{}, &testlog.Buffer{})
	cmd.SetArgs([]string{"--address", "127.0.0.1:0", "--cors-allowed-origins", "app.example/path"})
	if err := cmd.ExecuteContext(t.Context()); err == nil || !strings.Contains(err.Error(), "--cors-allowed-origins") {
		t.Errorf("a bad origin: %v, want an error naming --cors-allowed-origins", err)
	}
}

func preflight(t *testing.T, url, origin, method, headers string) (int, http.Header) {
	t.Helper()
	res := servertest.Do(t, "OPTIONS", url, "", "Origin", origin, "Access-Control-Request-Method", method, "Access-Control-Request-Headers", headers)
	return res.Status, res.Header
}

// listeningLine is what cupd logs once its port is bound.
var listeningLine = regexp.MustCompile(`msg="listening; not ready until start-up ends" address=(http://127\.0\.0\.1:\d+)`)

// TestPortBoundBeforeStartup holds the clone of a remote repository until
// the test has seen cupd bound to its port and not ready: /healthz ok,
// /readyz 503, health NOT_SERVING, calls Unavailable, a second cupd on the
// port refused at once. Then cupd becomes ready.
func TestPortBoundBeforeStartup(t *testing.T) {
	t.Parallel()
	git := gittest.NewDemo(t)
	target, err := url.Parse(git.URL(gittest.Demo))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	held := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
			proxy.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(held.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &testlog.Buffer{}, &testlog.Buffer{}
	cmd := newRootCommand(stdout, stderr)
	cmd.SetArgs([]string{"--address", "127.0.0.1:0", "--repository", held.URL + target.Path, "--fetch-interval", "0"})
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("cupd: %v", err)
		}
	})
	addr := waitFor(t, stderr, listeningLine, done)
	t.Logf("port bound after %v", time.Since(t0))

	if code, body := get(t, addr+"/healthz"); code != 200 {
		t.Errorf("/healthz while starting = %d %q, want 200", code, body)
	}
	// /readyz and the calls say what start-up waits for. The port is bound
	// before start-up reaches its first step, "starting" until then: on a
	// busy machine a moment after the listening line.
	const fetching = "cupd is starting: fetching the repository " + "http://127.0.0.1:"
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, body := get(t, addr+"/readyz"); !strings.Contains(body, "cupd is starting: starting") {
			break
		}
	}
	if code, body := get(t, addr+"/readyz"); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "not ready: "+fetching) {
		t.Errorf("/readyz while starting = %d %q, want 503 and %q", code, body, fetching)
	}
	_, err = cupv1alpha1connect.NewResourceServiceClient(http.DefaultClient, addr).List(t.Context(), connect.NewRequest(&cupv1alpha1.ListRequest{}))
	if connect.CodeOf(err) != connect.CodeUnavailable || !strings.Contains(err.Error(), fetching) {
		t.Errorf("List while starting: %v, want Unavailable saying %q", err, fetching)
	}
	if res := servertest.Do(t, "GET", addr+flagPath, ""); res.Status != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || !strings.Contains(res.Body, fetching) {
		t.Errorf("REST GET while starting = %d %v %s, want 503 with Retry-After saying %q", res.Status, res.Header, res.Body, fetching)
	}
	if st, err := healthOf(t, addr, ""); err != nil || st != grpchealth.StatusNotServing {
		t.Errorf("health while starting = %v, %v; want not serving", st, err)
	}
	if code, _ := get(t, addr+"/version"); code != 200 {
		t.Errorf("/version while starting = %d", code)
	}
	if code, body := get(t, addr+flagPath); code != http.StatusServiceUnavailable || !strings.Contains(body, `"unavailable"`) {
		t.Errorf("REST GET while starting = %d %s, want 503 unavailable", code, body)
	}

	t1 := time.Now()
	busy := newRootCommand(&testlog.Buffer{}, &testlog.Buffer{})
	busy.SetArgs([]string{"--address", strings.TrimPrefix(addr, "http://")})
	err = busy.ExecuteContext(t.Context())
	if d := time.Since(t1); err == nil || !strings.Contains(err.Error(), "--address") || d > 5*time.Second {
		t.Errorf("a second cupd on the bound port: %v after %v, want the busy port reported at once", err, d)
	} else {
		t.Logf("a busy port reported after %v", d)
	}

	close(release)
	ready := waitFor(t, stdout, addressLine, done)
	t.Logf("ready after %v", time.Since(t0))
	if ready != addr {
		t.Errorf("serving at %s, bound %s", ready, addr)
	}
	if code, body := get(t, addr+"/readyz"); code != 200 {
		t.Errorf("/readyz once ready = %d %q", code, body)
	}
	if st, err := healthOf(t, addr, ""); err != nil || st != grpchealth.StatusServing {
		t.Errorf("health once ready = %v, %v; want serving", st, err)
	}
	if code, body := get(t, addr+flagPath); code != 200 {
		t.Errorf("REST GET once ready = %d %s", code, body)
	}
	if _, hdr := preflight(t, addr+"/cup.v1alpha1.ResourceService/List", origin, "POST", "content-type"); hdr.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight without --cors-allowed-origins: %v, want CORS off", hdr)
	}
}

// waitFor waits until re matches what buf holds and returns its first
// group, failing when cupd exits first.
func waitFor(t *testing.T, buf *testlog.Buffer, re *regexp.Regexp, done <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(buf.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("cupd exited: %v\n%s", err, buf)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("no %q within two minutes:\n%s", re, buf)
	return ""
}
