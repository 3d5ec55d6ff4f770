// Package scm defines how cup opens and tracks proposals (pull or merge
// requests) on a source-code host.
//
// A Provider is a small adapter over one host's API: scm/github (go-github),
// scm/gitlab (GitLab's Go client) and scm/gitea (the Gitea SDK). Each proves
// itself against the conformance suite in scmtest, run against an HTTP-level
// fake of the host. Authentication and rate limits are not the adapters'
// business: they live in the *http.Client an adapter is given (see
// NewHTTPClient), so every adapter gets the same behaviour.
package scm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cup-dev/cup/source"
)

// Sentinel errors. Adapters wrap them so that callers can map them to API
// codes with errors.Is; messages never carry credentials.
var (
	// ErrNotFound reports a proposal (or repository) the host does not know.
	ErrNotFound = errors.New("not found on the SCM")
	// ErrUnauthenticated reports credentials the host refused (HTTP 401).
	ErrUnauthenticated = errors.New("the SCM refused the credentials")
	// ErrPermissionDenied reports a call the credentials may not make (HTTP
	// 403 other than rate limiting).
	ErrPermissionDenied = errors.New("the SCM denied the call")
	// ErrRateLimited reports a call the host's rate limit refused for
	// longer than the caller was willing to wait.
	ErrRateLimited = errors.New("the SCM's rate limit is exhausted")
	// ErrInvalid reports a request the host found invalid (HTTP 422), such
	// as a proposal for a branch that does not exist.
	ErrInvalid = errors.New("the SCM rejected the request")
	// ErrUnavailable reports a host that could not be reached or failed
	// (HTTP 5xx, timeouts).
	ErrUnavailable = errors.New("the SCM is unavailable")
)

// State is the state of a proposal.
type State int

const (
	// StateUnspecified matches every state in a ListRequest.
	StateUnspecified State = iota
	// StateOpen is a proposal awaiting review.
	StateOpen
	// StateMerged is a proposal whose branch was merged.
	StateMerged
	// StateClosed is a proposal closed without merging.
	StateClosed
)

func (s State) String() string {
	switch s {
	case StateOpen:
		return "open"
	case StateMerged:
		return "merged"
	case StateClosed:
		return "closed"
	default:
		return "unspecified"
	}
}

// ParseState parses the names String returns ("" is StateUnspecified).
func ParseState(s string) (State, error) {
	switch s {
	case "", "unspecified":
		return StateUnspecified, nil
	case "open":
		return StateOpen, nil
	case "merged":
		return StateMerged, nil
	case "closed":
		return StateClosed, nil
	default:
		return 0, fmt.Errorf("unknown proposal state %q (want open, merged or closed)", s)
	}
}

// Proposal is a pull request (GitHub, Gitea) or merge request (GitLab).
type Proposal struct {
	// ID is the proposal's number in its repository ("42"), as the host's
	// web pages show it.
	ID string
	// URL is the proposal's web page.
	URL   string
	Title string
	Body  string
	// Head is the branch with the changes, Base the branch they are for.
	Head, Base string
	State      State
	Draft      bool
	Labels     []string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Tracked is a proposal cup opened, with what cup recorded of it: the one
// shape of a proposal above the host adapters. The proposal write mode
// keeps them, the server answers the ProposalService from them, and only
// the API's message (cupv1alpha1.Proposal) differs.
type Tracked struct {
	Proposal
	// Provider is the host kind's name ("github", "gitlab", "gitea"), as
	// Provider.Name gives it.
	Provider string
	// Resources are the resources the proposal changes, as far as cup
	// recorded them.
	Resources []source.ResourceRef
}

// OpenRequest asks for a new proposal.
type OpenRequest struct {
	Title, Body string
	// Head is the branch with the changes; Base the branch to merge into.
	Head, Base string
	// Labels are added to the proposal; the host creates missing ones
	// where it can (GitHub, GitLab) and adapters create them otherwise.
	Labels []string
	// Draft opens the proposal as a draft where the host supports it.
	Draft bool
}

// ListRequest filters proposals.
type ListRequest struct {
	// State keeps proposals in this state; StateUnspecified keeps all.
	State State
	// HeadPrefix keeps proposals whose head branch starts with it, such as
	// the change-set prefix ("cup/"): the proposals cup opened.
	HeadPrefix string
	// Head keeps the proposals of exactly this head branch.
	Head string
}

// Provider opens and tracks proposals in one repository on one host.
//
// Implementations are safe for concurrent use. Errors wrap the sentinels
// above; a context that ends first gives its own error.
type Provider interface {
	// Name names the host kind: "github", "gitlab" or "gitea".
	Name() string
	// Open opens a proposal. Opening one for a head that already has an
	// open proposal fails with an error wrapping ErrInvalid (callers look
	// first: see Find).
	Open(ctx context.Context, req *OpenRequest) (*Proposal, error)
	// Find returns the open proposal from branch head (in this repository,
	// not a fork) into branch base, or an error wrapping ErrNotFound when
	// there is none. It asks the host for that one proposal, so its cost
	// does not grow with the number of proposals in the repository.
	Find(ctx context.Context, head, base string) (*Proposal, error)
	// Get returns the proposal with the given ID.
	Get(ctx context.Context, id string) (*Proposal, error)
	// List returns the proposals req selects, newest first, following the
	// host's pagination to the end.
	List(ctx context.Context, req *ListRequest) ([]*Proposal, error)
	// SetBody replaces the description of a proposal, as when its change
	// set grows.
	SetBody(ctx context.Context, id, body string) error
}

// ForStatus returns the sentinel for an HTTP status a host (or a proxy in
// front of it) answered an API call with, or nil for a status that is no
// failure (below 400). Adapters refine it where their host says more,
// such as GitHub's 403 for an exhausted rate limit.
func ForStatus(code int) error {
	switch {
	case code < 400:
		return nil
	case code == http.StatusNotFound:
		return ErrNotFound
	case code == http.StatusUnauthorized:
		return ErrUnauthenticated
	case code == http.StatusForbidden:
		return ErrPermissionDenied
	case code == http.StatusTooManyRequests:
		return ErrRateLimited
	case code == http.StatusRequestTimeout, code >= 500:
		return ErrUnavailable
	default:
		// 400, 409 (an open proposal for the same branch), 422 (a
		// missing field, head equal to base), 412, 423 and the like.
		return ErrInvalid
	}
}

// IsSentinel reports whether err wraps one of the sentinels above.
func IsSentinel(err error) bool {
	for _, s := range []error{ErrNotFound, ErrUnauthenticated, ErrPermissionDenied, ErrRateLimited, ErrInvalid, ErrUnavailable} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
