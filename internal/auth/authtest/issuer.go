package authtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Audience is the audience of the tokens [Issuer.Claims] makes.
const Audience = "cup"

// A Key is a key an [Issuer] signs tokens with.
type Key struct {
	// ID is the key's ID, the "kid" of the tokens it signs.
	ID string
	// Algorithm is the algorithm it signs with, such as jose.ES256.
	Algorithm jose.SignatureAlgorithm
	// Private is the private key: a crypto.Signer, or a []byte for HMAC.
	// An issuer publishes only keys that are a crypto.Signer.
	Private any
}

// NewKey makes an ES256 key (ECDSA P-256) whose ID is id.
func NewKey(t testing.TB, id string) Key {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return Key{ID: id, Algorithm: jose.ES256, Private: k}
}

// Public returns the public half of k as a JSON Web Key. It panics unless
// k.Private is a crypto.Signer.
func (k Key) Public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.Private.(crypto.Signer).Public(), KeyID: k.ID, Algorithm: string(k.Algorithm), Use: "sig"}
}

// An Issuer is an OpenID Connect issuer on 127.0.0.1, over HTTPS: it serves
// a discovery document at /.well-known/openid-configuration and its key set
// at /keys. It is safe for concurrent use.
type Issuer struct {
	srv *httptest.Server

	mu   sync.Mutex
	keys []Key
	down bool

	discoveries, fetches atomic.Int32
}

// NewIssuer serves an issuer that publishes keys, or a new ES256 key "k1"
// when there are none, until the test ends.
func NewIssuer(t testing.TB, keys ...Key) *Issuer {
	t.Helper()
	if len(keys) == 0 {
		keys = []Key{NewKey(t, "k1")}
	}
	is := &Issuer{keys: keys}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		is.discoveries.Add(1)
		if is.isDown() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                is.URL(),
			"jwks_uri":                              is.JWKSURL(),
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, _ *http.Request) {
		is.fetches.Add(1)
		if is.isDown() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		var set jose.JSONWebKeySet
		is.mu.Lock()
		for _, k := range is.keys {
			set.Keys = append(set.Keys, k.Public())
		}
		is.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	})
	is.srv = httptest.NewTLSServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

// URL returns the issuer's URL, the "iss" of its tokens.
func (is *Issuer) URL() string { return is.srv.URL }

// JWKSURL returns the URL of the issuer's key set.
func (is *Issuer) JWKSURL() string { return is.srv.URL + "/keys" }

// Client returns an HTTP client that trusts the issuer's certificate.
func (is *Issuer) Client() *http.Client { return is.srv.Client() }

// Certificate returns the issuer's TLS certificate, which is self-signed.
func (is *Issuer) Certificate() *x509.Certificate { return is.srv.Certificate() }

// Key returns the first key the issuer publishes, which [Issuer.Token]
// signs with.
func (is *Issuer) Key() Key {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.keys[0]
}

// AddKey publishes k too, as an issuer does when it rotates its keys.
func (is *Issuer) AddKey(k Key) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys = append(is.keys, k)
}

// SetDown makes the discovery document and the key set answer 503 Service
// Unavailable while down is true.
func (is *Issuer) SetDown(down bool) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.down = down
}

func (is *Issuer) isDown() bool {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.down
}

// Discoveries returns how many times the discovery document was asked for.
func (is *Issuer) Discoveries() int { return int(is.discoveries.Load()) }

// KeyFetches returns how many times the key set was asked for.
func (is *Issuer) KeyFetches() int { return int(is.fetches.Load()) }

// Claims returns the claims of a valid token for the user "alice" from the
// issuer, for [Audience], issued now and expiring in five minutes.
func (is *Issuer) Claims() map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": is.URL(),
		"aud": Audience,
		"sub": "alice",
		"iat": now.Unix(),
		"exp": now.Add(5 * time.Minute).Unix(),
	}
}

// Token returns a token of [Issuer.Claims] changed by edit (unless nil),
// signed with [Issuer.Key].
func (is *Issuer) Token(t testing.TB, edit func(claims map[string]any)) string {
	t.Helper()
	c := is.Claims()
	if edit != nil {
		edit(c)
	}
	return Sign(t, is.Key(), c)
}

// Sign returns a JWT of claims signed with k, compactly serialized, with
// k's ID as "kid" and "JWT" as "typ".
func Sign(t testing.TB, k Key, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	key := jose.JSONWebKey{Key: k.Private, KeyID: k.ID}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.Algorithm, Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
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
