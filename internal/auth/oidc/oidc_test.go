package oidc_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/internal/auth/authtest"
	"github.com/cup-dev/cup/internal/auth/oidc"
)

const audience = authtest.Audience

// testKeys are the private keys the tests sign with.
type testKeys struct {
	rsa1, rsa2, other *rsa.PrivateKey
	ec1               *ecdsa.PrivateKey
}

// keys are generated once: RSA key generation is slow under the race
// detector.
var keys = sync.OnceValue(func() testKeys {
	var k testKeys
	var err error
	for _, p := range []**rsa.PrivateKey{&k.rsa1, &k.rsa2, &k.other} {
		if *p, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	}
	if k.ec1, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		panic(err)
	}
	return k
})

// authenticator is an authenticator for is, trusting its certificate,
// with its configuration changed by change.
func authenticator(t testing.TB, is *authtest.Issuer, change ...func(*oidc.Config)) *oidc.Authenticator {
	t.Helper()
	cfg := oidc.Config{IssuerURL: is.URL(), Audience: audience, HTTPClient: is.Client()}
	for _, c := range change {
		c(&cfg)
	}
	a, err := oidc.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

func b64(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(data)
}

func authenticate(a auth.Authenticator, authorization string) (*auth.Identity, error) {
	r := httptest.NewRequest("GET", "/apis", nil)
	if authorization != "" {
		r.Header.Set("Authorization", authorization)
	}
	return a.Authenticate(r)
}

func rsaKey(kid string) authtest.Key {
	return authtest.Key{ID: kid, Algorithm: jose.RS256, Private: keys().rsa1}
}
func ecKey(kid string) authtest.Key {
	return authtest.Key{ID: kid, Algorithm: jose.ES256, Private: keys().ec1}
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	rsa1, ec1 := rsaKey("rsa1"), ecKey("ec1")
	is := authtest.NewIssuer(t, rsa1, ec1)
	a := authenticator(t, is)

	with := func(change func(c map[string]any)) map[string]any {
		c := is.Claims()
		change(c)
		return c
	}
	now := time.Now()
	valid := authtest.Sign(t, rsa1, is.Claims())
	parts := strings.Split(valid, ".")
	hmacKey, err := x509.MarshalPKIXPublicKey(keys().rsa1.Public())
	if err != nil {
		t.Fatal(err)
	}
	hmacPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: hmacKey})

	tests := []struct {
		name  string
		token string
		// want is the expected identity; nil if an error is expected.
		want *auth.Identity
		// wantErr is the sentinel the error wraps, and wantMsg a part of
		// its message.
		wantErr error
		wantMsg string
	}{
		{name: "valid RSA", token: valid, want: &auth.Identity{User: "alice", Method: "oidc"}},
		{name: "valid ECDSA", token: authtest.Sign(t, ec1, is.Claims()), want: &auth.Identity{User: "alice", Method: "oidc"}},
		{name: "audience among several", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["aud"] = []string{"other", audience} })), want: &auth.Identity{User: "alice", Method: "oidc"}},
		{name: "groups as array", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["groups"] = []string{"admins", "", "viewers"} })), want: &auth.Identity{User: "alice", Groups: []string{"admins", "viewers"}, Method: "oidc"}},
		{name: "groups as string", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["groups"] = "admins" })), want: &auth.Identity{User: "alice", Groups: []string{"admins"}, Method: "oidc"}},
		{name: "groups null", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["groups"] = nil })), want: &auth.Identity{User: "alice", Method: "oidc"}},
		{name: "expired within skew", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["exp"] = now.Add(-30 * time.Second).Unix() })), want: &auth.Identity{User: "alice", Method: "oidc"}},
		{name: "nbf within skew", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["nbf"] = now.Add(30 * time.Second).Unix() })), want: &auth.Identity{User: "alice", Method: "oidc"}},
		{name: "nbf past", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["nbf"] = now.Add(-time.Minute).Unix() })), want: &auth.Identity{User: "alice", Method: "oidc"}},
		{name: "iat within skew", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["iat"] = now.Add(30 * time.Second).Unix() })), want: &auth.Identity{User: "alice", Method: "oidc"}},

		{name: "no authorization", wantErr: auth.ErrNoCredentials},
		{name: "basic auth", token: "", wantErr: auth.ErrNoCredentials},
		{name: "opaque token", token: "s3cr3t-static-token", wantErr: auth.ErrNoCredentials},
		{name: "two parts", token: parts[0] + "." + parts[1], wantErr: auth.ErrNoCredentials},
		{name: "JWE", token: "a.b.c.d.e", wantErr: auth.ErrNoCredentials},
		{name: "not base64url", token: parts[0] + "." + parts[1] + "+/", wantErr: auth.ErrNoCredentials},

		{name: "expired", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["exp"] = now.Add(-2 * time.Minute).Unix() })), wantErr: auth.ErrUnauthenticated, wantMsg: "token expired"},
		{name: "no expiry", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { delete(c, "exp") })), wantErr: auth.ErrUnauthenticated, wantMsg: "no expiry"},
		{name: "nbf in future", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["nbf"] = now.Add(5 * time.Minute).Unix() })), wantErr: auth.ErrUnauthenticated, wantMsg: "not valid yet"},
		{name: "nbf not a number", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["nbf"] = "soon" })), wantErr: auth.ErrUnauthenticated, wantMsg: "malformed token"},
		{name: "iat in future", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["iat"] = now.Add(5 * time.Minute).Unix() })), wantErr: auth.ErrUnauthenticated, wantMsg: "issued in the future"},
		{name: "wrong audience", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["aud"] = "secret-other-app" })), wantErr: auth.ErrUnauthenticated, wantMsg: "another audience"},
		{name: "no audience", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { delete(c, "aud") })), wantErr: auth.ErrUnauthenticated, wantMsg: "another audience"},
		{name: "wrong issuer", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["iss"] = "https://evil.example.com" })), wantErr: auth.ErrUnauthenticated, wantMsg: "another issuer"},
		{name: "issuer with trailing slash", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["iss"] = is.URL() + "/" })), wantErr: auth.ErrUnauthenticated, wantMsg: "another issuer"},
		{name: "signed by another key with a known kid", token: authtest.Sign(t, authtest.Key{ID: "rsa1", Algorithm: jose.RS256, Private: keys().other}, is.Claims()), wantErr: auth.ErrUnauthenticated, wantMsg: "signature is not valid"},
		{name: "tampered payload", token: parts[0] + "." + b64(t, with(func(c map[string]any) { c["sub"] = "root" })) + "." + parts[2], wantErr: auth.ErrUnauthenticated, wantMsg: "signature is not valid"},
		{name: "unknown kid", token: authtest.Sign(t, authtest.Key{ID: "unknown", Algorithm: jose.RS256, Private: keys().other}, is.Claims()), wantErr: auth.ErrUnauthenticated, wantMsg: "unknown key"},
		{name: "key's algorithm differs", token: authtest.Sign(t, authtest.Key{ID: "rsa1", Algorithm: jose.PS256, Private: keys().rsa1}, is.Claims()), wantErr: auth.ErrUnauthenticated, wantMsg: "algorithm that is not accepted"},
		{name: "alg none", token: b64(t, map[string]string{"alg": "none", "typ": "JWT"}) + "." + b64(t, is.Claims()) + ".", wantErr: auth.ErrUnauthenticated, wantMsg: "algorithm that is not accepted"},
		{name: "HS256 with the public key as secret", token: authtest.Sign(t, authtest.Key{ID: "rsa1", Algorithm: jose.HS256, Private: hmacPEM}, is.Claims()), wantErr: auth.ErrUnauthenticated, wantMsg: "algorithm that is not accepted"},
		{name: "RS384 not accepted", token: authtest.Sign(t, authtest.Key{ID: "rsa1", Algorithm: jose.RS384, Private: keys().rsa1}, is.Claims()), wantErr: auth.ErrUnauthenticated, wantMsg: "algorithm that is not accepted"},
		{name: "malformed header", token: "bm90IGpzb24.e30.c2ln", wantErr: auth.ErrUnauthenticated, wantMsg: "malformed token"},
		{name: "malformed payload", token: parts[0] + ".bm90IGpzb24." + parts[2], wantErr: auth.ErrUnauthenticated, wantMsg: "signature is not valid"},
		{name: "missing sub", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { delete(c, "sub") })), wantErr: auth.ErrUnauthenticated, wantMsg: `no "sub" claim`},
		{name: "empty sub", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["sub"] = "" })), wantErr: auth.ErrUnauthenticated, wantMsg: `no "sub" claim`},
		{name: "groups of numbers", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["groups"] = []int{1} })), wantErr: auth.ErrUnauthenticated, wantMsg: `"groups" claim is not`},
		{name: "groups an object", token: authtest.Sign(t, rsa1, with(func(c map[string]any) { c["groups"] = map[string]string{"a": "b"} })), wantErr: auth.ErrUnauthenticated, wantMsg: `"groups" claim is not`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			authorization := ""
			switch {
			case tt.name == "basic auth":
				authorization = "Basic YWxpY2U6c2VjcmV0"
			case tt.token != "":
				authorization = "Bearer " + tt.token
			}
			id, err := authenticate(a, authorization)
			if tt.want != nil {
				if err != nil {
					t.Fatalf("Authenticate() error = %v", err)
				}
				if id.User != tt.want.User || !slices.Equal(id.Groups, tt.want.Groups) || id.Method != tt.want.Method {
					t.Errorf("Authenticate() = %+v, want %+v", id, tt.want)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Authenticate() error = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Authenticate() error = %q, want it to say %q", err, tt.wantMsg)
			}
			for _, secret := range []string{tt.token, "alice", "secret-other-app", "evil.example.com"} {
				if secret != "" && strings.Contains(err.Error(), secret) {
					t.Errorf("Authenticate() error %q repeats %q", err, secret)
				}
			}
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  oidc.Config
		want string
	}{
		{name: "no issuer", cfg: oidc.Config{Audience: audience}, want: "issuer URL is required"},
		{name: "no audience", cfg: oidc.Config{IssuerURL: "https://issuer.example.com"}, want: "audience is required"},
		{name: "relative issuer", cfg: oidc.Config{IssuerURL: "issuer.example.com", Audience: audience}, want: "not an absolute URL"},
		{name: "http issuer", cfg: oidc.Config{IssuerURL: "http://issuer.example.com", Audience: audience}, want: "use https"},
		{name: "http JWKS", cfg: oidc.Config{IssuerURL: "https://issuer.example.com", JWKSURL: "http://issuer.example.com/keys", Audience: audience}, want: "JWKS URL"},
		{name: "alg none", cfg: oidc.Config{IssuerURL: "https://issuer.example.com", Audience: audience, SigningAlgorithms: []string{"RS256", "none"}}, want: `"none" is not supported`},
		{name: "HS256", cfg: oidc.Config{IssuerURL: "https://issuer.example.com", Audience: audience, SigningAlgorithms: []string{"HS256"}}, want: `"HS256" is not supported`},
		{name: "CA file and client", cfg: oidc.Config{IssuerURL: "https://issuer.example.com", Audience: audience, CAFile: "ca.pem", HTTPClient: http.DefaultClient}, want: "not both"},
		{name: "valid", cfg: oidc.Config{IssuerURL: "https://issuer.example.com", Audience: audience}},
		{name: "http on loopback", cfg: oidc.Config{IssuerURL: "http://127.0.0.1:5556/dex", Audience: audience}},
		{name: "http on localhost", cfg: oidc.Config{IssuerURL: "http://localhost:5556", Audience: audience}},
		{name: "every option", cfg: oidc.Config{
			IssuerURL: "https://issuer.example.com", Audience: audience, JWKSURL: "https://keys.example.com/jwks",
			UserClaim: "email", GroupsClaim: "roles", UserPrefix: "oidc:", GroupPrefix: "oidc:",
			ClockSkew: -1, SigningAlgorithms: []string{"PS256", "EdDSA"}, CAFile: "ca.pem", KeyRefreshInterval: time.Minute,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := oidc.New(tt.cfg)
			if tt.want == "" {
				if err != nil || a == nil {
					t.Fatalf("New() = %v, %v; want an authenticator", a, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New() error = %v, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestLazyDiscovery(t *testing.T) {
	t.Parallel()
	k := rsaKey("k")
	is := authtest.NewIssuer(t, k)
	a := authenticator(t, is)
	if n := is.Discoveries() + is.KeyFetches(); n != 0 {
		t.Fatalf("New made %d requests, want none", n)
	}
	// Credentials that are not a JWT do not reach the issuer either.
	for _, h := range []string{"", "Bearer opaque", "Basic YTpi"} {
		if _, err := authenticate(a, h); !errors.Is(err, auth.ErrNoCredentials) {
			t.Errorf("Authenticate(%q) error = %v, want ErrNoCredentials", h, err)
		}
	}
	if n := is.Discoveries() + is.KeyFetches(); n != 0 {
		t.Fatalf("non-JWT credentials made %d requests, want none", n)
	}

	// Many first callers at once share one discovery and one fetch.
	token := "Bearer " + authtest.Sign(t, k, is.Claims())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := authenticate(a, token); err != nil {
				t.Errorf("Authenticate() error = %v", err)
			}
		})
	}
	wg.Wait()
	if d, f := is.Discoveries(), is.KeyFetches(); d != 1 || f != 1 {
		t.Errorf("after concurrent first calls: %d discoveries, %d key fetches; want 1 and 1", d, f)
	}
}

func TestIssuerDown(t *testing.T) {
	t.Parallel()
	k := rsaKey("k")
	is := authtest.NewIssuer(t, k)
	is.SetDown(true)
	a := authenticator(t, is)
	token := "Bearer " + authtest.Sign(t, k, is.Claims())

	for range 2 {
		_, err := authenticate(a, token)
		if err == nil || errors.Is(err, auth.ErrUnauthenticated) || errors.Is(err, auth.ErrNoCredentials) {
			t.Fatalf("Authenticate() with the issuer down: error = %v, want one that is neither unauthenticated nor no-credentials", err)
		}
		if !strings.Contains(err.Error(), "discovery") || strings.Contains(err.Error(), token[7:]) {
			t.Errorf("error = %q, want it to name discovery and not the token", err)
		}
	}
	if n := is.Discoveries(); n != 2 {
		t.Errorf("%d discoveries, want 2: each call tries again", n)
	}
	if err := a.Refresh(t.Context()); err == nil {
		t.Error("Refresh() with the issuer down succeeded")
	}

	is.SetDown(false)
	id, err := authenticate(a, token)
	if err != nil || id.User != "alice" {
		t.Fatalf("Authenticate() after the issuer came back = %v, %v; want alice", id, err)
	}

	// Once keys are cached, the issuer being down does not matter to tokens
	// signed with them.
	is.SetDown(true)
	if _, err := authenticate(a, token); err != nil {
		t.Errorf("Authenticate() with cached keys and the issuer down: %v", err)
	}
}

func TestKeysDown(t *testing.T) {
	t.Parallel()
	k := rsaKey("k")
	is := authtest.NewIssuer(t, k)
	a := authenticator(t, is, func(c *oidc.Config) { c.KeyRefreshInterval = -1 })
	token := "Bearer " + authtest.Sign(t, k, is.Claims())
	if err := a.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A key the cache lacks while the issuer is down: the issuer may have
	// it, so the answer is "unavailable", not "unauthenticated".
	is.SetDown(true)
	other := "Bearer " + authtest.Sign(t, authtest.Key{ID: "new", Algorithm: jose.ES256, Private: keys().ec1}, is.Claims())
	_, err := authenticate(a, other)
	if err == nil || errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("Authenticate(unknown key, issuer down) error = %v, want a non-authentication error", err)
	}
	if _, err := authenticate(a, token); err != nil {
		t.Errorf("Authenticate(known key, issuer down) error = %v", err)
	}
}

func TestKeyRotation(t *testing.T) {
	t.Parallel()
	old, next := rsaKey("2025"), authtest.Key{ID: "2026", Algorithm: jose.RS256, Private: keys().rsa2}
	is := authtest.NewIssuer(t, old)
	a := authenticator(t, is, func(c *oidc.Config) { c.KeyRefreshInterval = -1 })

	if _, err := authenticate(a, "Bearer "+authtest.Sign(t, old, is.Claims())); err != nil {
		t.Fatalf("old key: %v", err)
	}
	newToken := "Bearer " + authtest.Sign(t, next, is.Claims())
	if _, err := authenticate(a, newToken); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("new key before the issuer publishes it: error = %v, want ErrUnauthenticated", err)
	}
	is.AddKey(next)
	id, err := authenticate(a, newToken)
	if err != nil || id.User != "alice" {
		t.Fatalf("new key after the issuer published it = %v, %v; want alice", id, err)
	}
	if d := is.Discoveries(); d != 1 {
		t.Errorf("%d discoveries, want 1", d)
	}
}

func TestKeyRefreshInterval(t *testing.T) {
	t.Parallel()
	k := rsaKey("k")
	is := authtest.NewIssuer(t, k)
	a := authenticator(t, is) // the default interval, longer than this test
	if _, err := authenticate(a, "Bearer "+authtest.Sign(t, k, is.Claims())); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		tok := authtest.Sign(t, authtest.Key{ID: "made-up-" + string(rune('a'+i)), Algorithm: jose.RS256, Private: keys().other}, is.Claims())
		if _, err := authenticate(a, "Bearer "+tok); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Errorf("unknown key: error = %v, want ErrUnauthenticated", err)
		}
	}
	if f := is.KeyFetches(); f != 1 {
		t.Errorf("%d key fetches, want 1: tokens with unknown keys must not make the key set be fetched each time", f)
	}
}

func TestJWKSURL(t *testing.T) {
	t.Parallel()
	k := ecKey("ec")
	is := authtest.NewIssuer(t, k)
	a := authenticator(t, is, func(c *oidc.Config) { c.JWKSURL = is.JWKSURL() })
	if _, err := authenticate(a, "Bearer "+authtest.Sign(t, k, is.Claims())); err != nil {
		t.Fatal(err)
	}
	if d, f := is.Discoveries(), is.KeyFetches(); d != 0 || f != 1 {
		t.Errorf("%d discoveries and %d fetches, want 0 and 1", d, f)
	}
}

func TestCAFile(t *testing.T) {
	t.Parallel()
	k := rsaKey("k")
	is := authtest.NewIssuer(t, k)
	token := "Bearer " + authtest.Sign(t, k, is.Claims())

	// Without the issuer's CA, the issuer cannot be reached.
	a := authenticator(t, is, func(c *oidc.Config) { c.HTTPClient = nil })
	if _, err := authenticate(a, token); err == nil || errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("Authenticate() without the CA: error = %v, want a non-authentication error", err)
	}

	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: is.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	a = authenticator(t, is, func(c *oidc.Config) { c.HTTPClient, c.CAFile = nil, caFile })
	if _, err := authenticate(a, token); err != nil {
		t.Errorf("Authenticate() with the CA file: %v", err)
	}

	a = authenticator(t, is, func(c *oidc.Config) { c.HTTPClient, c.CAFile = nil, filepath.Join(dir, "missing.pem") })
	if _, err := authenticate(a, token); err == nil || errors.Is(err, auth.ErrUnauthenticated) || !strings.Contains(err.Error(), "CA file") {
		t.Errorf("Authenticate() with a missing CA file: error = %v, want a CA file error", err)
	}
}

func TestClaims(t *testing.T) {
	t.Parallel()
	k := rsaKey("k")
	is := authtest.NewIssuer(t, k)
	ctx := t.Context()
	tests := []struct {
		name    string
		cfg     func(*oidc.Config)
		claims  func(map[string]any)
		want    *auth.Identity
		wantMsg string
	}{
		{
			name:   "prefixes",
			cfg:    func(c *oidc.Config) { c.UserPrefix, c.GroupPrefix = "oidc:", "oidc:" },
			claims: func(c map[string]any) { c["groups"] = []string{"admins"} },
			want:   &auth.Identity{User: "oidc:alice", Groups: []string{"oidc:admins"}, Method: "oidc"},
		},
		{
			name: "other claims",
			cfg:  func(c *oidc.Config) { c.UserClaim, c.GroupsClaim = "preferred_username", "roles" },
			claims: func(c map[string]any) {
				c["preferred_username"], c["roles"], c["groups"] = "al", "ops", []string{"ignored"}
			},
			want: &auth.Identity{User: "al", Groups: []string{"ops"}, Method: "oidc"},
		},
		{
			name:    "user claim missing",
			cfg:     func(c *oidc.Config) { c.UserClaim = "preferred_username" },
			claims:  func(c map[string]any) {},
			wantMsg: `no "preferred_username" claim`,
		},
		{
			name:    "user claim not a string",
			cfg:     func(c *oidc.Config) { c.UserClaim = "preferred_username" },
			claims:  func(c map[string]any) { c["preferred_username"] = 7 },
			wantMsg: `no "preferred_username" claim`,
		},
		{
			name:   "verified email",
			cfg:    func(c *oidc.Config) { c.UserClaim = "email" },
			claims: func(c map[string]any) { c["email"], c["email_verified"] = "alice@example.com", true },
			want:   &auth.Identity{User: "alice@example.com", Method: "oidc"},
		},
		{
			name:    "unverified email",
			cfg:     func(c *oidc.Config) { c.UserClaim = "email" },
			claims:  func(c map[string]any) { c["email"], c["email_verified"] = "alice@example.com", false },
			wantMsg: "not verified",
		},
		{
			name:    "no clock skew",
			cfg:     func(c *oidc.Config) { c.ClockSkew = -1 },
			claims:  func(c map[string]any) { c["exp"] = time.Now().Add(-2 * time.Second).Unix() },
			wantMsg: "token expired",
		},
		{
			name: "larger clock skew",
			cfg:  func(c *oidc.Config) { c.ClockSkew = 10 * time.Minute },
			claims: func(c map[string]any) {
				c["exp"], c["nbf"] = time.Now().Add(-5*time.Minute).Unix(), time.Now().Add(5*time.Minute).Unix()
			},
			want: &auth.Identity{User: "alice", Method: "oidc"},
		},
		{
			name:    "ES256 only",
			cfg:     func(c *oidc.Config) { c.SigningAlgorithms = []string{"ES256"} },
			claims:  func(c map[string]any) {},
			wantMsg: "not accepted (accepted: ES256)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := authenticator(t, is, tt.cfg)
			if err := a.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			c := is.Claims()
			tt.claims(c)
			id, err := authenticate(a, "Bearer "+authtest.Sign(t, k, c))
			if tt.want == nil {
				if !errors.Is(err, auth.ErrUnauthenticated) || !strings.Contains(err.Error(), tt.wantMsg) {
					t.Errorf("Authenticate() error = %v, want ErrUnauthenticated saying %q", err, tt.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Authenticate() error = %v", err)
			}
			if id.User != tt.want.User || !slices.Equal(id.Groups, tt.want.Groups) || id.Method != tt.want.Method {
				t.Errorf("Authenticate() = %+v, want %+v", id, tt.want)
			}
		})
	}
}

func TestCanceledRequest(t *testing.T) {
	t.Parallel()
	k := rsaKey("k")
	is := authtest.NewIssuer(t, k)
	a := authenticator(t, is)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := httptest.NewRequestWithContext(ctx, "GET", "/", nil)
	r.Header.Set("Authorization", "Bearer "+authtest.Sign(t, k, is.Claims()))
	// The fetch serves other callers too, so it goes on; the caller gets
	// its answer.
	if _, err := a.Authenticate(r); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Authenticate(canceled) error = %v, want nil or context.Canceled", err)
	}
}

func TestChain(t *testing.T) {
	t.Parallel()
	k := rsaKey("k")
	is := authtest.NewIssuer(t, k)
	chain := auth.Chain{authenticator(t, is)}
	if _, err := authenticate(chain, "Bearer opaque"); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("Chain with an opaque token: error = %v, want ErrUnauthenticated", err)
	}
	if id, err := authenticate(chain, "Bearer "+authtest.Sign(t, k, is.Claims())); err != nil || id.User != "alice" {
		t.Errorf("Chain with a valid JWT = %v, %v", id, err)
	}
}
