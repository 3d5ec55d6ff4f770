package certs

import (
	"net/http"
	"slices"

	"github.com/cup-dev/cup/auth"
)

// ClientCertificates authenticates callers by the TLS client certificate
// that the server verified against its client certificate authorities (see
// [ServerTLS]). The identity's User is the certificate's subject common
// name, its Groups the subject's organizations, and its Method
// "certificate".
//
// A request without a verified client certificate (plain HTTP, no
// certificate, or a server that does not verify them) fails with
// [auth.ErrNoCredentials]; one whose certificate has no common name fails with
// [auth.ErrUnauthenticated]. The zero value is ready to use.
type ClientCertificates struct{}

var _ auth.Authenticator = ClientCertificates{}

// Authenticate implements auth.Authenticator.
func (ClientCertificates) Authenticate(r *http.Request) (*auth.Identity, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return nil, auth.NoCredentialsf("no verified client certificate")
	}
	leaf := r.TLS.VerifiedChains[0][0]
	if leaf.Subject.CommonName == "" {
		return nil, auth.Unauthenticatedf("the client certificate's subject has no common name to name the user")
	}
	groups := slices.DeleteFunc(slices.Clone(leaf.Subject.Organization), func(g string) bool { return g == "" })
	return &auth.Identity{User: leaf.Subject.CommonName, Groups: groups, Method: auth.MethodCertificate}, nil
}
