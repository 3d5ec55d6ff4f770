package gittest

import (
	"crypto/subtle"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Services whose POST requests [Server.Count] counts.
const (
	// UploadPack is the service that serves fetches and clones.
	UploadPack = "git-upload-pack"
	// ReceivePack is the service that receives pushes.
	ReceivePack = "git-receive-pack"
)

// A Fault is a way for the server to fail the requests that follow
// [Server.SetFault].
type Fault int

const (
	// FaultNone serves every request normally. It is the default.
	FaultNone Fault = iota
	// FaultRefuse accepts each request's connection and closes it without
	// answering, so the client sees the connection reset or an unexpected
	// end of file.
	FaultRefuse
	// FaultUnavailable answers every request with 503 Service Unavailable.
	FaultUnavailable
	// FaultCutPush reads only the start of each push's request body (a
	// git-receive-pack POST) and closes the connection without running git:
	// the push fails and nothing is pushed. Other requests are served.
	FaultCutPush
	// FaultCutAfterPush runs git to the end for each push (a
	// git-receive-pack POST), so the references are updated on the server,
	// then closes the connection instead of sending git's answer: the push
	// fails for the client although it landed. Other requests are served.
	FaultCutAfterPush
)

// String returns the name of the fault's constant, such as "FaultRefuse".
func (f Fault) String() string {
	switch f {
	case FaultNone:
		return "FaultNone"
	case FaultRefuse:
		return "FaultRefuse"
	case FaultUnavailable:
		return "FaultUnavailable"
	case FaultCutPush:
		return "FaultCutPush"
	case FaultCutAfterPush:
		return "FaultCutAfterPush"
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// cutPushBytes is how much of a push's request body FaultCutPush reads. The
// body is always longer: its first command line alone holds two object ids.
const cutPushBytes = 64

// An Option configures [NewServer].
type Option func(*config)

type config struct {
	root     string
	auth     bool
	user     string
	password string
	log      io.Writer
}

// WithRoot serves the bare repositories below dir, which is created if it
// does not exist. By default the server serves a new t.TempDir().
func WithRoot(dir string) Option {
	return func(c *config) { c.root = dir }
}

// WithBasicAuth requires HTTP basic authentication with user and password
// for every request: a request without them, or with others, is answered 401
// Unauthorized with a WWW-Authenticate: Basic challenge. git http-backend
// sees user as REMOTE_USER. By default anonymous requests are served and
// REMOTE_USER is "anonymous".
func WithBasicAuth(user, password string) Option {
	return func(c *config) { c.auth, c.user, c.password = true, user, password }
}

// WithLog writes what git writes to its standard error, and the server's
// own errors, to w, one message per Write. By default [NewServer] logs them
// to its test and [Start] discards them.
func WithLog(w io.Writer) Option {
	return func(c *config) { c.log = w }
}

// A Server is a Git smart-HTTP server on 127.0.0.1 made by [NewServer] or
// [Start]. Its methods are safe for concurrent use.
type Server struct {
	cfg  config
	http *httptest.Server
	cgi  *cgi.Handler
	logf func(format string, args ...any)

	closeOnce sync.Once

	mu        sync.Mutex
	fault     Fault
	onRequest func(*http.Request)
	counts    map[string]int
	closed    bool   // no more logging to the test
	release   func() // lets the port go after Close

	holdPort bool     // Close keeps the port bound (NewServer: until the test ends)
	remove   []string // directories Close removes (Start's temporary ones)
}

// NewServer starts a server on 127.0.0.1 that serves the bare repositories
// below its root directory (see [WithRoot]) and closes it with t.Cleanup.
// It fails the test if git http-backend cannot be found; it looks for it in
// the directory git --exec-path names. The output git writes to its
// standard error is logged to t (or to [WithLog]'s writer).
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.root == "" {
		cfg.root = t.TempDir()
	}
	logf := t.Logf
	if cfg.log != nil {
		logf = nil
	}
	s, err := start(cfg, t.TempDir(), logf)
	if err != nil {
		t.Fatalf("gittest: %v", err)
	}
	s.holdPort = true
	// Close, then let the port go once the test is over.
	t.Cleanup(s.releasePort)
	t.Cleanup(s.Close)
	return s
}

// Start starts a server like [NewServer] for programs that are not tests,
// such as load drivers: without [WithRoot] it serves a new temporary
// directory, git's output is discarded unless [WithLog] says where to write
// it, and errors are returned instead of failing a test. The caller must
// call [Server.Close], which stops the server, lets its port go at once and
// removes the temporary directories Start made (a [WithRoot] directory is
// kept).
func Start(opts ...Option) (*Server, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	var remove []string
	cleanup := func() {
		for _, d := range remove {
			_ = os.RemoveAll(d)
		}
	}
	if cfg.root == "" {
		dir, err := os.MkdirTemp("", "gittest-root-*")
		if err != nil {
			return nil, fmt.Errorf("gittest: %w", err)
		}
		remove = append(remove, dir)
		cfg.root = dir
	}
	home, err := os.MkdirTemp("", "gittest-home-*")
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("gittest: %w", err)
	}
	remove = append(remove, home)
	if cfg.log == nil {
		cfg.log = io.Discard
	}
	s, err := start(cfg, home, nil)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("gittest: %w", err)
	}
	s.remove = remove
	return s, nil
}

// start starts a server with git's home directory home, logging through
// logf, or to cfg.log when logf is nil.
func start(cfg config, home string, logf func(format string, args ...any)) (*Server, error) {
	root, err := filepath.Abs(cfg.root)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(root, 0o777); err != nil {
		return nil, err
	}
	cfg.root = root
	backend, err := httpBackend()
	if err != nil {
		return nil, err
	}
	user := "anonymous"
	if cfg.auth {
		user = cfg.user
	}
	if logf == nil {
		w := cfg.log
		logf = func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	}
	s := &Server{cfg: cfg, counts: make(map[string]int)}
	s.logf = func(format string, args ...any) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.closed {
			logf(format, args...)
		}
	}
	logw := logWriter{s}
	s.cgi = &cgi.Handler{
		Path: backend,
		Dir:  home,
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER=" + user,
			"HOME=" + home,
			"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_COUNT=3",
			"GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=true",
			"GIT_CONFIG_KEY_1=receive.autogc", "GIT_CONFIG_VALUE_1=false",
			"GIT_CONFIG_KEY_2=gc.auto", "GIT_CONFIG_VALUE_2=0",
		},
		Logger: log.New(logw, "gittest: ", 0),
		Stderr: logw,
	}
	s.http = httptest.NewServer(http.HandlerFunc(s.serve))
	return s, nil
}

// httpBackend returns the path of git http-backend.
var httpBackend = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return "", fmt.Errorf("git --exec-path: %w", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
})

// logWriter logs what git and the CGI handler write to the server's test.
type logWriter struct{ s *Server }

func (w logWriter) Write(p []byte) (int, error) {
	w.s.logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// URL returns the address of the repository called name, a path relative
// to the server's root with slashes, such as "config.git" or
// "team/config.git": http://127.0.0.1:PORT/<name>. URL("") is the root
// address, ending in a slash.
func (s *Server) URL(name string) string {
	return s.http.URL + "/" + strings.TrimPrefix(name, "/")
}

// Path returns the directory of the bare repository called name (see
// [Server.URL]) on disk. The directory need not exist.
func (s *Server) Path(name string) string {
	return filepath.Join(s.cfg.root, filepath.FromSlash(name))
}

// Root returns the directory whose bare repositories the server serves.
func (s *Server) Root() string {
	return s.cfg.root
}

// Close stops the server: it stops listening, so new connections are
// refused like those to a remote that is down, closes idle connections and
// waits for the requests being served to finish. On Unix the port of a
// server made by [NewServer] stays bound until the test ends, so that no
// listener that asks for a free port, in this process or another, is given
// it and connections to [Server.URL] go on being refused; elsewhere, and for
// a server made by [Start], the port is free again at once. Close may be
// called more than once; NewServer's cleanup calls it too.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		if s.holdPort {
			s.takeOverPort()
		}
	})
	s.http.Close()
	s.mu.Lock()
	s.closed = true
	remove := s.remove
	s.remove = nil
	s.mu.Unlock()
	for _, d := range remove {
		_ = os.RemoveAll(d)
	}
}

// takeOverPort closes the listener and holds its port in its place. It
// does not wait for httptest's Close, which returns only once the requests
// being served are done.
func (s *Server) takeOverPort() {
	release, err := closeAndHold(s.http.Listener)
	if err != nil {
		s.logf("gittest: keeping the port after Close: %v", err)
		return
	}
	s.mu.Lock()
	s.release = release
	s.mu.Unlock()
}

// releasePort lets the port go after Close.
func (s *Server) releasePort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.release != nil {
		s.release()
	}
}

// SetFault makes the server fail the requests it receives from now on the
// way f describes, until it is called again. [FaultNone] serves normally.
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// OnRequest makes the server call f at the start of each request it
// receives, before anything else, including faults, authentication and
// counting; nil removes it. f runs on the request's goroutine, so it is
// called concurrently for concurrent requests, and the request waits for it:
// f may change a repository (for example make a commit with gitrepo.Commit
// right before a push arrives), or call [Server.SetFault] to fail the very
// request it is called for. f must not read r.Body.
func (s *Server) OnRequest(f func(r *http.Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onRequest = f
}

// Count returns how many POST requests for service, [UploadPack] (the
// second half of a fetch or clone) or [ReceivePack] (the second half of a
// push), the server has received for all repositories, including those a
// fault failed or that failed authentication. go-git makes one POST per
// clone or fetch; the git command makes two, as with protocol version 2 it
// lists the references with a POST too. A push makes one POST; a push with
// nothing to send, and a client that stops at the references it was
// shown, make none.
func (s *Server) Count(service string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[service]
}

// serve serves one request of a Git client.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	hook := s.onRequest
	s.mu.Unlock()
	if hook != nil {
		hook(r)
	}
	service := ""
	if r.Method == http.MethodPost {
		if base := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]; base == UploadPack || base == ReceivePack {
			service = base
		}
	}
	s.mu.Lock()
	fault := s.fault
	if service != "" {
		s.counts[service]++
	}
	s.mu.Unlock()

	switch fault {
	case FaultRefuse:
		s.hangUp(w)
		return
	case FaultUnavailable:
		http.Error(w, "gittest: service unavailable", http.StatusServiceUnavailable)
		return
	}
	if s.cfg.auth && !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
		http.Error(w, "gittest: authentication required", http.StatusUnauthorized)
		return
	}

	// git http-backend reads a request body of unknown length until its
	// end, but net/http/cgi refuses chunked bodies, which git sends for
	// pushes larger than http.postBuffer. The server has already decoded
	// the chunks, so pass the body on as one of unknown length. git does
	// not see the client's credentials.
	req := r.Clone(r.Context())
	req.Header.Del("Authorization")
	if len(req.TransferEncoding) > 0 {
		req.TransferEncoding = nil
		req.ContentLength = -1
	}

	switch {
	case fault == FaultCutPush && service == ReceivePack:
		if _, err := io.CopyN(io.Discard, r.Body, cutPushBytes); err != nil {
			s.logf("gittest: FaultCutPush: reading the request body: %v", err)
		}
		s.hangUp(w)
	case fault == FaultCutAfterPush && service == ReceivePack:
		rec := httptest.NewRecorder()
		s.cgi.ServeHTTP(rec, req)
		s.hangUp(w)
	default:
		s.cgi.ServeHTTP(w, req)
	}
}

// authorized reports whether r carries the server's credentials.
func (s *Server) authorized(r *http.Request) bool {
	user, password, ok := r.BasicAuth()
	userOK := subtle.ConstantTimeCompare([]byte(user), []byte(s.cfg.user))
	passwordOK := subtle.ConstantTimeCompare([]byte(password), []byte(s.cfg.password))
	return ok && userOK&passwordOK == 1
}

// hangUp closes the request's connection without an answer.
func (s *Server) hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not reached with HTTP/1.1, the only protocol the server speaks.
		s.logf("gittest: hijacking the connection: %v", err)
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}
