package main

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"

	"github.com/cup-dev/cup/internal/auth/authtest"
	"github.com/cup-dev/cup/server"
)

var protocols = []string{"connect", "grpc"}

func TestTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pki := authtest.NewPKI(t)
	otherCAFile := authtest.NewCA(t, "other").WriteFile(t, filepath.Join(dir, "other.pem"))
	noPEM := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(noPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	url := serveTLS(t, rec.wrap(newHandler(t)), &tls.Config{Certificates: []tls.Certificate{pki.Server.Certificate}})

	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			p := []string{"--protocol", proto}
			got := ok(t, url, append(p, "--certificate-authority", pki.CAFile, "get", "flags", "-o", "name")...)
			if !strings.Contains(got, "flags.flags.cup.dev/search-v2") {
				t.Errorf("get flags: %q", got)
			}
			if got := rec.grpcProto(); proto == "grpc" && got != "HTTP/2.0" {
				t.Errorf("gRPC calls came over %q, want HTTP/2.0 (by ALPN)", got)
			}

			// Only the given CA is trusted: not the system's roots, not another CA.
			fails(t, url, "x509: certificate signed by unknown authority", append(p, "--certificate-authority", otherCAFile, "get", "flags")...)
			r := cup(t, url, "", append(p, "get", "flags")...)
			if r.code != 1 || !strings.Contains(r.stderr, "x509: certificate signed by unknown authority") ||
				!strings.Contains(r.stderr, "\nhint: the server's certificate is signed by a certificate authority cup does not trust; give the right one with --certificate-authority FILE\n") {
				t.Errorf("without --certificate-authority: exit %d, stderr:\n%s", r.code, r.stderr)
			}

			r = cup(t, url, "", append(p, "--insecure-skip-tls-verify", "get", "flags", "-o", "name")...)
			if r.code != 0 || r.stdout != got || !strings.HasPrefix(r.stderr, "warning: insecure-skip-tls-verify is set: ") {
				t.Errorf("--insecure-skip-tls-verify: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
			}
			fails(t, url, "--certificate-authority and --insecure-skip-tls-verify do not go together",
				append(p, "--certificate-authority", pki.CAFile, "--insecure-skip-tls-verify", "get", "flags")...)
			fails(t, url, "the certificate authority "+noPEM+" holds no PEM certificate", append(p, "--certificate-authority", noPEM, "get", "flags")...)
			fails(t, url, "reading the certificate authority: open "+filepath.Join(dir, "missing.pem"),
				append(p, "--certificate-authority", filepath.Join(dir, "missing.pem"), "get", "flags")...)
		})
	}
}

func TestClientCertificate(t *testing.T) {
	t.Parallel()
	pki := authtest.NewPKI(t)
	cert, key := pki.CA.Client(t, pkix.Name{CommonName: "ann"}).WriteFiles(t, pki.Dir, "ann")
	otherCert, otherKey := authtest.NewCA(t, "other").Client(t, pkix.Name{CommonName: "mallory"}).WriteFiles(t, pki.Dir, "mallory")
	pool := pki.CA.Pool()
	url := serveTLS(t, newHandler(t), &tls.Config{
		Certificates: []tls.Certificate{pki.Server.Certificate},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	})

	// A server that asks for a client certificate but takes a token too,
	// answering with an error of its own: no hint about certificates.
	ew := connect.NewErrorWriter()
	optional := serveTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = ew.Write(w, r, connect.NewError(connect.CodeUnavailable, errors.New("cannot check credentials now")))
	}), &tls.Config{
		Certificates: []tls.Certificate{pki.Server.Certificate},
		ClientCAs:    pool,
		ClientAuth:   tls.VerifyClientCertIfGiven,
	})

	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			p := []string{"--protocol", proto, "--certificate-authority", pki.CAFile}
			if r := cup(t, optional, "", append(p, "--token", "t", "get", "flags")...); r.code != 1 || r.stderr != "error: cannot check credentials now\n" {
				t.Errorf("optional client certificate: exit %d, stderr:\n%s", r.code, r.stderr)
			}
			got := ok(t, url, append(p, "--client-certificate", cert, "--client-key", key, "get", "flags", "-o", "name")...)
			if !strings.Contains(got, "flags.flags.cup.dev/search-v2") {
				t.Errorf("get flags: %q", got)
			}
			r := cup(t, url, "", append(p, "get", "flags")...)
			// The refusal is an alert or a reset connection, depending on
			// which arrives first; the hint is the same.
			if r.code != 1 || !strings.HasPrefix(r.stderr, "error: ") ||
				!strings.HasSuffix(r.stderr, "\nhint: the server asks for a client certificate: give one with --client-certificate FILE and --client-key FILE\n") {
				t.Errorf("without a client certificate: exit %d, stderr:\n%s", r.code, r.stderr)
			}
			if r := cup(t, url, "", append(p, "--client-certificate", otherCert, "--client-key", otherKey, "get", "flags")...); r.code != 1 || !strings.HasPrefix(r.stderr, "error: ") {
				t.Errorf("a client certificate of another CA: exit %d, stderr:\n%s", r.code, r.stderr)
			}
			fails(t, url, "--client-certificate needs --client-key", append(p, "--client-certificate", cert, "get", "flags")...)
			fails(t, url, "--client-key needs --client-certificate", append(p, "--client-key", key, "get", "flags")...)
			fails(t, url, "loading the client certificate "+cert+" with key "+otherKey+": tls: private key does not match public key",
				append(p, "--client-certificate", cert, "--client-key", otherKey, "get", "flags")...)
		})
	}
}

func TestTokenFile(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	url := serve(t, rec.wrap(newHandler(t)))
	file := filepath.Join(t.TempDir(), "token")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, proto := range protocols { // not parallel: they share the recorder and the file
		p := []string{"--protocol", proto}
		write("  token-1\n")
		ok(t, url, append(p, "--token-file", file, "get", "flags")...)
		if got := rec.authorization(); got != "Bearer token-1" {
			t.Errorf("%s: Authorization %q, want the file's token", proto, got)
		}
		write("token-2") // rotated: read again on the next run
		ok(t, url, append(p, "--token-file", file, "get", "flags")...)
		if got := rec.authorization(); got != "Bearer token-2" {
			t.Errorf("%s: Authorization %q after rotation", proto, got)
		}
		ok(t, url, append(p, "--token", "flag-token", "--token-file", file, "get", "flags")...)
		if got := rec.authorization(); got != "Bearer flag-token" {
			t.Errorf("%s: Authorization %q, want --token to win", proto, got)
		}
		write(" \n")
		fails(t, url, "the token file "+file+" is empty", append(p, "--token-file", file, "get", "flags")...)
		write("a\nb\n")
		fails(t, url, "the token file "+file+" holds more than one line", append(p, "--token-file", file, "get", "flags")...)
		fails(t, url, "reading the token: open "+file+".missing", append(p, "--token-file", file+".missing", "get", "flags")...)
	}
}

func TestCredentialsConfig(t *testing.T) { // not parallel: it sets the environment and the working directory
	pki := authtest.NewPKI(t) // its CA is ca.pem in pki.Dir
	dir := pki.Dir
	t.Chdir(dir)
	cert, key := pki.CA.Client(t, pkix.Name{CommonName: "ann"}).WriteFiles(t, dir, "ann")
	rec := &recorder{}
	url := serveTLS(t, rec.wrap(newHandler(t)), &tls.Config{
		Certificates: []tls.Certificate{pki.Server.Certificate},
		ClientCAs:    pki.CA.Pool(),
		ClientAuth:   tls.RequireAndVerifyClientCert,
	})
	if err := os.WriteFile("token", []byte("file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "cfg", "config.yaml")
	t.Setenv("CUP_CONFIG", cfg)

	// Relative paths are stored absolute.
	ok(t, "", "config", "set-context", "tls", "--server", url, "--protocol", "grpc", "--token-file", "token",
		"--certificate-authority", "ca.pem", "--client-certificate", filepath.Base(cert), "--client-key", filepath.Base(key))
	view := ok(t, "", "config", "view")
	for _, want := range []string{
		"certificateAuthority: " + pki.CAFile, "clientCertificate: " + cert, "clientKey: " + key, "tokenFile: " + filepath.Join(dir, "token"),
	} {
		if !strings.Contains(view, want+"\n") {
			t.Errorf("config view lacks %q:\n%s", want, view)
		}
	}
	ok(t, "", "get", "flags")
	if got := rec.authorization(); got != "Bearer file-token" {
		t.Errorf("Authorization %q, want the context's token file", got)
	}

	// The environment overrides the context, pair by pair.
	if err := os.WriteFile("env-token", []byte("env-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CUP_TOKEN_FILE", filepath.Join(dir, "env-token"))
	ok(t, "", "get", "flags")
	if got := rec.authorization(); got != "Bearer env-token" {
		t.Errorf("Authorization %q, want CUP_TOKEN_FILE's", got)
	}
	os.Unsetenv("CUP_TOKEN_FILE")
	t.Setenv("CUP_CLIENT_KEY", key)
	fails(t, "", "CUP_CLIENT_KEY needs CUP_CLIENT_CERTIFICATE", "get", "flags")
	os.Unsetenv("CUP_CLIENT_KEY")

	// A token replaces the token file; skipping verification replaces the CA.
	ok(t, "", "config", "set-context", "tls", "--token", "s3cret", "--insecure-skip-tls-verify")
	view = ok(t, "", "config", "view")
	if strings.Contains(view, "tokenFile") || strings.Contains(view, "certificateAuthority") || !strings.Contains(view, "insecureSkipTLSVerify: true\n") {
		t.Errorf("config view:\n%s", view)
	}
	r := cup(t, "", "", "get", "flags")
	if r.code != 0 || !strings.HasPrefix(r.stderr, "warning: insecure-skip-tls-verify is set") {
		t.Errorf("insecure context: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if got := rec.authorization(); got != "Bearer s3cret" {
		t.Errorf("Authorization %q, want the context's token", got)
	}
	// A CA in the environment hides the context's insecureSkipTLSVerify.
	t.Setenv("CUP_CERTIFICATE_AUTHORITY", pki.CAFile)
	if r := cup(t, "", "", "get", "flags"); r.code != 0 || r.stderr != "" {
		t.Errorf("CUP_CERTIFICATE_AUTHORITY: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	os.Unsetenv("CUP_CERTIFICATE_AUTHORITY")
	ok(t, "", "config", "set-context", "tls", "--certificate-authority", pki.CAFile)
	if view = ok(t, "", "config", "view"); strings.Contains(view, "insecureSkipTLSVerify") {
		t.Errorf("a CA should turn insecureSkipTLSVerify off:\n%s", view)
	}
	fails(t, "", "--certificate-authority and --insecure-skip-tls-verify do not go together",
		"config", "set-context", "tls", "--certificate-authority", pki.CAFile, "--insecure-skip-tls-verify")
	fails(t, "", "--client-certificate needs --client-key", "config", "set-context", "tls", "--client-key", "")

	// Relative paths written into the file are relative to its directory.
	for _, f := range []string{"ca.pem", cert, key} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cfg", filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(cfg, []byte(`currentContext: rel
contexts:
- name: rel
  server: `+url+`
  certificateAuthority: ca.pem
  clientCertificate: `+filepath.Base(cert)+`
  clientKey: `+filepath.Base(key)+`
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	ok(t, "", "get", "flags")
	if got := rec.authorization(); got != "" {
		t.Errorf("Authorization %q, want none", got)
	}
}

func TestAuthErrors(t *testing.T) {
	t.Parallel()
	refuse := func(code connect.Code, msg string) string {
		ew := connect.NewErrorWriter()
		return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = ew.Write(w, r, connect.NewError(code, errors.New(msg)))
		}))
	}
	const noCredentials = "no credentials: send a bearer token in the Authorization header"
	unauthenticated := refuse(connect.CodeUnauthenticated, noCredentials)
	const denied = `user "ann" may not list flags.flags.cup.dev in namespace "default": ask an administrator for a role that grants it`
	permissionDenied := refuse(connect.CodePermissionDenied, denied)

	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			tests := []struct {
				name   string
				url    string
				args   []string
				stderr string
			}{{
				name: "unauthenticated",
				url:  unauthenticated,
				stderr: "error: " + noCredentials + "\n" +
					"hint: the server wants credentials: give a bearer token with --token, --token-file, CUP_TOKEN or CUP_TOKEN_FILE, or keep one in a context (cup config set-context NAME --token-file FILE)\n",
			}, {
				name: "token refused",
				url:  unauthenticated,
				args: []string{"--token", "expired"},
				stderr: "error: " + noCredentials + "\n" +
					"hint: the server did not accept the credentials sent; give others with --token, --token-file, CUP_TOKEN or CUP_TOKEN_FILE, or keep one in a context (cup config set-context NAME --token-file FILE)\n",
			}, {
				name:   "permission denied",
				url:    permissionDenied,
				args:   []string{"--token", "ann"},
				stderr: "error: " + denied + "\n",
			}}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel()
					r := cup(t, tt.url, "", append(tt.args, "--protocol", proto, "get", "flags")...)
					if r.code != 1 || r.stdout != "" || r.stderr != tt.stderr {
						t.Errorf("exit %d, stdout %q\nstderr: %q\nwant:   %q", r.code, r.stdout, r.stderr, tt.stderr)
					}
				})
			}
		})
	}
}

// serveTLS serves h over TLS with cfg, offering HTTP/2 and HTTP/1.1 by
// ALPN as cupd does, and returns its https:// URL.
func serveTLS(t *testing.T, h http.Handler, cfg *tls.Config) string {
	t.Helper()
	cfg.NextProtos = []string{"h2", "http/1.1"}
	ts := httptest.NewUnstartedServer(h)
	ts.Config = server.NewHTTPServer("", h)
	ts.Config.ErrorLog = log.New(t.Output(), "", 0) // failed handshakes
	ts.EnableHTTP2 = true
	ts.TLS = cfg
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return ts.URL
}

// recorder remembers the last request's Authorization header and the
// protocol gRPC calls came over.
type recorder struct {
	mu         sync.Mutex
	auth, grpc string
}

func (rec *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.auth = r.Header.Get("Authorization")
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			rec.grpc = r.Proto
		}
		rec.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (rec *recorder) authorization() string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.auth
}

func (rec *recorder) grpcProto() string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.grpc
}
