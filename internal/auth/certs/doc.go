// Package certs serves TLS and authenticates callers by their verified
// client certificates: [ServerTLS] builds the server's TLS configuration
// (reloading a renewed certificate), and [ClientCertificates] is the
// auth.Authenticator that turns the certificate it verified into an
// identity.
package certs
