package web_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/web"
)

const (
	indexHTML = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>cup</title>` +
		`<script type="module" crossorigin src="/ui/assets/index-abc123.js"></script>` +
		`<link rel="stylesheet" crossorigin href="/ui/assets/index-def456.css"></head>` +
		`<body><div id="app"></div></body></html>`
	immutable  = "public, max-age=31536000, immutable"
	indexRoute = "/ui/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/new-checkout"
)

// appJS compresses well, as a real bundle does.
var appJS = strings.Repeat("export function render(el) { el.textContent = 'cup'; }\n", 200)

// build is a UI build as Vite writes it, with a file that does not compress
// (a PNG) and one too small to gain from compression.
func build() fstest.MapFS {
	return fstest.MapFS{
		"index.html":              {Data: []byte(indexHTML)},
		"assets/index-abc123.js":  {Data: []byte(appJS)},
		"assets/index-def456.css": {Data: []byte(strings.Repeat("body { margin: 0 }\n", 100))},
		"assets/logo-0a1b2c.png":  {Data: bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 7}, 100)},
		"assets/tiny-9f8e7d.js":   {Data: []byte("x")},
		"favicon.svg":             {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)},
	}
}

// serve answers one request of h; header is name, value, ...
func serve(h http.Handler, method, target string, header ...string) *http.Response {
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func bodyOf(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return string(b)
}

func TestHandlerAnswers(t *testing.T) {
	t.Parallel()
	h := web.NewHandler(build())
	for _, tc := range []struct {
		name, method, target string
		header               []string
		code                 int
		body                 string // contained
		cache, ctype         string
	}{
		{"root", "GET", "/ui/", nil, 200, `<div id="app">`, "no-cache", "text/html; charset=utf-8"},
		{"index.html", "GET", "/ui/index.html", nil, 200, `<div id="app">`, "no-cache", "text/html; charset=utf-8"},
		{"route of the app", "GET", indexRoute, nil, 200, `<div id="app">`, "no-cache", "text/html; charset=utf-8"},
		{"route with a dot", "GET", "/ui/apis/flags.cup.dev/v1alpha1", nil, 200, `<div id="app">`, "no-cache", "text/html; charset=utf-8"},
		{"script", "GET", "/ui/assets/index-abc123.js", nil, 200, "export function render", immutable, "text/javascript; charset=utf-8"},
		{"style", "GET", "/ui/assets/index-def456.css", nil, 200, "body { margin: 0 }", immutable, "text/css; charset=utf-8"},
		{"file beside index.html", "GET", "/ui/favicon.svg", nil, 200, "<svg", "no-cache", "image/svg+xml"},
		{"HEAD", "HEAD", "/ui/", nil, 200, "", "no-cache", "text/html; charset=utf-8"},
		{"missing asset", "GET", "/ui/assets/index-gone.js", nil, 404, "no such file", "", "text/plain; charset=utf-8"},
		{"assets folder", "GET", "/ui/assets/", nil, 404, "no such file", "", "text/plain; charset=utf-8"},
		{"outside /ui/", "GET", "/elsewhere", nil, 404, "no such file", "", "text/plain; charset=utf-8"},
		{"POST", "POST", "/ui/", nil, 405, "GET and HEAD only", "", "text/plain; charset=utf-8"},
		{"PUT", "PUT", "/ui/assets/index-abc123.js", nil, 405, "GET and HEAD only", "", "text/plain; charset=utf-8"},
		{"DELETE", "DELETE", "/ui/apis", nil, 405, "GET and HEAD only", "", "text/plain; charset=utf-8"},
		{"range: the whole file", "GET", "/ui/assets/index-abc123.js", []string{"Range", "bytes=0-5"}, 200, "export", immutable, "text/javascript; charset=utf-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := serve(h, tc.method, tc.target, tc.header...)
			body := bodyOf(t, res)
			if res.StatusCode != tc.code || !strings.Contains(body, tc.body) {
				t.Errorf("%s %s = %d %.80q, want %d and %q", tc.method, tc.target, res.StatusCode, body, tc.code, tc.body)
			}
			if tc.method == "HEAD" && body != "" {
				t.Errorf("HEAD has a body: %.80q", body)
			}
			if got := res.Header.Get("Cache-Control"); got != tc.cache {
				t.Errorf("Cache-Control = %q, want %q", got, tc.cache)
			}
			if got := res.Header.Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type = %q, want %q", got, tc.ctype)
			}
			if got := res.Header.Get("Allow"); (tc.code == 405) != (got == "GET, HEAD") {
				t.Errorf("Allow = %q", got)
			}
			checkSecurityHeaders(t, res)
		})
	}
}

// checkSecurityHeaders checks the headers every answer carries.
func checkSecurityHeaders(t *testing.T, res *http.Response) {
	t.Helper()
	for name, want := range map[string]string{
		"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"X-Frame-Options":         "DENY",
	} {
		if got := res.Header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func TestHandlerETag(t *testing.T) {
	t.Parallel()
	h := web.NewHandler(build())
	for _, target := range []string{"/ui/", indexRoute, "/ui/assets/index-abc123.js"} {
		for _, enc := range []string{"", "gzip"} {
			res := serve(h, "GET", target, "Accept-Encoding", enc)
			etag := res.Header.Get("ETag")
			if !strings.HasPrefix(etag, `"`) || len(etag) < 10 {
				t.Fatalf("GET %s (%q): ETag %q", target, enc, etag)
			}
			res = serve(h, "GET", target, "Accept-Encoding", enc, "If-None-Match", etag)
			if res.StatusCode != http.StatusNotModified || bodyOf(t, res) != "" {
				t.Errorf("GET %s (%q) If-None-Match its ETag = %d, want 304", target, enc, res.StatusCode)
			}
			checkSecurityHeaders(t, res)
			if res = serve(h, "GET", target, "Accept-Encoding", enc, "If-None-Match", `"other"`); res.StatusCode != 200 {
				t.Errorf("GET %s (%q) If-None-Match another ETag = %d, want 200", target, enc, res.StatusCode)
			}
		}
	}
	plain := serve(h, "GET", "/ui/").Header.Get("ETag")
	gz := serve(h, "GET", "/ui/", "Accept-Encoding", "gzip").Header.Get("ETag")
	if plain == gz {
		t.Errorf("the gzip and identity forms share the ETag %s", plain)
	}
	if res := serve(h, "GET", "/ui/", "If-None-Match", gz); res.StatusCode != 200 {
		t.Errorf("an identity request with the gzip form's ETag = %d, want 200", res.StatusCode)
	}
}

func TestHandlerGzip(t *testing.T) {
	t.Parallel()
	h := web.NewHandler(build())
	for _, tc := range []struct {
		target, acceptEncoding string
		gzip, vary             bool
	}{
		{"/ui/assets/index-abc123.js", "gzip, deflate, br, zstd", true, true},
		{"/ui/assets/index-abc123.js", "br;q=1.0, gzip;q=0.8", true, true},
		{"/ui/assets/index-abc123.js", "GZIP", true, true},
		{"/ui/assets/index-abc123.js", "x-gzip", true, true},
		{"/ui/assets/index-abc123.js", "*", true, true},
		{"/ui/assets/index-abc123.js", "", false, true},
		{"/ui/assets/index-abc123.js", "identity", false, true},
		{"/ui/assets/index-abc123.js", "gzip;q=0", false, true},
		{"/ui/assets/index-abc123.js", "*, gzip;q=0", false, true},
		{"/ui/assets/index-abc123.js", "br", false, true},
		{"/ui/assets/index-def456.css", "gzip", true, true},
		{"/ui/", "gzip", true, true},
		{indexRoute, "gzip", true, true},
		{"/ui/assets/logo-0a1b2c.png", "gzip", false, false},
		{"/ui/assets/tiny-9f8e7d.js", "gzip", false, false},
	} {
		res := serve(h, "GET", tc.target, "Accept-Encoding", tc.acceptEncoding)
		gotGzip := res.Header.Get("Content-Encoding") == "gzip"
		gotVary := res.Header.Get("Vary") == "Accept-Encoding"
		if res.StatusCode != 200 || gotGzip != tc.gzip || gotVary != tc.vary {
			t.Errorf("GET %s with Accept-Encoding %q = %d, Content-Encoding %q, Vary %q; want gzip %v, Vary %v",
				tc.target, tc.acceptEncoding, res.StatusCode, res.Header.Get("Content-Encoding"), res.Header.Get("Vary"), tc.gzip, tc.vary)
		}
		want, _ := fs.ReadFile(build(), strings.TrimPrefix(tc.target, "/ui/"))
		if tc.target == "/ui/" || tc.target == indexRoute {
			want = []byte(indexHTML)
		}
		if body := bodyOf(t, res); body != string(want) {
			t.Errorf("GET %s with Accept-Encoding %q: body differs from the file", tc.target, tc.acceptEncoding)
		}
	}
	res := serve(h, "GET", "/ui/assets/index-abc123.js", "Accept-Encoding", "gzip")
	if n := res.ContentLength; n <= 0 || n > int64(len(appJS))/10 {
		t.Errorf("gzip Content-Length %d of a %d-byte repetitive script", n, len(appJS))
	}
	if res.Header.Get("Cache-Control") != immutable {
		t.Errorf("gzip asset Cache-Control = %q", res.Header.Get("Cache-Control"))
	}
}

// countingFS counts the files opened.
type countingFS struct {
	fs.FS
	opens atomic.Int64
}

func (c *countingFS) Open(name string) (fs.File, error) {
	c.opens.Add(1)
	return c.FS.Open(name)
}

// TestHandlerReadsOnce: a Handler nobody asks reads nothing; the first
// requests, concurrent ones, read and compress the build once.
func TestHandlerReadsOnce(t *testing.T) {
	t.Parallel()
	fsys := &countingFS{FS: build()}
	h := web.NewHandler(fsys)
	if n := fsys.opens.Load(); n != 0 {
		t.Fatalf("NewHandler opened %d files", n)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if res := serve(h, "GET", "/ui/assets/index-abc123.js", "Accept-Encoding", "gzip"); res.StatusCode != 200 {
				t.Errorf("GET = %d", res.StatusCode)
			}
		})
	}
	wg.Wait()
	opened := fsys.opens.Load()
	if opened == 0 {
		t.Fatal("the first requests opened no file")
	}
	for _, target := range []string{"/ui/", indexRoute, "/ui/assets/index-def456.css", "/ui/assets/gone.js"} {
		serve(h, "GET", target, "Accept-Encoding", "gzip")
	}
	if n := fsys.opens.Load(); n != opened {
		t.Errorf("later requests opened %d more files", n-opened)
	}
}

func TestHandlerNotBuilt(t *testing.T) {
	t.Parallel()
	for name, fsys := range map[string]fs.FS{
		"empty":             fstest.MapFS{},
		"assets, no index":  fstest.MapFS{"assets/index-abc123.js": {Data: []byte(appJS)}},
		"placeholder other": fstest.MapFS{"README.md": {Data: []byte("run make ui")}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := web.NewHandler(fsys)
			if h.Built() {
				t.Error("Built() = true")
			}
			for _, target := range []string{"/ui/", indexRoute, "/ui/assets/index-abc123.js"} {
				res := serve(h, "GET", target)
				body := bodyOf(t, res)
				if res.StatusCode != http.StatusServiceUnavailable || body != web.NotBuiltMessage {
					t.Errorf("GET %s = %d %q, want 503 and the message", target, res.StatusCode, body)
				}
				if ct := res.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
					t.Errorf("Content-Type = %q", ct)
				}
				checkSecurityHeaders(t, res)
			}
			if res := serve(h, "POST", "/ui/"); res.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("POST = %d, want 405", res.StatusCode)
			}
		})
	}
	if !strings.Contains(web.NotBuiltMessage, "make ui") || !strings.Contains(web.NotBuiltMessage, "make build") {
		t.Errorf("the message does not say how to build the UI: %q", web.NotBuiltMessage)
	}
	if !web.NewHandler(build()).Built() {
		t.Error("Built() = false with an index.html")
	}
}

// TestDist checks the embedded build, whichever this binary has: a file
// system with index.html after `make ui`, an empty one before.
func TestDist(t *testing.T) {
	t.Parallel()
	fsys := web.Dist()
	h := web.NewHandler(fsys)
	if !h.Built() {
		if err := fstest.TestFS(fsys); err != nil {
			t.Fatal(err)
		}
		if res := serve(h, "GET", "/ui/"); res.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("GET /ui/ without a build = %d, want 503", res.StatusCode)
		}
		return
	}
	if err := fstest.TestFS(fsys, "index.html"); err != nil {
		t.Fatal(err)
	}
	index := bodyOf(t, serve(h, "GET", "/ui/"))
	if !strings.Contains(index, `<div id="app">`) || !strings.Contains(index, `src="/ui/assets/`) {
		t.Errorf("the embedded index.html is not the app's, built for /ui/:\n%s", index)
	}
	// No inline script: the Content-Security-Policy would refuse it.
	if strings.Contains(index, "<script>") || strings.Contains(index, "<script type=\"module\">") {
		t.Errorf("the embedded index.html has an inline script:\n%s", index)
	}
	assets, err := fs.ReadDir(fsys, "assets")
	if err != nil || len(assets) == 0 {
		t.Fatalf("the embedded build has no assets: %v", err)
	}
	for _, a := range assets {
		res := serve(h, "GET", "/ui/assets/"+a.Name(), "Accept-Encoding", "gzip")
		if res.StatusCode != 200 || res.Header.Get("Cache-Control") != immutable {
			t.Errorf("GET /ui/assets/%s = %d, Cache-Control %q", a.Name(), res.StatusCode, res.Header.Get("Cache-Control"))
		}
	}
}
