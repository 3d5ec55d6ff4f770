package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"connectrpc.com/connect"
)

// newHTTPClient returns the HTTP client for s: the Connect protocol over
// HTTP/1.1 or HTTP/2, gRPC over HTTP/2 only (negotiated by ALPN over TLS,
// with prior knowledge over cleartext), and TLS as s.tls says.
// asked is set when a server asks for a client certificate.
func newHTTPClient(s settings, asked *atomic.Bool) (*http.Client, error) {
	cfg, err := s.tls.config(asked)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	if s.protocol == "grpc" {
		p := new(http.Protocols)
		p.SetHTTP2(true)
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = p
		if !strings.HasPrefix(s.server, "https://") {
			// Cleartext HTTP/2 does not go through an HTTP proxy.
			tr.Proxy = nil
		}
	}
	return &http.Client{Transport: tr}, nil
}

// config reads the files t names and returns the client's TLS
// configuration, which sets asked when a server asks for a client
// certificate.
func (t tlsSettings) config(asked *atomic.Bool) (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: t.insecureSkipTLSVerify, //nolint:gosec // asked for, and warned about
	}
	if t.certificateAuthority != "" {
		b, err := os.ReadFile(t.certificateAuthority)
		if err != nil {
			return nil, fmt.Errorf("reading the certificate authority: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("the certificate authority %s holds no PEM certificate", t.certificateAuthority)
		}
		cfg.RootCAs = pool
	}
	pair := new(tls.Certificate) // empty: none is sent
	if t.clientCertificate != "" {
		p, err := tls.LoadX509KeyPair(t.clientCertificate, t.clientKey)
		if err != nil {
			return nil, fmt.Errorf("loading the client certificate %s with key %s: %w", t.clientCertificate, t.clientKey, err)
		}
		pair = &p
	}
	// The certificate is offered whatever CAs the server names as
	// acceptable, so that a refusal comes with the server's reason.
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		asked.Store(true)
		return pair, nil
	}
	return cfg, nil
}

// bearer sends a token in the Authorization header of every call: token,
// or else the content of file, read before every call (trimmed of white
// space) so that a short-lived token that another process rotates is
// picked up, even during a long edit.
type bearer struct {
	token, file string
}

func (b bearer) interceptor() connect.Interceptor { return bearerInterceptor{b} }

func (b bearer) get() (string, error) {
	if b.token != "" {
		return b.token, nil
	}
	data, err := os.ReadFile(b.file)
	if err != nil {
		return "", fmt.Errorf("reading the token: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("the token file %s is empty", b.file)
	}
	if strings.ContainsAny(token, "\r\n") {
		return "", fmt.Errorf("the token file %s holds more than one line", b.file)
	}
	return token, nil
}

// hint says what the user can do about err, or "" when cup has no advice:
// how to give credentials when the server wants them, and which TLS
// setting to look at when the handshake fails.
func (c *cli) hint(err error) string {
	var ce *connect.Error
	if errors.As(err, &ce) && ce.Code() == connect.CodeUnauthenticated {
		const how = "--token, --token-file, CUP_TOKEN or CUP_TOKEN_FILE, or keep one in a context (cup config set-context NAME --token-file FILE)"
		if c.conn != nil && c.conn.credentials {
			return "the server did not accept the credentials sent; give others with " + how
		}
		return "the server wants credentials: give a bearer token with " + how
	}
	var unknown x509.UnknownAuthorityError
	if errors.As(err, &unknown) {
		return "the server's certificate is signed by a certificate authority cup does not trust; give the right one with --certificate-authority FILE"
	}
	var host x509.HostnameError
	if errors.As(err, &host) {
		return "the server's certificate is not for the host in the server's URL; use a name the certificate lists"
	}
	if c.conn == nil || !c.conn.certAsked.Load() || !transportError(err) {
		return ""
	}
	// The server asked for a client certificate and then dropped the
	// connection. In TLS 1.3 the server checks the client's certificate
	// after the client has finished its handshake, so its refusal may
	// arrive as an alert or as a reset connection.
	if !c.conn.clientCert {
		return "the server asks for a client certificate: give one with --client-certificate FILE and --client-key FILE"
	}
	if strings.Contains(err.Error(), "remote error: tls: ") {
		return "the server refused the client certificate; it must be signed by a certificate authority the server trusts for clients"
	}
	return ""
}

// transportError reports whether err is a failure to exchange a call with
// the server rather than the server's answer, which comes with the
// response's headers.
func transportError(err error) bool {
	var ce *connect.Error
	return errors.As(err, &ce) && len(ce.Meta()) == 0
}
