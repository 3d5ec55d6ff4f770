// Package gitlab is the [scm.Provider] for GitLab (gitlab.com and
// self-hosted instances): proposals are merge requests, made with GitLab's
// own Go client, gitlab.com/gitlab-org/api/client-go.
//
// The adapter leaves authentication and rate limits to the *http.Client it
// is given (see [scm.NewHTTPClient]): it sends no credentials of its own,
// turns off the client's built-in retries and its self-configured request
// limiter, so that a server error surfaces at once as [scm.ErrUnavailable]
// and a 429 answer is the transport's to wait out.
package gitlab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/scm/internal/hostapi"
)

// DefaultBaseURL is the base URL of gitlab.com, which Config.BaseURL
// defaults to.
const DefaultBaseURL = "https://gitlab.com/"

// draftPrefix marks a merge request as a draft, GitLab's convention.
const draftPrefix = "Draft: "

// perPage is how many merge requests List asks for per page, GitLab's
// maximum.
const perPage = 100

// Config configures a Provider.
type Config struct {
	// BaseURL is the address of the GitLab instance, such as
	// "https://gitlab.example.com/" or, for an instance served under a
	// path, "https://example.com/gitlab/"; the adapter appends "api/v4/".
	// The default, "", is DefaultBaseURL (gitlab.com). It must not carry
	// credentials: those belong in HTTPClient.
	BaseURL string
	// Project is the project holding the merge requests: its full path
	// ("group/subgroup/project", not URL-encoded) or its numeric ID.
	// Required.
	Project string
	// HTTPClient makes every call and authenticates it (see
	// scm.NewHTTPClient); the adapter adds no credentials of its own.
	// Required.
	HTTPClient *http.Client
}

// mergeRequests is the part of GitLab's client the Provider uses.
type mergeRequests interface {
	CreateMergeRequest(pid any, opt *gitlab.CreateMergeRequestOptions, options ...gitlab.RequestOptionFunc) (*gitlab.MergeRequest, *gitlab.Response, error)
	GetMergeRequest(pid any, mergeRequest int64, opt *gitlab.GetMergeRequestsOptions, options ...gitlab.RequestOptionFunc) (*gitlab.MergeRequest, *gitlab.Response, error)
	ListProjectMergeRequests(pid any, opt *gitlab.ListProjectMergeRequestsOptions, options ...gitlab.RequestOptionFunc) ([]*gitlab.BasicMergeRequest, *gitlab.Response, error)
	UpdateMergeRequest(pid any, mergeRequest int64, opt *gitlab.UpdateMergeRequestOptions, options ...gitlab.RequestOptionFunc) (*gitlab.MergeRequest, *gitlab.Response, error)
}

// Provider opens and tracks merge requests in one GitLab project. It is
// safe for concurrent use.
type Provider struct {
	project string
	mrs     mergeRequests
}

var _ scm.Provider = (*Provider)(nil)

// New returns a Provider for cfg. It checks cfg and does no I/O.
func New(cfg Config) (*Provider, error) {
	if cfg.HTTPClient == nil {
		return nil, errors.New("gitlab: Config.HTTPClient is required (see scm.NewHTTPClient)")
	}
	if err := checkProject(cfg.Project); err != nil {
		return nil, err
	}
	base, err := baseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	client, err := gitlab.NewAuthSourceClient(gitlab.Unauthenticated{},
		gitlab.WithBaseURL(base),
		gitlab.WithHTTPClient(cfg.HTTPClient),
		gitlab.WithoutRetries(),
		gitlab.WithCustomLimiter(noLimit{}),
		gitlab.WithURLWarningLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		return nil, fmt.Errorf("gitlab: creating the client: %w", err)
	}
	return &Provider{project: cfg.Project, mrs: client.MergeRequests}, nil
}

// checkProject reports a Config.Project GitLab could not resolve.
func checkProject(p string) error {
	switch {
	case p == "":
		return errors.New(`gitlab: Config.Project is required ("group/project" or a numeric ID)`)
	case strings.TrimSpace(p) != p, strings.HasPrefix(p, "/"), strings.HasSuffix(p, "/"), strings.Contains(p, "//"):
		return fmt.Errorf(`gitlab: Config.Project %q is not a project path such as "group/project"`, p)
	case strings.Contains(p, "%"):
		return fmt.Errorf(`gitlab: Config.Project %q looks URL-encoded; give the plain path, such as "group/project"`, p)
	}
	return nil
}

// baseURL checks Config.BaseURL and returns it with its default and a
// trailing slash.
func baseURL(s string) (string, error) {
	if s == "" {
		return DefaultBaseURL, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("gitlab: Config.BaseURL is not a URL: %w", err)
	}
	switch {
	case !hostapi.IsHTTPURL(u):
		return "", fmt.Errorf("gitlab: Config.BaseURL %q is not an http or https URL with a host", u.Redacted())
	case u.User != nil:
		return "", fmt.Errorf("gitlab: Config.BaseURL %q carries credentials; give them to the HTTP client instead", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("gitlab: Config.BaseURL %q has a query or fragment", u.Redacted())
	}
	if !strings.HasSuffix(s, "/") {
		s += "/"
	}
	return s, nil
}

// noLimit stands in for client-go's own request limiter, which would
// otherwise throttle calls to two thirds of the RateLimit-Limit header of
// the first answer: waiting for rate limits is the transport's business.
type noLimit struct{}

func (noLimit) Wait(ctx context.Context) error { return ctx.Err() }

// Name returns "gitlab".
func (p *Provider) Name() string { return "gitlab" }

// Open opens a merge request from req.Head into req.Base. A draft gets
// GitLab's "Draft: " title prefix. Labels GitLab does not know yet are
// created by GitLab; a label name may not contain a comma.
func (p *Provider) Open(ctx context.Context, req *scm.OpenRequest) (*scm.Proposal, error) {
	if req == nil {
		return nil, fmt.Errorf("gitlab: opening a merge request in %s: %w: no request", p.project, scm.ErrInvalid)
	}
	op := fmt.Sprintf("opening a merge request from %q into %q in %s", req.Head, req.Base, p.project)
	opt := &gitlab.CreateMergeRequestOptions{
		Title:        gitlab.Ptr(req.Title),
		Description:  gitlab.Ptr(req.Body),
		SourceBranch: gitlab.Ptr(req.Head),
		TargetBranch: gitlab.Ptr(req.Base),
	}
	if req.Draft {
		opt.Title = gitlab.Ptr(draftPrefix + req.Title)
	}
	if len(req.Labels) > 0 {
		for _, l := range req.Labels {
			if strings.Contains(l, ",") {
				return nil, fmt.Errorf("gitlab: %s: %w: label %q contains a comma, which GitLab's API cannot carry", op, scm.ErrInvalid, l)
			}
		}
		opt.Labels = gitlab.Ptr(gitlab.LabelOptions(req.Labels))
	}
	mr, _, err := p.mrs.CreateMergeRequest(p.project, opt, gitlab.WithContext(ctx))
	if err != nil {
		return nil, wrapError(ctx, op, err)
	}
	return proposal(&mr.BasicMergeRequest), nil
}

// Get returns the merge request whose IID is id.
func (p *Provider) Get(ctx context.Context, id string) (*scm.Proposal, error) {
	iid, err := parseIID(id)
	if err != nil {
		return nil, err
	}
	mr, _, err := p.mrs.GetMergeRequest(p.project, iid, nil, gitlab.WithContext(ctx))
	if err != nil {
		return nil, wrapError(ctx, fmt.Sprintf("getting merge request !%d in %s", iid, p.project), err)
	}
	return proposal(&mr.BasicMergeRequest), nil
}

// List returns the merge requests req selects, newest first; a nil req
// selects all. GitLab filters by state and exact head branch; HeadPrefix is
// applied here.
func (p *Provider) List(ctx context.Context, req *scm.ListRequest) ([]*scm.Proposal, error) {
	if req == nil {
		req = &scm.ListRequest{}
	}
	state, err := listState(req.State)
	if err != nil {
		return nil, err
	}
	opt := &gitlab.ListProjectMergeRequestsOptions{
		ListOptions: gitlab.ListOptions{PerPage: perPage, Page: 1},
		State:       gitlab.Ptr(state),
		OrderBy:     gitlab.Ptr("created_at"),
		Sort:        gitlab.Ptr("desc"),
	}
	if req.Head != "" {
		opt.SourceBranch = gitlab.Ptr(req.Head)
	}
	var out []*scm.Proposal
	for {
		mrs, resp, err := p.mrs.ListProjectMergeRequests(p.project, opt, gitlab.WithContext(ctx))
		if err != nil {
			return nil, wrapError(ctx, fmt.Sprintf("listing merge requests (page %d) in %s", opt.Page, p.project), err)
		}
		for _, mr := range mrs {
			if strings.HasPrefix(mr.SourceBranch, req.HeadPrefix) {
				out = append(out, proposal(mr))
			}
		}
		// X-Next-Page is empty on the last page; a page that does not
		// move forward would loop forever.
		if resp.NextPage <= opt.Page {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// Find returns the open merge request from head into base, asking GitLab
// to filter by source and target branch: one call, however many merge
// requests the project has. Merge requests from forks never match.
func (p *Provider) Find(ctx context.Context, head, base string) (*scm.Proposal, error) {
	if head == "" || base == "" {
		return nil, fmt.Errorf("gitlab: finding a merge request: %w: head and base are required", scm.ErrInvalid)
	}
	opt := &gitlab.ListProjectMergeRequestsOptions{
		ListOptions:  gitlab.ListOptions{PerPage: 10, Page: 1},
		State:        gitlab.Ptr("opened"),
		SourceBranch: gitlab.Ptr(head),
		TargetBranch: gitlab.Ptr(base),
		OrderBy:      gitlab.Ptr("created_at"),
		Sort:         gitlab.Ptr("desc"),
	}
	mrs, _, err := p.mrs.ListProjectMergeRequests(p.project, opt, gitlab.WithContext(ctx))
	if err != nil {
		return nil, wrapError(ctx, fmt.Sprintf("finding the merge request from %q into %q in %s", head, base, p.project), err)
	}
	for _, mr := range mrs {
		fork := mr.SourceProjectID != 0 && mr.ProjectID != 0 && mr.SourceProjectID != mr.ProjectID
		if prop := proposal(mr); !fork && prop.Head == head && prop.Base == base && prop.State == scm.StateOpen {
			return prop, nil
		}
	}
	return nil, fmt.Errorf("gitlab: %w: no open merge request from %q into %q in %s", scm.ErrNotFound, head, base, p.project)
}

// SetBody replaces the description of the merge request whose IID is id.
func (p *Provider) SetBody(ctx context.Context, id, body string) error {
	iid, err := parseIID(id)
	if err != nil {
		return err
	}
	opt := &gitlab.UpdateMergeRequestOptions{Description: gitlab.Ptr(body)}
	if _, _, err := p.mrs.UpdateMergeRequest(p.project, iid, opt, gitlab.WithContext(ctx)); err != nil {
		return wrapError(ctx, fmt.Sprintf("setting the description of merge request !%d in %s", iid, p.project), err)
	}
	return nil
}

// parseIID parses a proposal ID, a merge request's IID ("42").
func parseIID(id string) (int64, error) {
	iid, err := strconv.ParseInt(id, 10, 64)
	if err != nil || iid <= 0 {
		return 0, fmt.Errorf("gitlab: %w: merge request ID %q is not a positive number such as \"42\"", scm.ErrInvalid, id)
	}
	return iid, nil
}

// listState maps a State to the state parameter of GitLab's list call.
func listState(s scm.State) (string, error) {
	switch s {
	case scm.StateUnspecified:
		return "all", nil
	case scm.StateOpen:
		return "opened", nil
	case scm.StateMerged:
		return "merged", nil
	case scm.StateClosed:
		return "closed", nil
	default:
		return "", fmt.Errorf("gitlab: %w: unknown proposal state %d", scm.ErrInvalid, s)
	}
}

// proposal converts a merge request.
func proposal(mr *gitlab.BasicMergeRequest) *scm.Proposal {
	p := &scm.Proposal{
		ID:    strconv.FormatInt(mr.IID, 10),
		URL:   mr.WebURL,
		Title: mr.Title,
		Body:  mr.Description,
		Head:  mr.SourceBranch,
		Base:  mr.TargetBranch,
		State: state(mr.State),
		Draft: mr.Draft,
	}
	if len(mr.Labels) > 0 {
		p.Labels = []string(mr.Labels)
	}
	if mr.Draft {
		p.Title = stripDraft(mr.Title)
	}
	if mr.CreatedAt != nil {
		p.CreatedAt = *mr.CreatedAt
	}
	if mr.UpdatedAt != nil {
		p.UpdatedAt = *mr.UpdatedAt
	}
	return p
}

// state maps a merge request's state. A locked merge request is one
// GitLab is in the middle of merging or that was locked against
// discussion; it is no longer open for review.
func state(s string) scm.State {
	switch s {
	case "opened":
		return scm.StateOpen
	case "merged":
		return scm.StateMerged
	case "closed", "locked":
		return scm.StateClosed
	default:
		return scm.StateUnspecified
	}
}

// draftMarkers are the draft markers GitLab recognises at the start of a
// title, in any case.
var draftMarkers = []string{"draft:", "[draft]", "(draft)"}

// stripDraft removes a draft marker ("Draft:", "[Draft]" or "(Draft)", in
// any case) from the start of title, with the blanks after it.
func stripDraft(title string) string {
	if rest, ok := hostapi.CutPrefixFold(title, draftMarkers); ok {
		return strings.TrimLeft(rest, " \t")
	}
	return title
}
