package scm_test

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cup-dev/cup/scm"
)

const (
	testAppID          = 7
	testInstallationID = 42
)

// testKey is an RSA key for the tests' App, made once.
var testKey = sync.OnceValues(func() (*rsa.PrivateKey, []byte) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
})

// fakeGitHub serves installation tokens and one API path under prefix
// (/api/v3 for Enterprise). Each token expires ttl after it is issued.
type fakeGitHub struct {
	*httptest.Server
	t   *testing.T
	ttl time.Duration

	mu      sync.Mutex
	issued  int      // installation tokens issued
	apiAuth []string // Authorization of API calls
}

func newFakeGitHub(t *testing.T, prefix string, ttl time.Duration) *fakeGitHub {
	f := &fakeGitHub{t: t, ttl: ttl}
	mux := http.NewServeMux()
	mux.HandleFunc(fmt.Sprintf("POST %s/app/installations/%d/access_tokens", prefix, testInstallationID), f.accessTokens)
	mux.HandleFunc("GET "+prefix+"/repos/acme/config/pulls", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.apiAuth = append(f.apiAuth, r.Header.Get("Authorization"))
		f.mu.Unlock()
		_, _ = io.WriteString(w, "[]")
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeGitHub) accessTokens(w http.ResponseWriter, r *http.Request) {
	key, _ := testKey()
	jwt, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		f.t.Errorf("token request with Authorization %q, want a bearer JWT", r.Header.Get("Authorization"))
		http.Error(w, "{}", http.StatusUnauthorized)
		return
	}
	if err := checkJWT(jwt, &key.PublicKey, fmt.Sprint(testAppID)); err != nil {
		f.t.Errorf("token request JWT: %v", err)
		http.Error(w, "{}", http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	f.issued++
	n := f.issued
	f.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"token":      fmt.Sprintf("ghs_installation_%d", n),
		"expires_at": time.Now().Add(f.ttl).UTC().Format(time.RFC3339Nano),
	})
}

func (f *fakeGitHub) state() (issued int, auth []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.issued, append([]string(nil), f.apiAuth...)
}

// checkJWT checks a JSON Web Token is RS256-signed by pub, issued by iss
// and valid now.
func checkJWT(jwt string, pub *rsa.PublicKey, iss string) error {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return fmt.Errorf("%d parts, want 3", len(parts))
	}
	var header struct{ Alg string }
	var claims struct {
		Iss      string
		Iat, Exp int64
	}
	for i, v := range []any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, v); err != nil {
			return err
		}
	}
	if header.Alg != "RS256" {
		return fmt.Errorf("alg %q, want RS256", header.Alg)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig); err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	if claims.Iss != iss {
		return fmt.Errorf("iss %q, want %q", claims.Iss, iss)
	}
	if now := time.Now().Unix(); claims.Iat > now || claims.Exp < now {
		return fmt.Errorf("valid from %d to %d, not now (%d)", claims.Iat, claims.Exp, now)
	}
	return nil
}

func TestGitHubAppToken(t *testing.T) {
	t.Parallel()
	// ghinstallation renews a token a minute before it expires: this one
	// is due for renewal two seconds after it is issued.
	gh := newFakeGitHub(t, "/api/v3", time.Minute+2*time.Second)
	_, pemKey := testKey()
	// In a bubble, with the fake called in memory, the wait for the token
	// to be due passes at once.
	synctest.Test(t, func(t *testing.T) {
		tr := handlerTransport{gh.Config.Handler}
		src, err := scm.GitHubAppToken(scm.GitHubApp{
			BaseURL: gh.URL + "/api/v3/", AppID: testAppID, InstallationID: testInstallationID,
			PrivateKey: pemKey, Transport: tr,
		})
		if err != nil {
			t.Fatal(err)
		}
		if issued, _ := gh.state(); issued != 0 {
			t.Fatalf("%d tokens fetched before the first call, want none", issued)
		}
		c := scm.NewHTTPClient(scm.HTTPOptions{Token: src, Transport: tr})
		api := gh.URL + "/api/v3/repos/acme/config/pulls"

		get(t, c, api)
		time.Sleep(time.Second)
		get(t, c, api)
		if issued, _ := gh.state(); issued != 1 {
			t.Errorf("%d tokens fetched for two calls, want 1", issued)
		}
		time.Sleep(1100 * time.Millisecond)
		get(t, c, api)
		issued, auth := gh.state()
		if issued != 2 {
			t.Errorf("%d tokens fetched after the first was due for renewal, want 2", issued)
		}
		want := []string{"Bearer ghs_installation_1", "Bearer ghs_installation_1", "Bearer ghs_installation_2"}
		if strings.Join(auth, ",") != strings.Join(want, ",") {
			t.Errorf("API calls carried %q, want %q", auth, want)
		}
	})
}

// handlerTransport serves requests with a handler in memory, in the
// caller's goroutine, so that a synctest bubble's clock can move.
type handlerTransport struct{ h http.Handler }

func (tr handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	if r.Body != nil {
		defer r.Body.Close()
	}
	tr.h.ServeHTTP(w, r)
	res := w.Result()
	res.Request = r
	return res, nil
}

func TestGitHubAppTokenDefaultBaseURL(t *testing.T) {
	t.Parallel()
	body := `{"token":"ghs_x","expires_at":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`
	var got string
	src := appTokenAnswered(t, http.StatusCreated, io.NopCloser(strings.NewReader(body)), &got)
	tok, err := src.Token(t.Context())
	if err != nil || tok != "ghs_x" {
		t.Fatalf("got %q, %v; want ghs_x", tok, err)
	}
	if want := fmt.Sprintf("POST https://api.github.com/app/installations/%d/access_tokens", testInstallationID); got != want {
		t.Errorf("token fetched with %q, want %q", got, want)
	}
}

func TestGitHubAppTokenRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		want   error
	}{
		{http.StatusUnauthorized, scm.ErrUnauthenticated},
		{http.StatusNotFound, scm.ErrUnauthenticated},
		{http.StatusTooManyRequests, scm.ErrRateLimited},
		{http.StatusBadGateway, scm.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			t.Parallel()
			body := &closeRecorder{Reader: strings.NewReader(`{"message":"no"}`)}
			src := appTokenAnswered(t, tt.status, body, nil)
			// Through the client, which sends nothing without a token.
			c := scm.NewHTTPClient(scm.HTTPOptions{Token: src, Transport: roundTripFunc(
				func(*http.Request) (*http.Response, error) { return nil, errors.New("sent without a token") })})
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://api.github.com/user", nil)
			res, err := c.Do(req)
			if err == nil {
				res.Body.Close()
				t.Fatal("the call succeeded")
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
			if !body.closed {
				t.Error("the refusal's body was left open")
			}
		})
	}
}

// appTokenAnswered returns the test App's token source at the default base
// URL, whose token requests are answered with status and body; it records
// each request's method and URL in *seen when seen is not nil.
func appTokenAnswered(t *testing.T, status int, body io.ReadCloser, seen *string) scm.TokenSource {
	t.Helper()
	tr := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if seen != nil {
			*seen = r.Method + " " + r.URL.String()
		}
		return &http.Response{StatusCode: status, Status: http.StatusText(status), Body: body,
			Header: http.Header{}, Request: r}, nil
	})
	_, pemKey := testKey()
	src, err := scm.GitHubAppToken(scm.GitHubApp{AppID: testAppID, InstallationID: testInstallationID,
		PrivateKey: pemKey, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestGitHubAppTokenInvalidConfig(t *testing.T) {
	t.Parallel()
	_, pemKey := testKey()
	tests := []struct {
		name string
		cfg  scm.GitHubApp
		want string
	}{
		{"no app ID", scm.GitHubApp{InstallationID: 1, PrivateKey: pemKey}, "app ID"},
		{"no installation ID", scm.GitHubApp{AppID: 1, PrivateKey: pemKey}, "installation ID"},
		{"no key", scm.GitHubApp{AppID: 1, InstallationID: 1}, "private key is required"},
		{"bad key", scm.GitHubApp{AppID: 1, InstallationID: 1, PrivateKey: []byte("not PEM")}, "private key"},
		{"bad base URL", scm.GitHubApp{BaseURL: "ghe.example.com", AppID: 1, InstallationID: 1, PrivateKey: pemKey},
			"not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := scm.GitHubAppToken(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}
