package oidc_test

import (
	"net/http/httptest"
	"testing"

	"github.com/cup-dev/cup/internal/auth/authtest"
)

// BenchmarkAuthenticate measures the per-request path: a valid ES256 token
// whose key is cached.
func BenchmarkAuthenticate(b *testing.B) {
	k := authtest.NewKey(b, "ec")
	is := authtest.NewIssuer(b, k)
	a := authenticator(b, is)
	if err := a.Refresh(b.Context()); err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/apis", nil)
	r.Header.Set("Authorization", "Bearer "+authtest.Sign(b, k, is.Claims()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(r); err != nil {
			b.Fatal(err)
		}
	}
}
