// Package scmtest is the conformance suite for [scm.Provider]
// implementations, run against HTTP-level fakes of the hosts.
//
// Each adapter's test file runs it with a harness that starts its fake:
//
//	func TestConformance(t *testing.T) {
//		scmtest.Run(t, scmtest.Harness{New: func(t *testing.T, token string) (scm.Provider, scmtest.Fake) {
//			fake := githubtest.NewFake(t, "acme", "config")
//			p, err := github.New(github.Config{BaseURL: fake.URL(), Owner: "acme", Repo: "config",
//				HTTPClient: scm.NewHTTPClient(scm.HTTPOptions{Token: scm.StaticToken(token)})})
//			...
//			return p, fake
//		}})
//	}
package scmtest

import (
	"net/http"
	"testing"
	"time"

	"github.com/cup-dev/cup/scm"
)

// Fault is a way for a fake to fail API calls.
type Fault int

const (
	// FaultNone serves calls normally.
	FaultNone Fault = iota
	// FaultServerError answers 502 Bad Gateway.
	FaultServerError
	// FaultUnauthorized answers 401 with the host's error body.
	FaultUnauthorized
	// FaultForbidden answers 403 without rate-limit headers (a permission
	// the token lacks).
	FaultForbidden
	// FaultRateLimited answers as the host does when its rate limit is
	// exhausted (GitHub: 403 with X-RateLimit-Remaining: 0 and
	// X-RateLimit-Reset; GitLab and Gitea: 429 with Retry-After and their
	// RateLimit headers), with the limit resetting RetryAfter later.
	FaultRateLimited
	// FaultInvalid answers 422 Unprocessable Entity with the host's
	// validation error body.
	FaultInvalid
	// FaultTimeout holds the call until the request's context ends.
	FaultTimeout
)

// Request is an API call a fake received.
type Request struct {
	Method string
	// Path is the URL path, such as "/api/v3/repos/acme/config/pulls".
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// Fake is an HTTP-level fake of a host's API, which the suite drives.
// Implementations are safe for concurrent use.
type Fake interface {
	// URL is the base URL to configure an adapter with (for GitHub, the
	// Enterprise-style base ending in /api/v3/).
	URL() string
	// AddBranch makes a branch exist; hosts refuse proposals whose head or
	// base does not exist.
	AddBranch(name string)
	// LinkRepository makes the branches of the bare Git repository at dir
	// exist too, as pushing a branch does on a host: for end-to-end tests
	// that push to a real repository.
	LinkRepository(dir string)
	// Merge marks a proposal merged and Close closes it, as a reviewer
	// would on the host's web pages.
	Merge(t testing.TB, id string)
	Close(t testing.TB, id string)
	// SetFault makes the next n calls fail with f (n < 0: until reset with
	// FaultNone). RetryAfter is how long a FaultRateLimited lasts.
	SetFault(f Fault, n int, retryAfter time.Duration)
	// Requests returns the calls received so far, oldest first.
	Requests() []Request
}

// Harness adapts one Provider implementation to the suite.
type Harness struct {
	// New starts a fake holding one repository with branch "main", and
	// returns a provider over it whose HTTP client authenticates with token
	// (scm.NewHTTPClient with scm.StaticToken(token)). Required.
	New func(t *testing.T, token string) (scm.Provider, Fake)
	// AuthHeader is the header the provider's calls must carry the token
	// in, such as "Authorization: Bearer <token>"; the suite checks every
	// recorded call has it. Required.
	AuthHeader func(token string) (name, value string)
	// DraftUnsupported tells the suite that the host has no draft
	// proposals, so a proposal opened with Draft may come back without it.
	DraftUnsupported bool
}
