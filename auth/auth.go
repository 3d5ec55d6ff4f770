// Package auth is the contract for who a caller is and what they may do.
//
// An [Authenticator] turns the credentials of an HTTP request (a bearer
// token, a client certificate) into an [Identity]; an [Authorizer] decides
// whether an identity may perform a request described by [Attributes]. The
// server consults both on every API call when a policy is configured, and
// neither when it is not (the embedded demo).
//
// This package is the contract only, public so that a program embedding
// the server (package server) can bring its own authenticator and
// authorizer. cupd's implementations are internal: internal/auth/tokens
// (static bearer tokens from a file of hashes), internal/auth/oidc (JWTs
// checked against an issuer's keys) and internal/auth/certs (verified TLS
// client certificates); internal/rbac implements [Authorizer] with
// Kubernetes-style roles and bindings.
package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Identity is an authenticated caller.
type Identity struct {
	// User is the caller's name: a token's subject, a JWT claim, a
	// certificate's common name. Never empty.
	User string
	// Groups are the groups the caller belongs to, for bindings to name.
	Groups []string
	// Method says how the caller was authenticated: one of the Method
	// constants.
	Method string
}

// Values of Identity.Method.
const (
	// MethodToken: a static bearer token (package tokens).
	MethodToken = "token"
	// MethodOIDC: a JWT of an OpenID Connect issuer (package oidc).
	MethodOIDC = "oidc"
	// MethodCertificate: a verified TLS client certificate
	// ([ClientCertificates]).
	MethodCertificate = "certificate"
)

// Sentinel errors of authentication. Authenticators wrap them with a
// reason that is safe to show the caller: it never repeats the credential
// and says nothing about the repository.
var (
	// ErrNoCredentials: the request carries no credentials this
	// authenticator accepts (none at all, or a kind it does not handle), so
	// another authenticator may.
	ErrNoCredentials = errors.New("no credentials")
	// ErrUnauthenticated: the request carries credentials of this
	// authenticator's kind, and they are not valid (malformed, expired,
	// for another audience, badly signed, unknown).
	ErrUnauthenticated = errors.New("unauthenticated")
)

// Authenticator establishes who sent a request.
//
// Authenticate returns the caller's identity, or an error wrapping
// ErrNoCredentials or ErrUnauthenticated. Any other error is a fault of the
// authenticator itself (an issuer's keys cannot be fetched), which the
// server reports as Unavailable. Implementations are safe for concurrent
// use and do not read the request's body.
type Authenticator interface {
	Authenticate(r *http.Request) (*Identity, error)
}

// Chain tries authenticators in order. The first identity wins; the first
// error that is not ErrNoCredentials ends the search. When no
// authenticator recognises the request's credentials, Chain fails with
// ErrUnauthenticated, saying whether credentials were missing or not
// recognised.
type Chain []Authenticator

var _ Authenticator = Chain(nil)

// Authenticate implements Authenticator.
func (c Chain) Authenticate(r *http.Request) (*Identity, error) {
	for _, a := range c {
		id, err := a.Authenticate(r)
		if err == nil {
			return id, nil
		}
		if !errors.Is(err, ErrNoCredentials) {
			return nil, err
		}
	}
	if r.Header.Get("Authorization") != "" {
		return nil, Unauthenticatedf("the credentials in the Authorization header are not recognised")
	}
	return nil, Unauthenticatedf("no credentials: send a bearer token in the Authorization header")
}

// Unauthenticatedf returns an error wrapping ErrUnauthenticated whose
// message is format formatted with args, as by [fmt.Sprintf]. The message
// is shown to the caller: it must not repeat the credential.
func Unauthenticatedf(format string, args ...any) error {
	return &reasonError{reason: fmt.Sprintf(format, args...), sentinel: ErrUnauthenticated}
}

// NoCredentialsf returns an error wrapping ErrNoCredentials whose message is
// format formatted with args, as by [fmt.Sprintf].
func NoCredentialsf(format string, args ...any) error {
	return &reasonError{reason: fmt.Sprintf(format, args...), sentinel: ErrNoCredentials}
}

type reasonError struct {
	reason   string
	sentinel error
}

func (e *reasonError) Error() string { return e.reason }
func (e *reasonError) Unwrap() error { return e.sentinel }

// BearerToken returns the token of an "Authorization: Bearer <token>"
// header (the scheme compared without regard to case), and whether there is
// one.
func BearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

type contextKey struct{}

// NewContext returns ctx carrying id.
func NewContext(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, contextKey{}, id)
}

// FromContext returns the identity ctx carries, if any.
func FromContext(ctx context.Context) (*Identity, bool) {
	id, ok := ctx.Value(contextKey{}).(*Identity)
	return id, ok && id != nil
}

// Verbs an Authorizer is asked about.
const (
	VerbGet    = "get"
	VerbList   = "list"
	VerbWatch  = "watch"
	VerbPut    = "put"
	VerbDelete = "delete"
)

// Verbs are every verb, in the order documentation lists them.
var Verbs = []string{VerbGet, VerbList, VerbWatch, VerbPut, VerbDelete}

// Attributes describe one request to authorize.
type Attributes struct {
	// Verb is one of the Verb constants.
	Verb string
	// Group and Plural name the resource type, e.g. "flipt.io" and "flags".
	// cup's own resources (proposals) are in the group "cup.dev".
	Group, Plural string
	// Namespace is the resource's namespace; empty for resources that are
	// not namespaced (proposals), which only cluster-wide bindings grant.
	Namespace string
	// Name is the resource's name; empty for list and watch.
	Name string
}

// Authorizer decides what identities may do. Deny by default: an identity
// may do only what a rule grants it. Implementations are safe for
// concurrent use and fast (they run on every call); they do no I/O.
type Authorizer interface {
	// Allowed reports whether id may do what a describes.
	Allowed(id *Identity, a Attributes) bool
	// Visible reports whether id may do anything at all with resources of
	// group and plural, in some namespace or by some name: what discovery
	// shows the caller.
	Visible(id *Identity, group, plural string) bool
}
