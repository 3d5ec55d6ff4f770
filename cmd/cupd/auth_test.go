package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/internal/auth/authtest"
)

// testPKI is a CA with a server certificate for 127.0.0.1, written as PEM
// files, and a client certificate.
type testPKI struct {
	*authtest.PKI
	client tls.Certificate
}

func newTestPKI(t *testing.T, clientCN string, clientOrgs ...string) *testPKI {
	t.Helper()
	p := authtest.NewPKI(t)
	return &testPKI{PKI: p, client: p.CA.Client(t, pkix.Name{CommonName: clientCN, Organization: clientOrgs}).Certificate}
}

// httpClient is an HTTPS client (HTTP/2 when the server offers it)
// trusting the test CA, presenting the client certificate when withCert.
func (p *testPKI) httpClient(withCert bool) *http.Client {
	cfg := &tls.Config{RootCAs: p.CA.Pool(), MinVersion: tls.VersionTLS12}
	if withCert {
		cfg.Certificates = []tls.Certificate{p.client}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
}

// writeTokens writes a tokens file for users (token "token-<user>").
func writeTokens(t *testing.T, users map[string][]string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("tokens:\n")
	for user, groups := range users {
		sum := sha256.Sum256([]byte("token-" + user))
		fmt.Fprintf(&b, "- sha256: %s\n  user: %s\n  groups: [%s]\n", hex.EncodeToString(sum[:]), user, strings.Join(groups, ", "))
	}
	name := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(name, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

func doAs(t *testing.T, hc *http.Client, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

var demoLine = regexp.MustCompile(`demo repository \(([^)]+)\)`)

// TestTLSAndAuthorization runs cupd over TLS with the example policy,
// static tokens and client certificates.
func TestTLSAndAuthorization(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t, "carol", "auditors")
	tokens := writeTokens(t, map[string][]string{"alice": nil, "bob": {"flag-editors"}})
	url, stdout, _ := start(t, "--address", "127.0.0.1:0",
		"--tls-cert-file", pki.CertFile, "--tls-key-file", pki.KeyFile, "--tls-client-ca-file", pki.CAFile,
		"--policy", filepath.Join("..", "..", "examples", "policy", "policy.yaml"), "--tokens-file", tokens)
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("cupd serves %s, want https", url)
	}
	hc, withCert := pki.httpClient(false), pki.httpClient(true)
	flags := url + "/apis/flags.cup.dev/v1alpha1/namespaces/production/flags"
	body := `{"spec": {"enabled": true}}`
	for _, tc := range []struct {
		name, method, url, token string
		hc                       *http.Client
		want                     int
	}{
		{"health needs nothing", "GET", url + "/healthz", "", hc, 200},
		{"no credentials", "GET", flags, "", hc, 401},
		{"unknown token", "GET", flags, "token-mallory", hc, 401},
		{"any caller views", "GET", flags, "token-bob", hc, 200},
		{"editors write in production", "PUT", flags + "/by-bob", "token-bob", hc, 202},
		{"editors do not write elsewhere", "PUT", url + "/apis/flags.cup.dev/v1alpha1/namespaces/staging/flags/by-bob", "token-bob", hc, 403},
		{"admin writes anywhere", "PUT", url + "/apis/flags.cup.dev/v1alpha1/namespaces/staging/flags/by-alice", "token-alice", hc, 202},
		{"a client certificate is an identity", "GET", flags, "", withCert, 200},
		{"a certificate's user may only view", "PUT", flags + "/by-carol", "", withCert, 403},
	} {
		payload := ""
		if tc.method == "PUT" {
			payload = body
		}
		if code, b := doAs(t, tc.hc, tc.method, tc.url, tc.token, payload); code != tc.want {
			t.Errorf("%s: %s %s = %d %s, want %d", tc.name, tc.method, tc.url, code, b, tc.want)
		}
	}

	// The commit names who asked for it.
	m := demoLine.FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("no repository in %q", stdout)
	}
	out, err := exec.Command("git", "-C", m[1], "log", "-2", "--format=%(trailers:key=Requested-by,valueonly)").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(out)); strings.Join(got, ",") != "alice,bob" {
		t.Errorf("Requested-by of the last two commits = %q, want alice then bob", out)
	}

	// gRPC works over TLS (HTTP/2 by ALPN), with a token.
	rs := cupv1alpha1connect.NewResourceServiceClient(hc, url, connect.WithGRPC(), connect.WithInterceptors(connect.UnaryInterceptorFunc(
		func(next connect.UnaryFunc) connect.UnaryFunc {
			return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
				req.Header().Set("Authorization", "Bearer token-bob")
				return next(ctx, req)
			}
		})))
	res, err := rs.Get(t.Context(), connect.NewRequest(&cupv1alpha1.GetRequest{
		Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags", Namespace: "production", Name: "by-bob",
	}))
	if err != nil || res.Msg.GetResource().GetMetadata().GetName() != "by-bob" {
		t.Fatalf("gRPC Get over TLS = %v, %v", res, err)
	}
}

func TestRequireClientCertificate(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t, "alice")
	url, _, _ := start(t, "--address", "127.0.0.1:0",
		"--tls-cert-file", pki.CertFile, "--tls-key-file", pki.KeyFile, "--tls-client-ca-file", pki.CAFile, "--tls-require-client-cert",
		"--policy", filepath.Join("..", "..", "examples", "policy", "policy.yaml"))
	if _, err := pki.httpClient(false).Get(url + "/healthz"); err == nil {
		t.Fatal("a connection without a client certificate was accepted")
	}
	if code, b := doAs(t, pki.httpClient(true), "GET", url+"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags", "", ""); code != 200 {
		t.Fatalf("GET with the client certificate = %d %s", code, b)
	}
}

func TestAuthFlagErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: cup.dev/v1alpha1\nkind: Role\nmetadata: {name: r, namespace: default}\nrules:\n- apiGroups: [x]\n  resources: [y]\n  verbs: [fly]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := writeTokens(t, map[string][]string{"alice": nil})
	policy := filepath.Join("..", "..", "examples", "policy", "policy.yaml")
	for _, tc := range []struct {
		name    string
		args    []string
		mention string
	}{
		{"policy without authentication", []string{"--policy", policy}, "--policy needs a way to authenticate"},
		{"tokens without policy", []string{"--tokens-file", tokens}, "need --policy"},
		{"client CA without TLS", []string{"--tls-client-ca-file", tokens}, "need --tls-cert-file"},
		{"invalid policy", []string{"--policy", bad, "--tokens-file", tokens}, "bad.yaml:7"},
		{"missing tokens file", []string{"--policy", policy, "--tokens-file", filepath.Join(dir, "none")}, "--tokens-file"},
		{"OIDC without audience", []string{"--policy", policy, "--oidc-issuer-url", "https://issuer.example"}, "udience"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newRootCommand(io.Discard, io.Discard)
			cmd.SetArgs(append([]string{"--address", "127.0.0.1:0"}, tc.args...))
			err := cmd.ExecuteContext(t.Context())
			if err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.mention)
			}
		})
	}
}
