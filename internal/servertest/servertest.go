package servertest

import (
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/internal/memsource"
	"github.com/cup-dev/cup/server"
	"github.com/cup-dev/cup/source"
)

// Option configures Start.
type Option func(*options)

type options struct {
	files      map[string][]byte
	configDir  string
	types      func(t testing.TB, types []*server.Type) []*server.Type
	srcOpts    []memsource.Option
	wrap       func(source.Source) source.Source
	serverOpts []server.Option
	branch     string
}

// WithFiles adds files to the repository's first commit, replacing the
// demo's of the same path; nil content removes a demo file.
func WithFiles(files map[string][]byte) Option {
	return func(o *options) { maps.Copy(o.files, files) }
}

// WithoutDemo starts from an empty repository rather than the demo's
// files: with WithFiles given after it, the repository holds exactly
// those (and they must include a configuration for the types served).
func WithoutDemo() Option {
	return func(o *options) { clear(o.files) }
}

// WithConfigDir sets the directory of the repository the served types are
// read from. The default is ".cup".
func WithConfigDir(dir string) Option {
	return func(o *options) { o.configDir = dir }
}

// WithTypes lets edit change the types read from the configuration (wrap
// a controller, add or remove a type) before the server is made.
func WithTypes(edit func(t testing.TB, types []*server.Type) []*server.Type) Option {
	return func(o *options) { o.types = edit }
}

// WithSourceOptions configures the in-memory source (write mode, change-set
// prefix, retries).
func WithSourceOptions(opts ...memsource.Option) Option {
	return func(o *options) { o.srcOpts = append(o.srcOpts, opts...) }
}

// WithSource puts wrap's source in front of the in-memory one: the server
// serves what wrap returns.
func WithSource(wrap func(source.Source) source.Source) Option {
	return func(o *options) { o.wrap = wrap }
}

// WithServerOptions adds options to server.New, after the harness's own
// (a logger that writes to the test).
func WithServerOptions(opts ...server.Option) Option {
	return func(o *options) { o.serverOpts = append(o.serverOpts, opts...) }
}

// Server is a running server and the repository it serves.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:<port>, serving
	// HTTP/1.1 and HTTP/2 without TLS (h2c).
	URL string
	// Server is the server.
	Server *server.Server
	// Repo is the repository: commit to it to play another writer, read it
	// to check what the server wrote.
	Repo *memsource.Repo
	// Source is the source the server serves (the in-memory one, or what
	// WithSource made of it).
	Source source.Source
	// Types are the types served.
	Types []*server.Type
	// Initial is the repository's first commit, on branch main.
	Initial string
}

// Start serves a fresh in-memory copy of the demo repository (see the
// package doc) until the test ends. Failures end the test.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	demo, err := DemoFiles()
	if err != nil {
		t.Fatal(err)
	}
	o := options{files: demo, configDir: ".cup", branch: "main"}
	for _, opt := range opts {
		opt(&o)
	}
	maps.DeleteFunc(o.files, func(_ string, data []byte) bool { return data == nil })
	types, err := Types(o.files, o.configDir)
	if err != nil {
		t.Fatal(err)
	}
	if o.types != nil {
		types = o.types(t, types)
	}
	repo := memsource.NewRepo()
	initial, err := repo.Init(o.branch, o.files, "demo\n")
	if err != nil {
		t.Fatal(err)
	}
	mem, err := memsource.New(repo, o.srcOpts...)
	if err != nil {
		t.Fatal(err)
	}
	var src source.Source = mem
	if o.wrap != nil {
		src = o.wrap(mem)
	}
	srv, err := server.New(src, types, append([]server.Option{server.WithLogger(Logger(t))}, o.serverOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &Server{URL: Serve(t, srv.Handler()), Server: srv, Repo: repo, Source: src, Types: types, Initial: initial}
}

// Serve serves h with server.NewHTTPServer on 127.0.0.1 until the test
// ends, and returns its base URL. The test ends only after every handler
// has returned: a stream (a watch) still running would log to a test that
// is over, which the race detector reports.
func Serve(t testing.TB, h http.Handler, opts ...server.HTTPOption) string {
	t.Helper()
	var running sync.RWMutex // read-held by each running handler
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = server.NewHTTPServer("", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		running.RLock()
		defer running.RUnlock()
		h.ServeHTTP(w, r)
	}), opts...)
	ts.Start()
	t.Cleanup(func() {
		ts.Close() // HTTP/2 handlers may still be running after it
		done := make(chan struct{})
		go func() { running.Lock(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("servertest: handlers still running 10 s after the server closed")
		}
	})
	return ts.URL
}

// Logger returns a logger that writes, at debug level, to the test's
// output.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Head returns the commit branch main holds.
func (s *Server) Head(t testing.TB) string {
	t.Helper()
	c, err := s.Repo.Resolve("refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Protocol is one way to call the Connect services.
type Protocol struct {
	// Name is connect, connect-json, grpc or grpc-web.
	Name string
	// Options are the client options that select the protocol.
	Options []connect.ClientOption
	// H2C says that the protocol needs HTTP/2 (without TLS).
	H2C bool
}

// Protocols are the protocols the server speaks.
var Protocols = []Protocol{
	{Name: "connect"},
	{Name: "connect-json", Options: []connect.ClientOption{connect.WithProtoJSON()}},
	{Name: "grpc", Options: []connect.ClientOption{connect.WithGRPC()}, H2C: true},
	{Name: "grpc-web", Options: []connect.ClientOption{connect.WithGRPCWeb()}},
}

// HTTPClient returns an HTTP client that speaks p.
func (p Protocol) HTTPClient() *http.Client {
	if !p.H2C {
		return http.DefaultClient
	}
	protos := new(http.Protocols)
	protos.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: protos}}
}

// Clients are Connect clients of the server's services.
type Clients struct {
	Resources cupv1alpha1connect.ResourceServiceClient
	Discovery cupv1alpha1connect.DiscoveryServiceClient
	Proposals cupv1alpha1connect.ProposalServiceClient
}

// Clients returns clients of the server that speak p, with opts.
func (s *Server) Clients(p Protocol, opts ...connect.ClientOption) Clients {
	hc := p.HTTPClient()
	opts = append(slices.Clone(p.Options), opts...)
	return Clients{
		Resources: cupv1alpha1connect.NewResourceServiceClient(hc, s.URL, opts...),
		Discovery: cupv1alpha1connect.NewDiscoveryServiceClient(hc, s.URL, opts...),
		Proposals: cupv1alpha1connect.NewProposalServiceClient(hc, s.URL, opts...),
	}
}

// Response is the answer to a REST call.
type Response struct {
	Status int
	Header http.Header
	Body   string
}

// Do sends a REST call: method, path (from the server's root, "/apis/…")
// and body (none when empty), with headers given as name, value pairs.
func (s *Server) Do(t testing.TB, method, path, body string, header ...string) Response {
	t.Helper()
	return Do(t, method, s.URL+path, body, header...)
}

// Do sends an HTTP request to url, as Server.Do does, for any server: with
// the test's context, body none when empty, headers as name, value pairs.
// It fails the test when no answer comes or its body cannot be read.
func Do(t testing.TB, method, url, body string, header ...string) Response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}
