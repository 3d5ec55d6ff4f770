package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
)

// Path is where cupd serves the UI: the base path the app is built for
// (base in vite.config.ts).
const Path = "/ui/"

// ContentSecurityPolicy is the Content-Security-Policy of every answer of
// a [Handler]: scripts, styles, fonts and connections from the page's own
// origin only, so no inline script or style and no request to another
// origin; images from the origin and data: URLs; no plugins, no <base>,
// and no framing.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// NotBuiltMessage is the body of the 503 answer of a [Handler] with no
// build to serve.
const NotBuiltMessage = "cup's web UI was not built into this cupd.\n\n" +
	"Run `make ui` (or `make build`, which runs it) in the cup repository, then build cupd again:\n" +
	"the UI is built into web/dist/app, which cupd embeds. The API is served as usual.\n"

// Cache-Control of the files under assets/, whose names change with
// their content, and of the others (index.html): used only once the
// browser checked its copy is current.
const (
	cacheImmutable  = "public, max-age=31536000, immutable"
	cacheRevalidate = "no-cache"
)

// securityHeaders are set on every answer of a Handler.
var securityHeaders = [...][2]string{
	{"Content-Security-Policy", ContentSecurityPolicy},
	{"X-Content-Type-Options", "nosniff"},
	{"Referrer-Policy", "no-referrer"},
	{"X-Frame-Options", "DENY"},
}

// Handler serves a UI build at [Path]: its files, index.html for every
// other path under Path (the app routes in the browser), and 404 for a
// missing file under assets/. It answers GET and HEAD only. It is safe
// for concurrent use.
//
// It reads the build at its first request, not before, and keeps it in
// memory with a gzip copy of each file that compresses, made once then:
// a Handler nobody asks costs nothing.
type Handler struct {
	fsys fs.FS

	once  sync.Once
	files map[string]*file // by name in fsys, set by load
	err   error
}

// file is one file of the build, ready to serve.
type file struct {
	body         []byte
	gz           []byte // nil: not compressed
	etag, gzETag string
	contentType  string
	cacheControl string
}

// NewHandler returns a Handler serving the build in fsys (as [Dist]
// returns it): index.html, and assets/ with content-hashed names. Without
// an index.html in fsys, the Handler answers 503 Service Unavailable with
// [NotBuiltMessage].
func NewHandler(fsys fs.FS) *Handler { return &Handler{fsys: fsys} }

// Built reports whether the Handler has a build to serve: whether its
// file system holds an index.html.
func (h *Handler) Built() bool {
	_, err := fs.Stat(h.fsys, "index.html")
	return err == nil
}

// ServeHTTP answers a request for a path under [Path]. It answers
// If-None-Match with 304 Not Modified; it does not answer Range requests
// with parts.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	header := w.Header()
	for _, kv := range securityHeaders {
		header.Set(kv[0], kv[1])
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		header.Set("Allow", "GET, HEAD")
		http.Error(w, "the web UI answers GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	h.once.Do(h.load)
	index := h.files["index.html"]
	switch {
	case h.err != nil:
		http.Error(w, "the web UI's files could not be read: "+h.err.Error(), http.StatusInternalServerError)
		return
	case index == nil:
		header.Set("Cache-Control", "no-store") // a build may come with the next start
		header.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, NotBuiltMessage)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, Path)
	f := h.files[name]
	switch {
	case f != nil:
	case !ok || name == "assets" || strings.HasPrefix(name, "assets/"):
		// A missing asset is a stale or mistyped link: the app, served
		// in its place, would fail as a script or style.
		http.Error(w, "no such file in the web UI", http.StatusNotFound)
		return
	default:
		f = index // a route of the app, such as /ui/apis/<group>/...
	}
	body, etag := f.body, f.etag
	header.Set("Content-Type", f.contentType)
	header.Set("Cache-Control", f.cacheControl)
	if f.gz != nil {
		header.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Values("Accept-Encoding")) {
			body, etag = f.gz, f.gzETag
			header.Set("Content-Encoding", "gzip")
		}
	}
	header.Set("ETag", etag)
	if etagListed(r.Header.Values("If-None-Match"), etag) {
		header.Del("Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	header.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// etagListed reports whether If-None-Match headers name etag (or are "*"),
// by weak comparison.
func etagListed(ifNoneMatch []string, etag string) bool {
	for _, v := range ifNoneMatch {
		for tag := range strings.SplitSeq(v, ",") {
			tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
			if tag == etag || tag == "*" {
				return true
			}
		}
	}
	return false
}

// load reads every file of the build into h.files, compressing those that
// compress.
func (h *Handler) load() {
	files := make(map[string]*file)
	h.err = fs.WalkDir(h.fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(h.fsys, name)
		if err != nil {
			return err
		}
		files[name] = newFile(name, body)
		return nil
	})
	h.files = files
}

func newFile(name string, body []byte) *file {
	sum := sha256.Sum256(body)
	tag := base64.RawURLEncoding.EncodeToString(sum[:18])
	f := &file{body: body, etag: strconv.Quote(tag), contentType: contentType(name), cacheControl: cacheRevalidate}
	if strings.HasPrefix(name, "assets/") {
		f.cacheControl = cacheImmutable
	}
	if compressible(f.contentType) {
		// Each representation has an ETag of its own: a cache must not
		// answer a request for one with the other.
		if gz := gzipBest(body); len(gz) < len(body) {
			f.gz, f.gzETag = gz, strconv.Quote(tag+"-gzip")
		}
	}
	return f
}

// gzipBest compresses b at the best compression: it is done once per file.
func gzipBest(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // fails only for an invalid level
	_, _ = zw.Write(b)                                       // a bytes.Buffer does not fail
	_ = zw.Close()
	return buf.Bytes()
}

// contentTypes are the types of the files a Vite build holds, so that
// they do not depend on the machine's MIME tables (nosniff makes a wrong
// type fatal for scripts and styles).
var contentTypes = map[string]string{
	".html":        "text/html; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".mjs":         "text/javascript; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".json":        "application/json",
	".map":         "application/json",
	".webmanifest": "application/manifest+json",
	".txt":         "text/plain; charset=utf-8",
	".svg":         "image/svg+xml",
	".ico":         "image/x-icon",
	".png":         "image/png",
	".webp":        "image/webp",
	".woff2":       "font/woff2",
	".woff":        "font/woff",
	".wasm":        "application/wasm",
}

func contentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if t, ok := contentTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

// compressible reports whether files of content type t shrink with gzip:
// text, JSON, SVG, icons and WASM do; images and fonts are compressed
// already.
func compressible(t string) bool {
	t, _, _ = strings.Cut(t, ";")
	return strings.HasPrefix(t, "text/") || strings.HasSuffix(t, "json") ||
		t == "image/svg+xml" || t == "image/x-icon" || t == "application/wasm"
}

// acceptsGzip reports whether Accept-Encoding headers accept gzip: named
// (or as x-gzip), or through "*", with a q-value above zero.
func acceptsGzip(values []string) bool {
	gzipQ, anyQ := -1.0, -1.0 // -1: not named
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			q := 1.0
			if k, val, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				var err error
				if q, err = strconv.ParseFloat(strings.TrimSpace(val), 64); err != nil {
					q = 0
				}
			}
			switch strings.ToLower(strings.TrimSpace(coding)) {
			case "gzip", "x-gzip":
				gzipQ = max(gzipQ, q)
			case "*":
				anyQ = max(anyQ, q)
			}
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return anyQ > 0
}
