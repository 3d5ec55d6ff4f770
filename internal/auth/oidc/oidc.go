// Package oidc authenticates callers by JSON Web Tokens that an OpenID
// Connect issuer signed: ID tokens, or access tokens in JWT form (RFC 9068),
// sent as "Authorization: Bearer <jwt>".
//
// A token is accepted when its signature verifies against a key from the
// issuer's key set (JWKS) with an accepted algorithm, its iss claim is the
// issuer, its aud claim names the configured audience, the current time is
// within its exp, nbf and iat claims (give or take a clock skew), and it
// carries the user claim. The identity's user and groups come from claims.
//
// Nothing is fetched until the first token arrives (or [Authenticator.Refresh]
// is called): then the issuer's discovery document names the key set, which
// is fetched and cached. A token signed by a key that is not cached makes the
// key set be fetched again (at most every KeyRefreshInterval), so the
// issuer's key rotation needs no restart; cached keys are also refreshed
// after an hour, so that keys the issuer withdrew stop being accepted.
// While the issuer cannot be reached, requests fail with an error that wraps
// neither [auth.ErrNoCredentials] nor [auth.ErrUnauthenticated] (the server
// answers Unavailable), and the next request tries again.
package oidc

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	josejson "github.com/go-jose/go-jose/v4/json"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/cup-dev/cup/auth"
)

// Defaults of Config.
const (
	// DefaultUserClaim is the claim that names the user.
	DefaultUserClaim = "sub"
	// DefaultGroupsClaim is the claim that lists the user's groups.
	DefaultGroupsClaim = "groups"
	// DefaultClockSkew is the leeway allowed on exp, nbf and iat.
	DefaultClockSkew = time.Minute
	// DefaultKeyRefreshInterval is the least time between two fetches of
	// the issuer's key set.
	DefaultKeyRefreshInterval = 10 * time.Second
)

// defaultSigningAlgorithms are the algorithms accepted when
// Config.SigningAlgorithms is empty.
var defaultSigningAlgorithms = []string{"RS256", "ES256"}

// signingAlgorithms are the algorithms Config.SigningAlgorithms may name:
// the asymmetric ones. "none" and the HMAC algorithms (HS256...) are never
// accepted, since a JWKS holds public keys that anyone may use as a secret.
var signingAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

const (
	// keyMaxAge is the age after which cached keys are fetched again, so
	// that a key the issuer withdrew stops being accepted. If that fetch
	// fails, the cached keys stay in use.
	keyMaxAge = time.Hour
	// fetchTimeout bounds discovery plus the key set's fetch.
	fetchTimeout = 10 * time.Second
	// maxKeySetSize bounds the key set document.
	maxKeySetSize = 1 << 20
)

// Config configures an Authenticator. The zero value of each optional
// field selects its documented default.
type Config struct {
	// IssuerURL is the issuer, exactly as tokens' iss claim names it, e.g.
	// "https://accounts.example.com". Required. It must be an https URL,
	// or an http URL of a loopback address (for development). Unless
	// JWKSURL is set, the key set's URL is read from the discovery document
	// at IssuerURL + "/.well-known/openid-configuration", whose issuer must
	// be IssuerURL.
	IssuerURL string
	// Audience is the value tokens' aud claim must contain: usually the
	// client ID that cup's users obtain tokens for. Required.
	Audience string
	// JWKSURL is the URL of the issuer's key set. By default it is
	// discovered from IssuerURL. Same URL rules as IssuerURL.
	JWKSURL string
	// UserClaim is the claim whose string value is the user's name. The
	// default is "sub". When it is "email" and the token has an
	// email_verified claim, that claim must be true.
	UserClaim string
	// GroupsClaim is the claim that lists the user's groups, a string or an
	// array of strings; a token without it has no groups. The default is
	// "groups".
	GroupsClaim string
	// UserPrefix is put before the user's name, e.g. "oidc:", so that names
	// from the issuer cannot collide with static tokens' users. None by
	// default.
	UserPrefix string
	// GroupPrefix is put before each group's name. None by default.
	GroupPrefix string
	// ClockSkew is the leeway allowed on exp, nbf and iat, for clocks that
	// differ between issuer and server. The default is one minute; a
	// negative value allows none.
	ClockSkew time.Duration
	// SigningAlgorithms are the signature algorithms accepted, from RS256,
	// RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512 and EdDSA. The
	// default is RS256 and ES256. "none" and HS256 (and the other HMAC
	// algorithms) are refused.
	SigningAlgorithms []string
	// CAFile is a PEM file of the certificate authorities to trust when
	// reaching the issuer, instead of the system's. It is read when the
	// issuer is first contacted. Not together with HTTPClient.
	CAFile string
	// HTTPClient reaches the issuer. By default a client with the default
	// transport's settings (and CAFile's authorities, if set). Each fetch is
	// bounded to 10 seconds besides any timeout of the client.
	HTTPClient *http.Client
	// KeyRefreshInterval is the least time between two fetches of the key
	// set that tokens signed by unknown keys cause; within it, such tokens
	// are refused. The default is 10 seconds; a negative value sets no
	// limit.
	KeyRefreshInterval time.Duration
}

// Authenticator accepts JWTs of one issuer. It is an [auth.Authenticator]
// and safe for concurrent use.
type Authenticator struct {
	cfg  Config
	algs []jose.SignatureAlgorithm

	// state holds the key set and the outcome of the last fetch.
	state atomic.Pointer[keyState]
	// fetching is a semaphore held by the one caller fetching keys.
	fetching chan struct{}
	// Guarded by fetching:
	client  *http.Client
	jwksURL string
}

var _ auth.Authenticator = (*Authenticator)(nil)

// keyState is an immutable snapshot of the cached keys.
type keyState struct {
	// gen counts fetch attempts, so that callers who waited for a fetch
	// can tell one happened.
	gen     uint64
	keys    []jose.JSONWebKey
	fetched time.Time // last successful fetch; zero if none
	tried   time.Time // last attempt
	err     error     // last attempt's error, nil if it succeeded
}

func (s *keyState) loaded() bool { return !s.fetched.IsZero() }

func (s *keyState) has(kid string) bool {
	if kid == "" {
		return len(s.keys) > 0
	}
	return slices.ContainsFunc(s.keys, func(k jose.JSONWebKey) bool { return k.KeyID == kid })
}

// New checks cfg and returns an Authenticator. It does no I/O: the issuer
// is first contacted when a token arrives, or on Refresh.
func New(cfg Config) (*Authenticator, error) {
	if cfg.IssuerURL == "" {
		return nil, errors.New("oidc: the issuer URL is required")
	}
	if err := checkURL(cfg.IssuerURL); err != nil {
		return nil, fmt.Errorf("oidc: issuer URL: %w", err)
	}
	if cfg.Audience == "" {
		return nil, errors.New("oidc: the audience is required: the client ID tokens are issued for")
	}
	if cfg.JWKSURL != "" {
		if err := checkURL(cfg.JWKSURL); err != nil {
			return nil, fmt.Errorf("oidc: JWKS URL: %w", err)
		}
	}
	if cfg.CAFile != "" && cfg.HTTPClient != nil {
		return nil, errors.New("oidc: set either a CA file or an HTTP client, not both")
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = DefaultUserClaim
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = DefaultGroupsClaim
	}
	switch {
	case cfg.ClockSkew == 0:
		cfg.ClockSkew = DefaultClockSkew
	case cfg.ClockSkew < 0:
		cfg.ClockSkew = 0
	}
	switch {
	case cfg.KeyRefreshInterval == 0:
		cfg.KeyRefreshInterval = DefaultKeyRefreshInterval
	case cfg.KeyRefreshInterval < 0:
		cfg.KeyRefreshInterval = 0
	}
	if len(cfg.SigningAlgorithms) == 0 {
		cfg.SigningAlgorithms = defaultSigningAlgorithms
	}
	cfg.SigningAlgorithms = slices.Clone(cfg.SigningAlgorithms)
	algs := make([]jose.SignatureAlgorithm, len(cfg.SigningAlgorithms))
	for i, alg := range cfg.SigningAlgorithms {
		if !slices.Contains(signingAlgorithms, alg) {
			return nil, fmt.Errorf("oidc: signing algorithm %q is not supported; use some of %s", alg, strings.Join(signingAlgorithms, ", "))
		}
		algs[i] = jose.SignatureAlgorithm(alg)
	}
	a := &Authenticator{cfg: cfg, algs: algs, fetching: make(chan struct{}, 1)}
	a.state.Store(&keyState{})
	return a, nil
}

// checkURL accepts https URLs, and http URLs of loopback hosts.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	switch {
	case u.Host == "":
		return fmt.Errorf("%q is not an absolute URL", s)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("%q: use https (http only for loopback addresses)", s)
	default:
		return fmt.Errorf("%q: use https", s)
	}
}

// Authenticate implements [auth.Authenticator]. A request without a bearer
// token, or whose bearer token is not a JWT (three base64url parts), fails
// with [auth.ErrNoCredentials]. A JWT that is not valid fails with an error
// wrapping [auth.ErrUnauthenticated] whose message says why without
// repeating the token or its claims. If the issuer's keys cannot be
// fetched, the error wraps neither. The identity's Method is [auth.MethodOIDC].
func (a *Authenticator) Authenticate(r *http.Request) (*auth.Identity, error) {
	token, ok := auth.BearerToken(r)
	if !ok {
		return nil, auth.NoCredentialsf("no bearer token")
	}
	if !isJWT(token) {
		return nil, auth.NoCredentialsf("the bearer token is not a JWT")
	}
	jws, err := jose.ParseSignedCompact(token, a.algs)
	if err != nil {
		if _, ok := errors.AsType[*jose.ErrUnexpectedSignatureAlgorithm](err); ok {
			return nil, auth.Unauthenticatedf("token is signed with an algorithm that is not accepted (accepted: %s)", strings.Join(a.cfg.SigningAlgorithms, ", "))
		}
		return nil, auth.Unauthenticatedf("malformed token")
	}
	h := jws.Signatures[0].Header
	if err := a.ensureKeys(r.Context(), h.KeyID); err != nil {
		return nil, err
	}
	payload, err := a.verify(jws, h)
	if err != nil {
		return nil, err
	}
	// Decoded as go-jose's jwt package decodes claims: with its JSON
	// package, whose field names are case-sensitive.
	var std jwt.Claims
	var claims map[string]any
	if josejson.Unmarshal(payload, &std) != nil || josejson.Unmarshal(payload, &claims) != nil || claims == nil {
		return nil, auth.Unauthenticatedf("malformed token: its claims are not valid JSON of the right types")
	}
	return a.identity(&std, claims)
}

// verify checks the signature of jws, whose only signature has header h,
// with the cached keys that h's kid (any, if it has none) and algorithm
// select, and returns its payload.
func (a *Authenticator) verify(jws *jose.JSONWebSignature, h jose.Header) ([]byte, error) {
	known := false
	for _, key := range a.state.Load().keys {
		if h.KeyID != "" && key.KeyID != h.KeyID || key.Algorithm != "" && key.Algorithm != h.Algorithm {
			continue
		}
		known = true
		if payload, err := jws.Verify(key.Key); err == nil {
			return payload, nil
		}
	}
	if !known {
		return nil, auth.Unauthenticatedf("token is signed by an unknown key")
	}
	return nil, auth.Unauthenticatedf("token signature is not valid")
}

// isJWT reports whether token has the form of a JWS in compact
// serialisation: three base64url parts, the first two non-empty (the third
// is empty for alg "none", which is refused later, as a JWT).
func isJWT(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return false
	}
	for _, p := range parts {
		for _, c := range []byte(p) {
			if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// identity checks the claims of a token whose signature verified: std,
// and claims, all of them.
func (a *Authenticator) identity(std *jwt.Claims, claims map[string]any) (*auth.Identity, error) {
	err := std.ValidateWithLeeway(jwt.Expected{Issuer: a.cfg.IssuerURL, AnyAudience: jwt.Audience{a.cfg.Audience}}, a.cfg.ClockSkew)
	switch {
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return nil, auth.Unauthenticatedf("token is from another issuer")
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, auth.Unauthenticatedf("token is for another audience")
	case std.Expiry == nil:
		return nil, auth.Unauthenticatedf("token has no expiry (exp claim)")
	case errors.Is(err, jwt.ErrExpired):
		return nil, auth.Unauthenticatedf("token expired")
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, auth.Unauthenticatedf("token is not valid yet")
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, auth.Unauthenticatedf("token is issued in the future")
	case err != nil:
		return nil, auth.Unauthenticatedf("token's claims are not valid")
	}

	user, _ := claims[a.cfg.UserClaim].(string)
	if user == "" {
		return nil, auth.Unauthenticatedf("token has no %q claim (a non-empty string) to name the user", a.cfg.UserClaim)
	}
	if a.cfg.UserClaim == "email" {
		if v, ok := claims["email_verified"]; ok && v != true {
			return nil, auth.Unauthenticatedf("token's email is not verified")
		}
	}
	var groups []string
	switch v := claims[a.cfg.GroupsClaim].(type) {
	case nil:
	case string:
		groups = append(groups, v)
	case []any:
		for _, g := range v {
			s, ok := g.(string)
			if !ok {
				return nil, auth.Unauthenticatedf("token's %q claim is not a string or a list of strings", a.cfg.GroupsClaim)
			}
			groups = append(groups, s)
		}
	default:
		return nil, auth.Unauthenticatedf("token's %q claim is not a string or a list of strings", a.cfg.GroupsClaim)
	}
	groups = slices.DeleteFunc(groups, func(g string) bool { return g == "" })
	for i, g := range groups {
		groups[i] = a.cfg.GroupPrefix + g
	}
	return &auth.Identity{User: a.cfg.UserPrefix + user, Groups: groups, Method: auth.MethodOIDC}, nil
}

// Refresh fetches the discovery document (unless JWKSURL is set or it was
// fetched before) and the key set now, whatever was cached. The server may
// call it at startup, to report a misconfigured issuer at once rather than
// on the first request. If ctx is done before the fetch ends, Refresh
// returns its error and leaves the cache as it was.
func (a *Authenticator) Refresh(ctx context.Context) error {
	select {
	case a.fetching <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-a.fetching }()
	return a.fetch(ctx)
}

// ensureKeys makes sure the keys to verify a token signed by the key kid
// (any key if kid is empty) are cached, if the issuer has them, fetching
// the key set if needed and allowed. It fails only when the issuer could
// not be reached; a key the issuer does not have is left to the signature
// check to refuse.
func (a *Authenticator) ensureKeys(ctx context.Context, kid string) error {
	st := a.state.Load()
	if st.loaded() && st.has(kid) && time.Since(st.fetched) < keyMaxAge {
		return nil
	}
	if st.loaded() && time.Since(st.tried) < a.cfg.KeyRefreshInterval {
		// Too soon to fetch again: use what we have. While the issuer is
		// failing, a key we do not have may be one it has.
		if !st.has(kid) && st.err != nil {
			return st.err
		}
		return nil
	}

	select {
	case a.fetching <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-a.fetching }()
	if now := a.state.Load(); now.gen != st.gen {
		// Someone fetched while we waited: take their outcome rather than
		// fetch again (which would hammer an issuer that is down).
		return now.outcome(kid)
	}
	// The fetch serves every caller waiting for it, so one caller giving up
	// does not cancel it.
	if err := a.fetch(context.WithoutCancel(ctx)); err != nil && !a.state.Load().has(kid) {
		return err
	}
	return nil
}

// outcome is what ensureKeys reports after a fetch that left s.
func (s *keyState) outcome(kid string) error {
	if !s.loaded() || !s.has(kid) && s.err != nil {
		return s.err
	}
	return nil
}

// fetch discovers the key set's URL if need be and fetches the key set,
// within fetchTimeout. A fetch that fails because ctx is done leaves the
// state as it was, so that callers waiting for it fetch again. Callers hold
// the fetching semaphore.
func (a *Authenticator) fetch(ctx context.Context) error {
	fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	keys, err := a.fetchKeys(fctx)
	if err != nil && ctx.Err() != nil {
		return err
	}
	prev := a.state.Load()
	next := &keyState{gen: prev.gen + 1, keys: prev.keys, fetched: prev.fetched, tried: time.Now(), err: err}
	if err == nil {
		next.keys, next.fetched = keys, next.tried
	}
	a.state.Store(next)
	return err
}

func (a *Authenticator) fetchKeys(ctx context.Context) ([]jose.JSONWebKey, error) {
	client, err := a.httpClient()
	if err != nil {
		return nil, err
	}
	if a.jwksURL == "" {
		if a.cfg.JWKSURL != "" {
			a.jwksURL = a.cfg.JWKSURL
		} else {
			p, err := oidc.NewProvider(oidc.ClientContext(ctx, client), a.cfg.IssuerURL)
			if err != nil {
				return nil, fmt.Errorf("oidc: discovery at %s: %w", a.cfg.IssuerURL, err)
			}
			var doc struct {
				JWKSURI string `json:"jwks_uri"`
			}
			if err := p.Claims(&doc); err != nil || doc.JWKSURI == "" {
				return nil, fmt.Errorf("oidc: discovery at %s: the document names no jwks_uri", a.cfg.IssuerURL)
			}
			a.jwksURL = doc.JWKSURI
		}
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.jwksURL, nil)
	if err != nil {
		return nil, fmt.Errorf("oidc: key set URL: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oidc: fetching the key set: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxKeySetSize+1))
	if err != nil {
		return nil, fmt.Errorf("oidc: fetching the key set from %s: %w", a.jwksURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("oidc: fetching the key set from %s: %s", a.jwksURL, resp.Status)
	}
	if len(body) > maxKeySetSize {
		return nil, fmt.Errorf("oidc: the key set at %s is larger than %d bytes", a.jwksURL, maxKeySetSize)
	}
	keys, err := parseKeySet(body)
	if err != nil {
		return nil, fmt.Errorf("oidc: the key set at %s: %w", a.jwksURL, err)
	}
	return keys, nil
}

// parseKeySet reads a JWKS, keeping the public signing keys of the types
// go-jose knows and skipping the rest, as RFC 7517 section 5 asks.
func parseKeySet(data []byte) ([]jose.JSONWebKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, err
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if err := json.Unmarshal(raw, &k); err != nil {
			continue
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		switch k.Key.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// httpClient returns the client that reaches the issuer, reading CAFile the
// first time. Callers hold the fetching semaphore.
func (a *Authenticator) httpClient() (*http.Client, error) {
	if a.cfg.HTTPClient != nil {
		return a.cfg.HTTPClient, nil
	}
	if a.client != nil {
		return a.client, nil
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	if a.cfg.CAFile != "" {
		pem, err := os.ReadFile(a.cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("oidc: CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("oidc: CA file %s: no PEM certificates", a.cfg.CAFile)
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	a.client = &http.Client{Transport: t}
	return a.client, nil
}
