// Package github is the [scm.Provider] for GitHub and GitHub Enterprise
// Server, built on go-github.
//
// The provider makes its calls with the *http.Client it is given (see
// [scm.NewHTTPClient]), which authenticates them and decides whether to wait
// out rate limits. The provider itself neither adds credentials nor keeps
// rate-limit state: go-github's client-side rate-limit tracking is turned
// off, so every call reaches the transport, and a rate-limit answer the
// transport hands back is reported as [scm.ErrRateLimited].
package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v88/github"

	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/scm/internal/hostapi"
)

// pageSize is the number of pull requests List asks for per page, GitHub's
// maximum.
const pageSize = 100

// Config configures a Provider.
type Config struct {
	// BaseURL is the REST API's base URL. The default ("") is
	// https://api.github.com/; GitHub Enterprise Server serves its API at
	// https://<host>/api/v3/. A missing trailing slash is added.
	BaseURL string
	// Owner is the user or organization owning the repository, and Repo
	// its name, as in https://github.com/<Owner>/<Repo>. Both are required.
	Owner, Repo string
	// HTTPClient makes every call and is responsible for credentials and
	// rate-limit waits; see [scm.NewHTTPClient]. Required.
	HTTPClient *http.Client
}

// Provider opens and tracks pull requests in one GitHub repository. It is
// safe for concurrent use.
type Provider struct {
	owner, repo string
	pulls       *gh.PullRequestsService
	issues      *gh.IssuesService
}

var _ scm.Provider = (*Provider)(nil)

// New returns a Provider for cfg. It checks cfg and does no I/O.
func New(cfg Config) (*Provider, error) {
	if err := checkName("owner", cfg.Owner); err != nil {
		return nil, err
	}
	if err := checkName("repo", cfg.Repo); err != nil {
		return nil, err
	}
	if cfg.HTTPClient == nil {
		return nil, errors.New("github: an HTTP client is required (see scm.NewHTTPClient)")
	}
	opts := []gh.ClientOptionsFunc{
		gh.WithHTTPClient(cfg.HTTPClient),
		// The transport waits for rate limits; go-github would otherwise
		// remember an exhausted limit and refuse calls without making them.
		gh.WithDisableRateLimitCheck(),
	}
	if cfg.BaseURL != "" {
		if u, err := url.Parse(cfg.BaseURL); err != nil || !hostapi.IsHTTPURL(u) {
			return nil, fmt.Errorf("github: base URL %q is not an http(s) URL such as https://github.example.com/api/v3/", cfg.BaseURL)
		}
		opts = append(opts, gh.WithURLs(&cfg.BaseURL, nil))
	}
	c, err := gh.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	return &Provider{owner: cfg.Owner, repo: cfg.Repo, pulls: c.PullRequests, issues: c.Issues}, nil
}

func checkName(what, s string) error {
	if s == "" {
		return fmt.Errorf("github: the repository %s is required", what)
	}
	if strings.ContainsAny(s, "/:?#") || s == "." || s == ".." {
		return fmt.Errorf("github: repository %s %q is not a valid name", what, s)
	}
	return nil
}

// Name returns "github".
func (*Provider) Name() string { return "github" }

// Open opens a pull request and then adds its labels. If adding the labels
// fails, the pull request stays open and the error names it.
func (p *Provider) Open(ctx context.Context, req *scm.OpenRequest) (*scm.Proposal, error) {
	if err := checkOpen(req); err != nil {
		return nil, err
	}
	op := fmt.Sprintf("open pull request %s→%s", req.Head, req.Base)
	pr, _, err := p.pulls.Create(ctx, p.owner, p.repo, &gh.NewPullRequest{
		Title: &req.Title,
		Body:  &req.Body,
		Head:  &req.Head,
		Base:  &req.Base,
		Draft: &req.Draft,
	})
	if err != nil {
		return nil, p.wrap(ctx, op, err)
	}
	if len(req.Labels) > 0 {
		labels, _, err := p.issues.AddLabelsToIssue(ctx, p.owner, p.repo, pr.GetNumber(), req.Labels)
		if err != nil {
			op := fmt.Sprintf("pull request #%d (%s) was opened, but labelling it", pr.GetNumber(), pr.GetHTMLURL())
			return nil, p.wrap(ctx, op, err)
		}
		pr.Labels = labels
	}
	return proposal(pr), nil
}

func checkOpen(req *scm.OpenRequest) error {
	switch {
	case req == nil:
		return fmt.Errorf("github: open pull request: %w: no request", scm.ErrInvalid)
	case req.Title == "":
		return fmt.Errorf("github: open pull request: %w: a title is required", scm.ErrInvalid)
	case req.Head == "" || req.Base == "":
		return fmt.Errorf("github: open pull request: %w: head and base branches are required", scm.ErrInvalid)
	case strings.Contains(req.Head, ":"):
		// "user:branch" would name a branch in another repository.
		return fmt.Errorf("github: open pull request: %w: head %q is not a branch name", scm.ErrInvalid, req.Head)
	}
	return nil
}

// Get returns the pull request numbered id.
func (p *Provider) Get(ctx context.Context, id string) (*scm.Proposal, error) {
	n, err := number(id)
	if err != nil {
		return nil, err
	}
	pr, _, err := p.pulls.Get(ctx, p.owner, p.repo, n)
	if err != nil {
		return nil, p.wrap(ctx, fmt.Sprintf("get pull request #%d", n), err)
	}
	return proposal(pr), nil
}

// List returns the pull requests req selects, newest first. It asks GitHub
// to filter by state and exact head; merged-or-closed and the head prefix
// are filtered here. Pull requests from forks never match a head filter.
func (p *Provider) List(ctx context.Context, req *scm.ListRequest) ([]*scm.Proposal, error) {
	if req == nil {
		req = &scm.ListRequest{}
	}
	opts := &gh.PullRequestListOptions{State: "all", ListOptions: gh.ListOptions{PerPage: pageSize}}
	switch req.State {
	case scm.StateOpen:
		opts.State = "open"
	case scm.StateMerged, scm.StateClosed:
		opts.State = "closed"
	}
	if req.Head != "" {
		opts.Head = p.owner + ":" + req.Head
	}
	var out []*scm.Proposal
	for {
		prs, resp, err := p.pulls.List(ctx, p.owner, p.repo, opts)
		if err != nil {
			return nil, p.wrap(ctx, fmt.Sprintf("list pull requests (page %d)", max(opts.Page, 1)), err)
		}
		for _, pr := range prs {
			if prop := proposal(pr); p.keep(req, pr, prop) {
				out = append(out, prop)
			}
		}
		if resp.NextPage <= opts.Page { // 0 on the last page
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// Find returns the open pull request from head into base, asking GitHub to
// filter by both: one call, however many pull requests the repository has.
// Pull requests from forks never match.
func (p *Provider) Find(ctx context.Context, head, base string) (*scm.Proposal, error) {
	if head == "" || base == "" {
		return nil, fmt.Errorf("github: finding a pull request: %w: head and base are required", scm.ErrInvalid)
	}
	// GitHub allows one open pull request per head and base; a short page
	// leaves room for forks whose owner has the same name.
	opts := &gh.PullRequestListOptions{State: "open", Head: p.owner + ":" + head, Base: base, ListOptions: gh.ListOptions{PerPage: 10}}
	prs, _, err := p.pulls.List(ctx, p.owner, p.repo, opts)
	if err != nil {
		return nil, p.wrap(ctx, fmt.Sprintf("find the pull request from %q into %q", head, base), err)
	}
	for _, pr := range prs {
		if prop := proposal(pr); p.ownHead(pr) && prop.Head == head && prop.Base == base && prop.State == scm.StateOpen {
			return prop, nil
		}
	}
	return nil, fmt.Errorf("github: %w: no open pull request from %q into %q", scm.ErrNotFound, head, base)
}

// keep reports whether pr, converted to prop, passes req's filters.
func (p *Provider) keep(req *scm.ListRequest, pr *gh.PullRequest, prop *scm.Proposal) bool {
	if req.State != scm.StateUnspecified && prop.State != req.State {
		return false
	}
	if req.Head == "" && req.HeadPrefix == "" {
		return true
	}
	if !p.ownHead(pr) {
		return false
	}
	if req.Head != "" && prop.Head != req.Head {
		return false
	}
	return strings.HasPrefix(prop.Head, req.HeadPrefix)
}

// ownHead reports whether pr's head branch is in this repository rather
// than in a fork, whose branch names anyone may choose.
func (p *Provider) ownHead(pr *gh.PullRequest) bool {
	owner, _, ok := strings.Cut(pr.GetHead().GetLabel(), ":")
	return !ok || strings.EqualFold(owner, p.owner)
}

// SetBody replaces the description of the pull request numbered id.
func (p *Provider) SetBody(ctx context.Context, id, body string) error {
	n, err := number(id)
	if err != nil {
		return err
	}
	if _, _, err := p.pulls.Edit(ctx, p.owner, p.repo, n, &gh.PullRequest{Body: &body}); err != nil {
		return p.wrap(ctx, fmt.Sprintf("set the description of pull request #%d", n), err)
	}
	return nil
}

// number parses a proposal ID.
func number(id string) (int, error) {
	n, err := strconv.Atoi(id)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("github: %w: %q is not a pull request number", scm.ErrInvalid, id)
	}
	return n, nil
}

func proposal(pr *gh.PullRequest) *scm.Proposal {
	out := &scm.Proposal{
		ID:        strconv.Itoa(pr.GetNumber()),
		URL:       pr.GetHTMLURL(),
		Title:     pr.GetTitle(),
		Body:      pr.GetBody(),
		Head:      pr.GetHead().GetRef(),
		Base:      pr.GetBase().GetRef(),
		Draft:     pr.GetDraft(),
		CreatedAt: pr.GetCreatedAt().Time,
		UpdatedAt: pr.GetUpdatedAt().Time,
	}
	// The list endpoint leaves "merged" out; merged_at is always there.
	switch {
	case pr.GetMerged() || pr.MergedAt != nil:
		out.State = scm.StateMerged
	case pr.GetState() == "open":
		out.State = scm.StateOpen
	default:
		out.State = scm.StateClosed
	}
	for _, l := range pr.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}

// wrap maps an error from go-github to the scm sentinels. The text keeps
// GitHub's message, which never holds the credentials: they travel in a
// header that neither go-github nor this package puts into errors.
func (p *Provider) wrap(ctx context.Context, op string, err error) error {
	op = fmt.Sprintf("github: %s/%s: %s", p.owner, p.repo, op)
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("%s: %w", op, err)
	}
	var (
		rate  *gh.RateLimitError
		abuse *gh.AbuseRateLimitError
		otp   *gh.TwoFactorAuthError
		resp  *gh.ErrorResponse
	)
	switch {
	case errors.As(err, &rate):
		reset := ""
		if !rate.Rate.Reset.IsZero() {
			reset = fmt.Sprintf(" (the limit resets at %s)", rate.Rate.Reset.UTC().Format(time.RFC3339))
		}
		return fmt.Errorf("%s: %w: %s%s", op, scm.ErrRateLimited, message(rate.Message, rate.Response), reset)
	case errors.As(err, &abuse):
		return fmt.Errorf("%s: %w: %s (secondary rate limit)", op, scm.ErrRateLimited, message(abuse.Message, abuse.Response))
	case errors.As(err, &otp):
		return fmt.Errorf("%s: %w: %s", op, scm.ErrUnauthenticated, message(otp.Message, otp.Response))
	case errors.As(err, &resp):
		return fmt.Errorf("%s: %w: %s", op, statusError(resp.Response), describe(resp))
	case scm.IsSentinel(err):
		// The transport's own verdict, such as a token it could not get.
		return fmt.Errorf("%s: %w", op, err)
	default:
		// Transport failures, a per-call timeout of the HTTP client, and
		// answers go-github could not decode.
		return fmt.Errorf("%s: %w: %v", op, scm.ErrUnavailable, err)
	}
}

// statusError maps an HTTP status that go-github did not type to a
// sentinel: scm.ForStatus, refined where GitHub says more.
func statusError(r *http.Response) error {
	if r == nil {
		return scm.ErrUnavailable
	}
	switch c := r.StatusCode; {
	case c == http.StatusForbidden && r.Header.Get("Retry-After") != "":
		// A secondary rate limit whose documentation_url go-github did not
		// recognize.
		return scm.ErrRateLimited
	case c == http.StatusGone:
		return scm.ErrNotFound
	case c == http.StatusUnavailableForLegalReasons:
		return scm.ErrPermissionDenied
	case c == http.StatusRequestTimeout:
		// Unlike scm.ForStatus, which reads 408 as ErrUnavailable.
		return scm.ErrInvalid
	case c < 400:
		// Such as 304 Not Modified, which go-github reports as an error.
		return scm.ErrUnavailable
	default:
		return scm.ForStatus(c)
	}
}

// describe renders GitHub's error body: the message, then each detail.
func describe(e *gh.ErrorResponse) string {
	var b strings.Builder
	b.WriteString(message(e.Message, e.Response))
	for _, d := range e.Errors {
		b.WriteString("; ")
		switch {
		case d.Message != "":
			b.WriteString(d.Message)
		case d.Field != "":
			fmt.Fprintf(&b, "field %q of %s: %s", d.Field, d.Resource, d.Code)
		default:
			fmt.Fprintf(&b, "%s: %s", d.Resource, d.Code)
		}
	}
	return b.String()
}

// message is GitHub's message, or the HTTP status when the body had none.
func message(msg string, r *http.Response) string {
	status := ""
	if r != nil {
		status = fmt.Sprintf("HTTP %d", r.StatusCode)
	}
	switch {
	case msg == "":
		return status
	case status == "":
		return msg
	default:
		return status + ": " + msg
	}
}
