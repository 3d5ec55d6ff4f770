package certs_test

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/internal/auth/authtest"
	"github.com/cup-dev/cup/internal/auth/certs"
	"github.com/cup-dev/cup/internal/testlog"
)

// serverCert is a certificate for cupd on 127.0.0.1 signed by ca, with
// serial as its serial number.
func serverCert(t *testing.T, ca *authtest.CA, serial int64) *authtest.KeyPair {
	t.Helper()
	return ca.Issue(t, x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "cupd"},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// writeFile replaces path's content by data, through a rename as
// certificate tools do.
func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// serverFiles writes a CA's certificate and a server certificate signed by
// it, and returns the TLSConfig naming them.
func serverFiles(t *testing.T, ca *authtest.CA, serial int64) certs.TLSConfig {
	t.Helper()
	dir := t.TempDir()
	cfg := certs.TLSConfig{
		CertFile:     filepath.Join(dir, "server.crt"),
		KeyFile:      filepath.Join(dir, "server.key"),
		ClientCAFile: filepath.Join(dir, "ca.crt"),
	}
	server := serverCert(t, ca, serial)
	writeFile(t, cfg.CertFile, server.CertPEM)
	writeFile(t, cfg.KeyFile, server.KeyPEM)
	writeFile(t, cfg.ClientCAFile, ca.PEM())
	return cfg
}

// serve serves HTTPS on 127.0.0.1 with cfg; each request answers with the
// identity ClientCertificates finds, as JSON, or 401 and the error.
func serve(t *testing.T, cfg certs.TLSConfig) string {
	t.Helper()
	tc, err := certs.ServerTLS(cfg)
	if err != nil {
		t.Fatalf("ServerTLS: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, err := certs.ClientCertificates{}.Authenticate(r)
			if err != nil {
				w.WriteHeader(http.StatusUnauthorized)
				kind := "other"
				switch {
				case errors.Is(err, auth.ErrNoCredentials):
					kind = "no credentials"
				case errors.Is(err, auth.ErrUnauthenticated):
					kind = "unauthenticated"
				}
				io.WriteString(w, kind+": "+err.Error())
				return
			}
			json.NewEncoder(w).Encode(id)
		}),
		ErrorLog: log.New(io.Discard, "", 0), // refused handshakes are expected
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(tls.NewListener(ln, tc))
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// get fetches / from addr over TLS, trusting ca, presenting certs.
func get(t *testing.T, addr string, ca *authtest.CA, certs ...tls.Certificate) (int, string, error) {
	t.Helper()
	tc := &tls.Config{RootCAs: ca.Pool()}
	if len(certs) > 0 {
		// Send the certificate even if the server names other authorities
		// (Go's client would send none then), to see the server refuse it.
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &certs[0], nil }
	}
	tr := &http.Transport{TLSClientConfig: tc}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + addr + "/")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func TestClientCertificates(t *testing.T) {
	t.Parallel()
	ca, otherCA := authtest.NewCA(t, "cup test CA"), authtest.NewCA(t, "another CA")
	cfg := serverFiles(t, ca, 1)
	optional := serve(t, cfg)
	cfg.RequireClientCert = true
	required := serve(t, cfg)

	alice := ca.Client(t, pkix.Name{CommonName: "alice", Organization: []string{"flag-admins", "viewers"}}).Certificate
	noCN := ca.Client(t, pkix.Name{Organization: []string{"flag-admins"}}).Certificate
	mallory := otherCA.Client(t, pkix.Name{CommonName: "mallory", Organization: []string{"flag-admins"}}).Certificate

	tests := []struct {
		name    string
		addr    string
		certs   []tls.Certificate
		want    *auth.Identity
		wantMsg string // part of the 401 body
		wantErr bool   // the connection fails
	}{
		{name: "optional: verified client", addr: optional, certs: []tls.Certificate{alice}, want: &auth.Identity{User: "alice", Groups: []string{"flag-admins", "viewers"}, Method: "certificate"}},
		{name: "optional: no certificate", addr: optional, wantMsg: "no credentials: no verified client certificate"},
		{name: "optional: no common name", addr: optional, certs: []tls.Certificate{noCN}, wantMsg: "unauthenticated: "},
		{name: "optional: another CA", addr: optional, certs: []tls.Certificate{mallory}, wantErr: true},
		{name: "required: verified client", addr: required, certs: []tls.Certificate{alice}, want: &auth.Identity{User: "alice", Groups: []string{"flag-admins", "viewers"}, Method: "certificate"}},
		{name: "required: no certificate", addr: required, wantErr: true},
		{name: "required: another CA", addr: required, certs: []tls.Certificate{mallory}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, body, err := get(t, tt.addr, ca, tt.certs...)
			switch {
			case tt.wantErr:
				if err == nil {
					t.Fatalf("GET succeeded (%d %s), want the handshake refused", code, body)
				}
			case err != nil:
				t.Fatalf("GET: %v", err)
			case tt.want != nil:
				var id auth.Identity
				if code != http.StatusOK || json.Unmarshal([]byte(body), &id) != nil {
					t.Fatalf("GET = %d %s, want an identity", code, body)
				}
				// DER sorts the organizations of a subject.
				slices.Sort(id.Groups)
				if id.User != tt.want.User || !slices.Equal(id.Groups, tt.want.Groups) || id.Method != tt.want.Method {
					t.Errorf("identity = %+v, want %+v", id, tt.want)
				}
			default:
				if code != http.StatusUnauthorized || !strings.Contains(body, tt.wantMsg) {
					t.Errorf("GET = %d %q, want 401 saying %q", code, body, tt.wantMsg)
				}
			}
		})
	}
}

func TestClientCertificatesWithoutTLS(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("GET", "/", nil)
	if _, err := (certs.ClientCertificates{}).Authenticate(r); !errors.Is(err, auth.ErrNoCredentials) {
		t.Errorf("plain HTTP: error = %v, want ErrNoCredentials", err)
	}
	// A certificate the server did not verify does not count.
	ca := authtest.NewCA(t, "ca")
	alice := ca.Client(t, pkix.Name{CommonName: "alice"}).Certificate
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{alice.Leaf}}
	if _, err := (certs.ClientCertificates{}).Authenticate(r); !errors.Is(err, auth.ErrNoCredentials) {
		t.Errorf("unverified certificate: error = %v, want ErrNoCredentials", err)
	}
}

func TestServerTLSConfig(t *testing.T) {
	t.Parallel()
	ca := authtest.NewCA(t, "ca")
	files := serverFiles(t, ca, 1)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	tests := []struct {
		name       string
		cfg        certs.TLSConfig
		wantAuth   tls.ClientAuthType
		wantErrMsg string
	}{
		{name: "server only", cfg: certs.TLSConfig{CertFile: files.CertFile, KeyFile: files.KeyFile}, wantAuth: tls.NoClientCert},
		{name: "optional client certificates", cfg: files, wantAuth: tls.VerifyClientCertIfGiven},
		{name: "required client certificates", cfg: certs.TLSConfig{CertFile: files.CertFile, KeyFile: files.KeyFile, ClientCAFile: files.ClientCAFile, RequireClientCert: true}, wantAuth: tls.RequireAndVerifyClientCert},
		{name: "no key file", cfg: certs.TLSConfig{CertFile: files.CertFile}, wantErrMsg: "key file"},
		{name: "required without CA", cfg: certs.TLSConfig{CertFile: files.CertFile, KeyFile: files.KeyFile, RequireClientCert: true}, wantErrMsg: "client CA file"},
		{name: "missing certificate", cfg: certs.TLSConfig{CertFile: missing, KeyFile: files.KeyFile}, wantErrMsg: "certificate file"},
		{name: "key does not match", cfg: certs.TLSConfig{CertFile: files.CertFile, KeyFile: files.ClientCAFile}, wantErrMsg: "loading"},
		{name: "missing client CA", cfg: certs.TLSConfig{CertFile: files.CertFile, KeyFile: files.KeyFile, ClientCAFile: missing}, wantErrMsg: "client CA file"},
		{name: "client CA not PEM", cfg: certs.TLSConfig{CertFile: files.CertFile, KeyFile: files.KeyFile, ClientCAFile: files.KeyFile}, wantErrMsg: "no PEM certificates"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := certs.ServerTLS(tt.cfg)
			if tt.wantErrMsg != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrMsg) {
					t.Errorf("ServerTLS() error = %v, want it to say %q", err, tt.wantErrMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("ServerTLS() error = %v", err)
			}
			if c.ClientAuth != tt.wantAuth {
				t.Errorf("ClientAuth = %v, want %v", c.ClientAuth, tt.wantAuth)
			}
			if c.MinVersion != tls.VersionTLS12 {
				t.Errorf("MinVersion = %x, want TLS 1.2", c.MinVersion)
			}
			if !slices.Contains(c.NextProtos, "h2") || !slices.Contains(c.NextProtos, "http/1.1") {
				t.Errorf("NextProtos = %v, want h2 and http/1.1", c.NextProtos)
			}
		})
	}
}

// handshake connects to addr and returns the serial number of the server's
// certificate and the protocol ALPN chose.
func handshake(t *testing.T, addr string, ca *authtest.CA, protos ...string) (int64, string) {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), NextProtos: protos})
	if err != nil {
		t.Fatalf("tls.Dial: %v", err)
	}
	defer conn.Close()
	st := conn.ConnectionState()
	return st.PeerCertificates[0].SerialNumber.Int64(), st.NegotiatedProtocol
}

func TestServerTLSProtocols(t *testing.T) {
	t.Parallel()
	ca := authtest.NewCA(t, "ca")
	addr := serve(t, serverFiles(t, ca, 1))
	for _, proto := range []string{"h2", "http/1.1"} {
		if _, got := handshake(t, addr, ca, proto); got != proto {
			t.Errorf("ALPN offering %s chose %q", proto, got)
		}
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("https://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Errorf("HTTP/2 client got %s", resp.Proto)
	}
	if _, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), MaxVersion: tls.VersionTLS11}); err == nil {
		t.Error("a TLS 1.1 handshake succeeded")
	}
}

func TestServerCertificateReload(t *testing.T) {
	t.Parallel()
	ca := authtest.NewCA(t, "ca")
	cfg := serverFiles(t, ca, 1)
	renewed, mismatched := serverCert(t, ca, 2), serverCert(t, ca, 3)
	// In a bubble the check interval passes at once. The server asks the
	// configuration's GetCertificate on every handshake.
	synctest.Test(t, func(t *testing.T) {
		var logs testlog.Buffer
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		tc, err := certs.ServerTLS(cfg)
		if err != nil {
			t.Fatal(err)
		}
		serial := func() int64 {
			t.Helper()
			c, err := tc.GetCertificate(&tls.ClientHelloInfo{ServerName: "127.0.0.1"})
			if err != nil {
				t.Fatalf("GetCertificate: %v", err)
			}
			leaf, err := x509.ParseCertificate(c.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			return leaf.SerialNumber.Int64()
		}
		if got := serial(); got != 1 {
			t.Fatalf("serial = %d, want 1", got)
		}

		writeFile(t, cfg.KeyFile, renewed.KeyPEM)
		writeFile(t, cfg.CertFile, renewed.CertPEM)
		if got := serial(); got != 1 {
			t.Errorf("serial = %d before the check interval passed, want 1 (the files are looked at once a second)", got)
		}
		time.Sleep(time.Second)
		if got := serial(); got != 2 {
			t.Fatalf("serial = %d a second after the renewal, want 2", got)
		}

		// A certificate whose key is not there yet: the previous pair stays.
		writeFile(t, cfg.CertFile, mismatched.CertPEM)
		time.Sleep(time.Second)
		for range 2 {
			if got := serial(); got != 2 {
				t.Fatalf("after a mismatched pair: serial = %d, want 2", got)
			}
		}
		time.Sleep(time.Second)
		if got := serial(); got != 2 {
			t.Fatalf("a second after a mismatched pair: serial = %d, want 2", got)
		}
		got := logs.String()
		if !strings.Contains(got, "reloaded the TLS certificate") {
			t.Errorf("log = %q, want the reload", got)
		}
		if n := strings.Count(got, "reloading the TLS certificate failed"); n != 1 {
			t.Errorf("log = %q, want the failed reload once", got)
		}
	})
}
