// Package authtest makes the credentials that authentication tests need:
// a certificate authority with server and client certificates ([NewCA],
// [NewPKI]) and an OpenID Connect issuer that signs JWTs ([NewIssuer]).
//
// Everything is made at test time and served on 127.0.0.1; nothing leaves
// the machine. Keys are ECDSA P-256 unless a test brings its own. The
// package is for tests only: import it from _test.go files, never from a
// program.
package authtest
