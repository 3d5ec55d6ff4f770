package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"connectrpc.com/connect"
	connectcors "connectrpc.com/cors"
	"connectrpc.com/grpchealth"
	"github.com/rs/cors"

	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/internal/buildinfo"
)

// This file holds what a server shows of itself beside the API: its index
// at GET /, its build at GET /version, gRPC health checking, and CORS for
// browsers on other origins. NewStartingHandler answers the same while the
// process still prepares the Server.

// DocsURL is where the index at GET / sends readers for documentation.
const DocsURL = "https://github.com/cup-dev/cup#readme"

// surfaceConfig is the part of config the options in this file set.
type surfaceConfig struct {
	corsOrigins []string
	repository  string
	branch      string
	ui          UI // ui.go
	progress    func() string
}

// WithCORS lets web pages from origins call the server from a browser:
// every protocol (Connect, gRPC-Web, and the REST form) answers their
// preflight requests and exposes the headers clients read (ETag,
// Cup-Commit, Grpc-Status, X-Request-Id, ...). An origin is
// scheme://host[:port], may hold one "*" for any run of characters
// ("https://*.example.com"), or is "*" alone for any origin: then any page
// a user opens can call the server with the credentials it holds, so use
// "*" only with authentication on and tokens that pages do not hold.
// Cookies and client certificates are never allowed across origins.
// Default: none, no CORS headers, and browsers keep answers from other
// origins' pages.
func WithCORS(origins []string) Option {
	return func(c *config) { c.surface.corsOrigins = slices.Clone(origins) }
}

// WithStartingProgress, of NewStartingHandler's options only, tells what
// start-up does now ("loading the configuration"): /readyz and the
// Unavailable answers to calls report it. Default, and a nil progress or
// an empty step: they say the server is starting, no more.
func WithStartingProgress(progress func() string) Option {
	return func(c *config) { c.surface.progress = progress }
}

// WithRepository names the repository and branch the index at GET / says
// the server serves (a URL without credentials, or a path). Default: the
// index names none.
func WithRepository(repository, branch string) Option {
	return func(c *config) { c.surface.repository, c.surface.branch = repository, branch }
}

// checkOrigins reports the first origin WithCORS cannot use.
func checkOrigins(origins []string) error {
	for _, o := range origins {
		if o == "*" {
			continue
		}
		if strings.Count(o, "*") > 1 {
			return fmt.Errorf("server: CORS origin %q holds more than one *", o)
		}
		u, err := url.Parse(strings.Replace(o, "*", "x", 1))
		if err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return fmt.Errorf("server: CORS origin %q is not scheme://host[:port] (e.g. https://app.example.com) or *", o)
		}
	}
	return nil
}

// corsHandler wraps h to answer CORS requests from origins; none leaves h
// as it is.
func corsHandler(h http.Handler, origins []string) http.Handler {
	if len(origins) == 0 {
		return h
	}
	trimmed := make([]string, len(origins))
	for i, o := range origins {
		trimmed[i] = strings.TrimSuffix(o, "/")
	}
	return cors.New(cors.Options{
		AllowedOrigins: trimmed,
		// Connect uses GET and POST; the REST form PUT, PATCH and DELETE too.
		AllowedMethods: append(connectcors.AllowedMethods(), http.MethodPut, http.MethodPatch, http.MethodDelete),
		AllowedHeaders: append(connectcors.AllowedHeaders(),
			"Authorization", "Connect-Accept-Encoding", "Connect-Content-Encoding",
			"Grpc-Accept-Encoding", "Grpc-Encoding", "Content-Encoding",
			"If-Match", headerIdempotencyKey, "X-Request-Id"),
		ExposedHeaders: append(connectcors.ExposedHeaders(),
			"ETag", headerCommit, headerReplayed, "X-Request-Id", "Retry-After", "WWW-Authenticate",
			"Connect-Accept-Encoding", "Connect-Content-Encoding", "Content-Encoding",
			"Grpc-Accept-Encoding", "Grpc-Encoding"),
		// Browsers cache a preflight for at most two hours (Chromium).
		MaxAge: 7200,
	}).Handler(h)
}

// routeSurface adds GET / to api, the handler behind authentication.
func (s *Server) routeSurface(api *http.ServeMux) {
	api.HandleFunc("GET /{$}", s.index)
}

// routePublic adds what anyone may ask, credentials or not, to mux: the
// build at GET /version and gRPC health checking.
func routePublic(mux *http.ServeMux, checker grpchealth.Checker) {
	mux.HandleFunc("GET /version", serveVersion)
	mux.Handle(grpchealth.NewHandler(checker, connect.WithReadMaxBytes(1<<10)))
}

// healthServices are the services gRPC health checking knows: the server
// as a whole ("") and each Connect service.
var healthServices = []string{
	"",
	cupv1alpha1connect.ResourceServiceName,
	cupv1alpha1connect.DiscoveryServiceName,
	cupv1alpha1connect.ProposalServiceName,
}

// health answers gRPC health checks: SERVING while the source resolves its
// default branch (as /readyz), NOT_SERVING otherwise.
type health struct{ s *Server }

func (h health) Check(ctx context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	if !slices.Contains(healthServices, req.Service) {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("no service %q is served", req.Service))
	}
	if _, err := h.s.src.View(ctx, ""); err != nil {
		return &grpchealth.CheckResponse{Status: grpchealth.StatusNotServing}, nil
	}
	return &grpchealth.CheckResponse{Status: grpchealth.StatusServing}, nil
}

// notServing answers gRPC health checks while the Server is not made yet.
type notServing struct{}

func (notServing) Check(_ context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	if !slices.Contains(healthServices, req.Service) {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("no service %q is served", req.Service))
	}
	return &grpchealth.CheckResponse{Status: grpchealth.StatusNotServing}, nil
}

func serveVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, buildinfo.Read())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// index is the body of GET / in JSON: what the server serves and where to
// go next.
type index struct {
	Name       string         `json:"name"`
	Version    string         `json:"version"`
	Repository string         `json:"repository,omitempty"`
	Branch     string         `json:"branch,omitempty"`
	Types      []indexType    `json:"types"`
	Links      []indexLink    `json:"links"`
	Build      buildinfo.Info `json:"-"`
}

// indexType is one served type in the index.
type indexType struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	Plural  string `json:"plural"`
	// Path is the REST collection in the namespace "default".
	Path string `json:"path"`
}

// indexLink points from the index to another resource.
type indexLink struct {
	// Rel is what the link is: "apis", "openapi", "version", "health", "ready",
	// "docs", and "ui" once a UI is served.
	Rel  string `json:"rel"`
	Href string `json:"href"`
}

func (s *Server) indexOf() index {
	bi := buildinfo.Read()
	ix := index{
		Name: "cupd", Version: bi.Version, Build: bi,
		Repository: s.cfg.surface.repository, Branch: s.cfg.surface.branch,
		Types: []indexType{},
		Links: []indexLink{
			{Rel: "apis", Href: "/apis"},
			{Rel: "openapi", Href: openapiPath},
			{Rel: "version", Href: "/version"},
			{Rel: "health", Href: "/healthz"},
			{Rel: "ready", Href: "/readyz"},
			{Rel: "docs", Href: DocsURL},
		},
	}
	if s.ui != nil && s.ui.built {
		ix.Links = append(ix.Links, indexLink{Rel: "ui", Href: UIPath})
	}
	for _, d := range s.defs {
		for _, v := range d.GetVersions() {
			ix.Types = append(ix.Types, indexType{
				Group: d.GetGroup(), Version: v.GetName(), Kind: d.GetNames().GetKind(), Plural: d.GetNames().GetPlural(),
				Path: "/apis/" + d.GetGroup() + "/" + v.GetName() + "/namespaces/default/" + d.GetNames().GetPlural(),
			})
		}
	}
	return ix
}

// index answers GET /: JSON when the caller accepts application/json and
// not text/html, a small HTML page otherwise (browsers go to a built UI
// before they get here: see uiRoute.route).
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	ix := s.indexOf()
	w.Header().Set("Vary", "Accept")
	if wantsJSON(r.Header.Values("Accept")) {
		writeJSON(w, http.StatusOK, ix)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if err := indexPage.Execute(w, ix); err != nil {
		s.cfg.logger.ErrorContext(r.Context(), "writing the index page", "error", err)
	}
}

// wantsJSON reports whether Accept headers ask for JSON rather than HTML.
func wantsJSON(accept []string) bool {
	a := strings.ToLower(strings.Join(accept, ","))
	return strings.Contains(a, "application/json") && !strings.Contains(a, "text/html")
}

var indexPage = template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>cupd</title>
<style>body{font-family:system-ui,sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem}code{font-size:.95em}td{padding:.15rem .8rem .15rem 0}</style>
</head>
<body>
<h1>cupd</h1>
<p>A Kubernetes-style API over a Git repository{{with .Repository}}: <code>{{.}}</code>{{end}}{{with .Branch}}, branch <code>{{.}}</code>{{end}}.</p>
<h2>Served types</h2>
{{if .Types}}<table>
<tr><th align="left">Kind</th><th align="left">Group/version</th><th align="left">Collection</th></tr>
{{range .Types}}<tr><td>{{.Kind}}</td><td>{{.Group}}/{{.Version}}</td><td><a href="{{.Path}}">{{.Path}}</a></td></tr>
{{end}}</table>{{else}}<p>None.</p>{{end}}
<h2>Links</h2>
<ul>
<li><a href="/apis">/apis</a>: the served types and their schemas</li>
<li><a href="/openapi/v3">/openapi/v3</a>: OpenAPI v3 documents of the REST form, one per group/version</li>
<li><a href="/version">/version</a>: this build, {{.Build}}</li>
<li><a href="/healthz">/healthz</a> and <a href="/readyz">/readyz</a>: health</li>
<li><a href="` + DocsURL + `">Documentation</a></li>
</ul>
</body>
</html>
`))

// NewStartingHandler returns the handler to serve while the Server is
// being prepared (a repository cloned, WASM modules compiled), so that the
// port is bound from the first moment: /healthz answers ok, /readyz 503
// and gRPC health checks NOT_SERVING, GET /version the build, and every
// other request 503 Service Unavailable (Unavailable in the Connect,
// gRPC and gRPC-Web protocols) with Retry-After. /readyz and the
// Unavailable errors say "cupd is starting: " and the step start-up is at,
// as WithStartingProgress tells it. Every answer closes its connection.
// Of opts, WithCORS, WithUI (the UI's app is served, and its calls get
// Unavailable until the Server serves) and WithStartingProgress apply; it
// fails when WithCORS names an origin it cannot use.
func NewStartingHandler(opts ...Option) (http.Handler, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if err := checkOrigins(cfg.surface.corsOrigins); err != nil {
		return nil, err
	}
	msg := func() string {
		if p := cfg.surface.progress; p != nil {
			if step := p(); step != "" {
				return "cupd is starting: " + step + "; try again shortly"
			}
		}
		return "cupd is starting: it serves once its repository and controllers are ready; try again shortly"
	}
	mux := http.NewServeMux()
	routePublic(mux, notServing{})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, "not ready: %s\n", msg())
	})
	if cfg.surface.ui != nil {
		mux.Handle(UIPath, cfg.surface.ui)
	}
	ew := connect.NewErrorWriter()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		if ew.IsSupported(r) {
			_ = ew.Write(w, r, connect.NewError(connect.CodeUnavailable, errors.New(msg())))
			return
		}
		writeJSON(w, http.StatusServiceUnavailable, struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}{connect.CodeUnavailable.String(), msg()})
	})
	h := corsHandler(mux, cfg.surface.corsOrigins)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Every answer closes its connection (HTTP/2: a graceful
		// GOAWAY), so that none made while starting outlives start-up:
		// what serves next may count and limit connections.
		w.Header().Set("Connection", "close")
		h.ServeHTTP(w, r)
	}), nil
}
