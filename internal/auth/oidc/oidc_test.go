package oidc_test

import (
	"context"
	"crypto"
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
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/cup-dev/cup/internal/auth"
	"github.com/cup-dev/cup/internal/auth/oidc"
)

const audience = "cup-api"

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

// signingKey is a key the test issuer signs with.
type signingKey struct {
	kid string
	alg jose.SignatureAlgorithm
	// priv is a crypto.Signer, or a []byte for HMAC.
	priv any
}

func (k signingKey) public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.priv.(crypto.Signer).Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"}
}

// issuer is an OpenID Connect issuer on 127.0.0.1: a discovery document
// and a key set.
type issuer struct {
	srv *httptest.Server

	mu   sync.Mutex
	keys []jose.JSONWebKey
	down bool

	discoveries, fetches atomic.Int32
}

func newIssuer(t *testing.T, keys ...signingKey) *issuer {
	t.Helper()
	is := &issuer{}
	for _, k := range keys {
		is.keys = append(is.keys, k.public())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		is.discoveries.Add(1)
		if is.isDown() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                is.srv.URL,
			"jwks_uri":                              is.srv.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		if is.isDown() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		is.mu.Lock()
		set := jose.JSONWebKeySet{Keys: slices.Clone(is.keys)}
		is.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(set)
	})
	is.srv = httptest.NewTLSServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) isDown() bool {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.down
}

func (is *issuer) setDown(down bool) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.down = down
}

func (is *issuer) addKey(k signingKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys = append(is.keys, k.public())
}

// config is a valid configuration for is.
func (is *issuer) config() oidc.Config {
	return oidc.Config{IssuerURL: is.srv.URL, Audience: audience, HTTPClient: is.srv.Client()}
}

func (is *issuer) authenticator(t *testing.T, change ...func(*oidc.Config)) *oidc.Authenticator {
	t.Helper()
	cfg := is.config()
	for _, c := range change {
		c(&cfg)
	}
	a, err := oidc.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

// claims are the claims of a valid token from is.
func (is *issuer) claims() map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": is.srv.URL,
		"aud": audience,
		"sub": "alice",
		"iat": now.Unix(),
		"exp": now.Add(5 * time.Minute).Unix(),
	}
}

func sign(t *testing.T, k signingKey, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	key := jose.JSONWebKey{Key: k.priv, KeyID: k.kid}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
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

func rsaKey(kid string) signingKey { return signingKey{kid: kid, alg: jose.RS256, priv: keys().rsa1} }
func ecKey(kid string) signingKey  { return signingKey{kid: kid, alg: jose.ES256, priv: keys().ec1} }

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	rsa1, ec1 := rsaKey("rsa1"), ecKey("ec1")
	is := newIssuer(t, rsa1, ec1)
	a := is.authenticator(t)

	with := func(change func(c map[string]any)) map[string]any {
		c := is.claims()
		change(c)
		return c
	}
	now := time.Now()
	valid := sign(t, rsa1, is.claims())
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
		{name: "valid ECDSA", token: sign(t, ec1, is.claims()), want: &auth.Identity{User: "alice", Method: "oidc"}},
		{name: "audience among several", token: sign(t, rsa1, with(func(c map[string]any) { c["aud"] = []string{"other", audience} })), want: &auth.Identity{User: "alice", Method: "oidc"}},
		{name: "groups as array", token: sign(t, rsa1, with(func(c map[string]any) { c["groups"] = []string{"admins", "", "viewers"} })), want: &auth.Identity{User: "alice", Groups: []string{"admins", "viewers"}, Method: "oidc"}},
		{name: "groups as string", token: sign(t, rsa1, with(func(c map[string]any) { c["groups"] = "admins" })), want: &auth.Identity{User: "alice", Groups: []string{"admins"}, Method: "oidc"}},
		{name: "groups null", token: sign(t, rsa1, with(func(c map[string]any) { c["groups"] = nil })), want: &auth.Identity{User: "alice", Method: "oidc"}},
		{name: "expired within skew", token: sign(t, rsa1, with(func(c map[string]any) { c["exp"] = now.Add(-30 * time.Second).Unix() })), want: &auth.Identity{User: "alice", Method: "oidc"}},
		{name: "nbf within skew", token: sign(t, rsa1, with(func(c map[string]any) { c["nbf"] = now.Add(30 * time.Second).Unix() })), want: &auth.Identity{User: "alice", Method: "oidc"}},
		{name: "nbf past", token: sign(t, rsa1, with(func(c map[string]any) { c["nbf"] = now.Add(-time.Minute).Unix() })), want: &auth.Identity{User: "alice", Method: "oidc"}},
		{name: "iat within skew", token: sign(t, rsa1, with(func(c map[string]any) { c["iat"] = now.Add(30 * time.Second).Unix() })), want: &auth.Identity{User: "alice", Method: "oidc"}},

		{name: "no authorization", wantErr: auth.ErrNoCredentials},
		{name: "basic auth", token: "", wantErr: auth.ErrNoCredentials},
		{name: "opaque token", token: "s3cr3t-static-token", wantErr: auth.ErrNoCredentials},
		{name: "two parts", token: parts[0] + "." + parts[1], wantErr: auth.ErrNoCredentials},
		{name: "JWE", token: "a.b.c.d.e", wantErr: auth.ErrNoCredentials},
		{name: "not base64url", token: parts[0] + "." + parts[1] + "+/", wantErr: auth.ErrNoCredentials},

		{name: "expired", token: sign(t, rsa1, with(func(c map[string]any) { c["exp"] = now.Add(-2 * time.Minute).Unix() })), wantErr: auth.ErrUnauthenticated, wantMsg: "token expired"},
		{name: "no expiry", token: sign(t, rsa1, with(func(c map[string]any) { delete(c, "exp") })), wantErr: auth.ErrUnauthenticated, wantMsg: "no expiry"},
		{name: "nbf in future", token: sign(t, rsa1, with(func(c map[string]any) { c["nbf"] = now.Add(5 * time.Minute).Unix() })), wantErr: auth.ErrUnauthenticated, wantMsg: "not valid yet"},
		{name: "nbf not a number", token: sign(t, rsa1, with(func(c map[string]any) { c["nbf"] = "soon" })), wantErr: auth.ErrUnauthenticated, wantMsg: "malformed token"},
		{name: "iat in future", token: sign(t, rsa1, with(func(c map[string]any) { c["iat"] = now.Add(5 * time.Minute).Unix() })), wantErr: auth.ErrUnauthenticated, wantMsg: "issued in the future"},
		{name: "wrong audience", token: sign(t, rsa1, with(func(c map[string]any) { c["aud"] = "secret-other-app" })), wantErr: auth.ErrUnauthenticated, wantMsg: "another audience"},
		{name: "no audience", token: sign(t, rsa1, with(func(c map[string]any) { delete(c, "aud") })), wantErr: auth.ErrUnauthenticated, wantMsg: "another audience"},
		{name: "wrong issuer", token: sign(t, rsa1, with(func(c map[string]any) { c["iss"] = "https://evil.example.com" })), wantErr: auth.ErrUnauthenticated, wantMsg: "another issuer"},
		{name: "issuer with trailing slash", token: sign(t, rsa1, with(func(c map[string]any) { c["iss"] = is.srv.URL + "/" })), wantErr: auth.ErrUnauthenticated, wantMsg: "another issuer"},
		{name: "signed by another key with a known kid", token: sign(t, signingKey{kid: "rsa1", alg: jose.RS256, priv: keys().other}, is.claims()), wantErr: auth.ErrUnauthenticated, wantMsg: "signature is not valid"},
		{name: "tampered payload", token: parts[0] + "." + b64(t, with(func(c map[string]any) { c["sub"] = "root" })) + "." + parts[2], wantErr: auth.ErrUnauthenticated, wantMsg: "signature is not valid"},
		{name: "unknown kid", token: sign(t, signingKey{kid: "unknown", alg: jose.RS256, priv: keys().other}, is.claims()), wantErr: auth.ErrUnauthenticated, wantMsg: "unknown key"},
		{name: "key's algorithm differs", token: sign(t, signingKey{kid: "rsa1", alg: jose.PS256, priv: keys().rsa1}, is.claims()), wantErr: auth.ErrUnauthenticated, wantMsg: "algorithm that is not accepted"},
		{name: "alg none", token: b64(t, map[string]string{"alg": "none", "typ": "JWT"}) + "." + b64(t, is.claims()) + ".", wantErr: auth.ErrUnauthenticated, wantMsg: "algorithm that is not accepted"},
		{name: "HS256 with the public key as secret", token: sign(t, signingKey{kid: "rsa1", alg: jose.HS256, priv: hmacPEM}, is.claims()), wantErr: auth.ErrUnauthenticated, wantMsg: "algorithm that is not accepted"},
		{name: "RS384 not accepted", token: sign(t, signingKey{kid: "rsa1", alg: jose.RS384, priv: keys().rsa1}, is.claims()), wantErr: auth.ErrUnauthenticated, wantMsg: "algorithm that is not accepted"},
		{name: "malformed header", token: "bm90IGpzb24.e30.c2ln", wantErr: auth.ErrUnauthenticated, wantMsg: "malformed token"},
		{name: "malformed payload", token: parts[0] + ".bm90IGpzb24." + parts[2], wantErr: auth.ErrUnauthenticated, wantMsg: "signature is not valid"},
		{name: "missing sub", token: sign(t, rsa1, with(func(c map[string]any) { delete(c, "sub") })), wantErr: auth.ErrUnauthenticated, wantMsg: `no "sub" claim`},
		{name: "empty sub", token: sign(t, rsa1, with(func(c map[string]any) { c["sub"] = "" })), wantErr: auth.ErrUnauthenticated, wantMsg: `no "sub" claim`},
		{name: "groups of numbers", token: sign(t, rsa1, with(func(c map[string]any) { c["groups"] = []int{1} })), wantErr: auth.ErrUnauthenticated, wantMsg: `"groups" claim is not`},
		{name: "groups an object", token: sign(t, rsa1, with(func(c map[string]any) { c["groups"] = map[string]string{"a": "b"} })), wantErr: auth.ErrUnauthenticated, wantMsg: `"groups" claim is not`},
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
	is := newIssuer(t, k)
	a := is.authenticator(t)
	if n := is.discoveries.Load() + is.fetches.Load(); n != 0 {
		t.Fatalf("New made %d requests, want none", n)
	}
	// Credentials that are not a JWT do not reach the issuer either.
	for _, h := range []string{"", "Bearer opaque", "Basic YTpi"} {
		if _, err := authenticate(a, h); !errors.Is(err, auth.ErrNoCredentials) {
			t.Errorf("Authenticate(%q) error = %v, want ErrNoCredentials", h, err)
		}
	}
	if n := is.discoveries.Load() + is.fetches.Load(); n != 0 {
		t.Fatalf("non-JWT credentials made %d requests, want none", n)
	}

	// Many first callers at once share one discovery and one fetch.
	token := "Bearer " + sign(t, k, is.claims())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := authenticate(a, token); err != nil {
				t.Errorf("Authenticate() error = %v", err)
			}
		})
	}
	wg.Wait()
	if d, f := is.discoveries.Load(), is.fetches.Load(); d != 1 || f != 1 {
		t.Errorf("after concurrent first calls: %d discoveries, %d key fetches; want 1 and 1", d, f)
	}
}

func TestIssuerDown(t *testing.T) {
	t.Parallel()
	k := rsaKey("k")
	is := newIssuer(t, k)
	is.setDown(true)
	a := is.authenticator(t)
	token := "Bearer " + sign(t, k, is.claims())

	for range 2 {
		_, err := authenticate(a, token)
		if err == nil || errors.Is(err, auth.ErrUnauthenticated) || errors.Is(err, auth.ErrNoCredentials) {
			t.Fatalf("Authenticate() with the issuer down: error = %v, want one that is neither unauthenticated nor no-credentials", err)
		}
		if !strings.Contains(err.Error(), "discovery") || strings.Contains(err.Error(), token[7:]) {
			t.Errorf("error = %q, want it to name discovery and not the token", err)
		}
	}
	if n := is.discoveries.Load(); n != 2 {
		t.Errorf("%d discoveries, want 2: each call tries again", n)
	}
	if err := a.Refresh(t.Context()); err == nil {
		t.Error("Refresh() with the issuer down succeeded")
	}

	is.setDown(false)
	id, err := authenticate(a, token)
	if err != nil || id.User != "alice" {
		t.Fatalf("Authenticate() after the issuer came back = %v, %v; want alice", id, err)
	}

	// Once keys are cached, the issuer being down does not matter to tokens
	// signed with them.
	is.setDown(true)
	if _, err := authenticate(a, token); err != nil {
		t.Errorf("Authenticate() with cached keys and the issuer down: %v", err)
	}
}

func TestKeysDown(t *testing.T) {
	t.Parallel()
	k := rsaKey("k")
	is := newIssuer(t, k)
	a := is.authenticator(t, func(c *oidc.Config) { c.KeyRefreshInterval = -1 })
	token := "Bearer " + sign(t, k, is.claims())
	if err := a.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A key the cache lacks while the issuer is down: the issuer may have
	// it, so the answer is "unavailable", not "unauthenticated".
	is.setDown(true)
	other := "Bearer " + sign(t, signingKey{kid: "new", alg: jose.ES256, priv: keys().ec1}, is.claims())
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
	old, next := rsaKey("2025"), signingKey{kid: "2026", alg: jose.RS256, priv: keys().rsa2}
	is := newIssuer(t, old)
	a := is.authenticator(t, func(c *oidc.Config) { c.KeyRefreshInterval = -1 })

	if _, err := authenticate(a, "Bearer "+sign(t, old, is.claims())); err != nil {
		t.Fatalf("old key: %v", err)
	}
	newToken := "Bearer " + sign(t, next, is.claims())
	if _, err := authenticate(a, newToken); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("new key before the issuer publishes it: error = %v, want ErrUnauthenticated", err)
	}
	is.addKey(next)
	id, err := authenticate(a, newToken)
	if err != nil || id.User != "alice" {
		t.Fatalf("new key after the issuer published it = %v, %v; want alice", id, err)
	}
	if d := is.discoveries.Load(); d != 1 {
		t.Errorf("%d discoveries, want 1", d)
	}
}

func TestKeyRefreshInterval(t *testing.T) {
	t.Parallel()
	k := rsaKey("k")
	is := newIssuer(t, k)
	a := is.authenticator(t) // the default interval, longer than this test
	if _, err := authenticate(a, "Bearer "+sign(t, k, is.claims())); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		tok := sign(t, signingKey{kid: "made-up-" + string(rune('a'+i)), alg: jose.RS256, priv: keys().other}, is.claims())
		if _, err := authenticate(a, "Bearer "+tok); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Errorf("unknown key: error = %v, want ErrUnauthenticated", err)
		}
	}
	if f := is.fetches.Load(); f != 1 {
		t.Errorf("%d key fetches, want 1: tokens with unknown keys must not make the key set be fetched each time", f)
	}
}

func TestJWKSURL(t *testing.T) {
	t.Parallel()
	k := ecKey("ec")
	is := newIssuer(t, k)
	a := is.authenticator(t, func(c *oidc.Config) { c.JWKSURL = is.srv.URL + "/keys" })
	if _, err := authenticate(a, "Bearer "+sign(t, k, is.claims())); err != nil {
		t.Fatal(err)
	}
	if d, f := is.discoveries.Load(), is.fetches.Load(); d != 0 || f != 1 {
		t.Errorf("%d discoveries and %d fetches, want 0 and 1", d, f)
	}
}

func TestCAFile(t *testing.T) {
	t.Parallel()
	k := rsaKey("k")
	is := newIssuer(t, k)
	token := "Bearer " + sign(t, k, is.claims())

	// Without the issuer's CA, the issuer cannot be reached.
	a := is.authenticator(t, func(c *oidc.Config) { c.HTTPClient = nil })
	if _, err := authenticate(a, token); err == nil || errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("Authenticate() without the CA: error = %v, want a non-authentication error", err)
	}

	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: is.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	a = is.authenticator(t, func(c *oidc.Config) { c.HTTPClient, c.CAFile = nil, caFile })
	if _, err := authenticate(a, token); err != nil {
		t.Errorf("Authenticate() with the CA file: %v", err)
	}

	a = is.authenticator(t, func(c *oidc.Config) { c.HTTPClient, c.CAFile = nil, filepath.Join(dir, "missing.pem") })
	if _, err := authenticate(a, token); err == nil || errors.Is(err, auth.ErrUnauthenticated) || !strings.Contains(err.Error(), "CA file") {
		t.Errorf("Authenticate() with a missing CA file: error = %v, want a CA file error", err)
	}
}

func TestClaims(t *testing.T) {
	t.Parallel()
	k := rsaKey("k")
	is := newIssuer(t, k)
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
			a := is.authenticator(t, tt.cfg)
			if err := a.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			c := is.claims()
			tt.claims(c)
			id, err := authenticate(a, "Bearer "+sign(t, k, c))
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
	is := newIssuer(t, k)
	a := is.authenticator(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := httptest.NewRequestWithContext(ctx, "GET", "/", nil)
	r.Header.Set("Authorization", "Bearer "+sign(t, k, is.claims()))
	// The fetch serves other callers too, so it goes on; the caller gets
	// its answer.
	if _, err := a.Authenticate(r); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Authenticate(canceled) error = %v, want nil or context.Canceled", err)
	}
}

func TestChain(t *testing.T) {
	t.Parallel()
	k := rsaKey("k")
	is := newIssuer(t, k)
	chain := auth.Chain{is.authenticator(t)}
	if _, err := authenticate(chain, "Bearer opaque"); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("Chain with an opaque token: error = %v, want ErrUnauthenticated", err)
	}
	if id, err := authenticate(chain, "Bearer "+sign(t, k, is.claims())); err != nil || id.User != "alice" {
		t.Errorf("Chain with a valid JWT = %v, %v", id, err)
	}
}
