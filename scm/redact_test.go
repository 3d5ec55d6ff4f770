package scm_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cup-dev/cup/scm"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, s string
		secrets []string
		want    string
	}{
		{"none", "nothing to hide", nil, "nothing to hide"},
		{"empty secret", "nothing to hide", []string{""}, "nothing to hide"},
		{"plain", "token ghp_abc refused", []string{"ghp_abc"}, "token [REDACTED] refused"},
		{"every occurrence", "a=x1y b=x1y", []string{"x1y"}, "a=[REDACTED] b=[REDACTED]"},
		{"query-escaped", "GET /p?private_token=a%2Bb%2Fc", []string{"a+b/c"}, "GET /p?private_token=[REDACTED]"},
		{"path-escaped", "GET /a%2Fb/x", []string{"a/b"}, "GET /[REDACTED]/x"},
		{"longest first", "secret-and-more", []string{"secret", "secret-and-more"}, "[REDACTED]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := scm.Redact(tt.s, tt.secrets...); got != tt.want {
				t.Errorf("Redact(%q, %q) = %q, want %q", tt.s, tt.secrets, got, tt.want)
			}
		})
	}
}

func TestTransportErrorsHideCredentials(t *testing.T) {
	t.Parallel()
	const token = "tok-Sup3rSecret"
	// An underlying transport that quotes everything it was given.
	leaky := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return nil, &url.Error{Op: r.Method, URL: r.URL.String(),
			Err: fmt.Errorf("refused %s: %w", r.Header.Get("Authorization"), context.DeadlineExceeded)}
	})
	c := scm.NewHTTPClient(scm.HTTPOptions{Token: scm.StaticToken(token), Transport: leaky})
	rawURL := "https://oauth2:pa55word-in-url@gitlab.example.com/api/v4/projects?private_token=qu3ry-t0ken&page=2"
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}

	// The transport's own error hides all three.
	res, err := c.Transport.RoundTrip(req)
	if err == nil {
		res.Body.Close()
		t.Fatal("the call succeeded")
	}
	for _, secret := range []string{token, "pa55word-in-url", "qu3ry-t0ken"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error %q contains %q", err, secret)
		}
	}
	if !strings.Contains(err.Error(), "gitlab.example.com") || !strings.Contains(err.Error(), "page=2") {
		t.Errorf("the error %q lost more than the secrets", err)
	}
	// What callers test for survives.
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the error %q is not context.DeadlineExceeded", err)
	}

	// Through the client, which adds the URL without its password.
	res, err = c.Do(req)
	if err == nil {
		res.Body.Close()
		t.Fatal("the call succeeded")
	}
	for _, secret := range []string{token, "pa55word-in-url"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error %q contains %q", err, secret)
		}
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("the error %q is not a timeout", err)
	}
}

func TestTransportErrorsWithoutSecretsAreKept(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {})
	f.Close()
	c := f.client(scm.HTTPOptions{Token: scm.StaticToken("tok-123456")})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.URL+"/pulls", nil)
	res, err := c.Do(req)
	if err == nil {
		res.Body.Close()
		t.Fatal("the call succeeded")
	}
	if _, ok := errors.AsType[*net.OpError](err); !ok {
		t.Errorf("got %v (%T), want the dial error kept", err, errors.Unwrap(err))
	}
}

func ExampleRedact() {
	fmt.Println(scm.Redact(`Get "https://example.com/?private_token=glpat%2Babc": refused`, "glpat+abc"))
	// Output: Get "https://example.com/?private_token=[REDACTED]": refused
}
