// Package gitea is the [scm.Provider] for Gitea (and Forgejo, which speaks
// the same API v1), built on the Gitea SDK (code.gitea.io/sdk/gitea).
//
// Proposals are pull requests; a proposal's ID is the pull request's index
// ("42"). Gitea has no draft flag on create: a draft is a pull request whose
// title starts with a work-in-progress prefix ("WIP:" or "[WIP]" by
// default), so Open prefixes draft titles with "WIP: " and reading strips the
// prefix again and reports Draft. Labels are ids in Gitea's API: Open
// resolves names against the repository's labels and creates missing ones.
//
// The provider adds no credentials of its own: the *http.Client in Config
// carries them (see [scm.NewHTTPClient]; Gitea accepts
// "Authorization: Bearer <token>").
package gitea

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/scm/internal/hostapi"
)

// LabelColor is the color of the labels Open creates when a proposal asks
// for a label the repository does not have.
const LabelColor = "#1d76db"

// pageSize is the page size List asks for: Gitea's default
// MAX_RESPONSE_ITEMS. Servers configured lower answer smaller pages, and
// List follows their Link headers all the same.
const pageSize = 50

// wipPrefixes are Gitea's default WORK_IN_PROGRESS_PREFIXES, which Gitea
// matches case-insensitively. The first is the one Open writes.
var wipPrefixes = []string{"WIP:", "[WIP]"}

// Config configures New.
type Config struct {
	// BaseURL is the root URL of the Gitea instance, such as
	// "https://gitea.example.com/"; the SDK appends "/api/v1". A trailing
	// "/api/v1" is accepted and removed. It must not carry credentials.
	// Required.
	BaseURL string
	// Owner is the user or organization owning the repository. Required.
	Owner string
	// Repo is the repository's name. Required.
	Repo string
	// HTTPClient makes every call and authenticates it, as the client
	// scm.NewHTTPClient returns does. Required.
	HTTPClient *http.Client
}

// Provider opens and tracks pull requests in one Gitea repository. It is
// safe for concurrent use.
type Provider struct {
	baseURL     string
	owner, repo string
	http        *http.Client

	// labelMu serializes creating missing labels, so that concurrent
	// Opens asking for the same new label create it once. Opens whose
	// labels all exist never take it.
	labelMu sync.Mutex
}

var _ scm.Provider = (*Provider)(nil)

// New returns a Provider for cfg. It validates cfg and does no I/O: in
// particular it does not ask the server for its version, so a server that
// is down fails the first call, not the start-up.
func New(cfg Config) (*Provider, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("gitea: BaseURL is required")
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || !hostapi.IsHTTPURL(u) {
		// The parse error may quote the URL, which could hold credentials.
		return nil, errors.New("gitea: BaseURL must be an absolute http or https URL, such as https://gitea.example.com/")
	}
	if u.User != nil {
		return nil, errors.New("gitea: BaseURL must not carry credentials; give them to the HTTP client")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("gitea: BaseURL must not have a query or fragment")
	}
	if cfg.Owner == "" || cfg.Repo == "" {
		return nil, errors.New("gitea: Owner and Repo are required")
	}
	if cfg.HTTPClient == nil {
		return nil, errors.New("gitea: HTTPClient is required (see scm.NewHTTPClient)")
	}
	base := strings.TrimSuffix(u.String(), "/")
	base = strings.TrimSuffix(base, "/api/v1")
	return &Provider{baseURL: base, owner: cfg.Owner, repo: cfg.Repo, http: cfg.HTTPClient}, nil
}

// Name returns "gitea".
func (p *Provider) Name() string { return "gitea" }

// client returns an SDK client whose calls run under ctx. The SDK keeps one
// context per client rather than taking one per call, so each call gets a
// client of its own; building one is cheap and does no I/O, because the
// version check is switched off.
func (p *Provider) client(ctx context.Context) (*sdk.Client, error) {
	c, err := sdk.NewClient(p.baseURL,
		sdk.SetHTTPClient(p.http),
		sdk.SetGiteaVersion(""),
		sdk.SetContext(ctx),
	)
	if err != nil {
		return nil, fmt.Errorf("gitea: creating the API client: %v", err)
	}
	return c, nil
}

// Open opens a pull request from req.Head into req.Base. A draft's title
// gets the "WIP: " prefix. Missing labels are created with LabelColor.
// Gitea answers a head or base branch that does not exist with 404, which
// Open reports as ErrInvalid, and a second open pull request for the same
// branches with 409, also ErrInvalid.
func (p *Provider) Open(ctx context.Context, req *scm.OpenRequest) (*scm.Proposal, error) {
	if req == nil || req.Head == "" || req.Base == "" || strings.TrimSpace(req.Title) == "" {
		return nil, fmt.Errorf("gitea: opening a pull request: %w: title, head and base are required", scm.ErrInvalid)
	}
	c, err := p.client(ctx)
	if err != nil {
		return nil, err
	}
	ids, err := p.labelIDs(ctx, c, req.Labels)
	if err != nil {
		return nil, err
	}
	title := req.Title
	if _, wip := trimWIP(title); req.Draft && !wip {
		title = wipPrefixes[0] + " " + title
	}
	pr, resp, err := c.CreatePullRequest(p.owner, p.repo, sdk.CreatePullRequestOption{
		Head:   req.Head,
		Base:   req.Base,
		Title:  title,
		Body:   req.Body,
		Labels: ids,
	})
	if err != nil {
		op := fmt.Sprintf("opening a pull request from %q into %q", req.Head, req.Base)
		if resp != nil && resp.Response != nil && resp.StatusCode == http.StatusNotFound && ctx.Err() == nil {
			return nil, fmt.Errorf("gitea: %s: %w: Gitea knows no such branch or repository (%s)",
				op, scm.ErrInvalid, detail(resp, err))
		}
		return nil, wrap(ctx, op, resp, err)
	}
	return proposal(pr), nil
}

// Get returns the pull request with index id.
func (p *Provider) Get(ctx context.Context, id string) (*scm.Proposal, error) {
	index, err := parseID(id)
	if err != nil {
		return nil, err
	}
	c, err := p.client(ctx)
	if err != nil {
		return nil, err
	}
	pr, resp, err := c.GetPullRequest(p.owner, p.repo, index)
	if err != nil {
		return nil, wrap(ctx, "getting pull request "+id, resp, err)
	}
	return proposal(pr), nil
}

// List returns the pull requests req selects, newest first. Gitea's list
// filters by open or closed only, so merged and closed-unmerged pull
// requests, Head and HeadPrefix are told apart here.
func (p *Provider) List(ctx context.Context, req *scm.ListRequest) ([]*scm.Proposal, error) {
	if req == nil {
		req = &scm.ListRequest{}
	}
	state := sdk.StateAll
	switch req.State {
	case scm.StateUnspecified:
	case scm.StateOpen:
		state = sdk.StateOpen
	case scm.StateMerged, scm.StateClosed:
		state = sdk.StateClosed
	default:
		return nil, fmt.Errorf("gitea: listing pull requests: %w: unknown state %d", scm.ErrInvalid, req.State)
	}
	c, err := p.client(ctx)
	if err != nil {
		return nil, err
	}
	prs, err := all(ctx, "listing pull requests", func(page int) ([]*sdk.PullRequest, *sdk.Response, error) {
		return c.ListRepoPullRequests(p.owner, p.repo, sdk.ListPullRequestsOptions{
			ListOptions: sdk.ListOptions{Page: page, PageSize: pageSize},
			State:       state,
		})
	})
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(prs))
	out := make([]*scm.Proposal, 0, len(prs))
	for _, pr := range prs {
		prop := proposal(pr)
		if seen[prop.ID] ||
			(req.State != scm.StateUnspecified && prop.State != req.State) ||
			(req.Head != "" && prop.Head != req.Head) ||
			!strings.HasPrefix(prop.Head, req.HeadPrefix) {
			continue
		}
		// A pull request opened while paging shifts the pages, so one
		// can show up twice.
		seen[prop.ID] = true
		out = append(out, prop)
	}
	slices.SortStableFunc(out, func(a, b *scm.Proposal) int {
		ia, _ := strconv.ParseInt(a.ID, 10, 64)
		ib, _ := strconv.ParseInt(b.ID, 10, 64)
		return cmp.Compare(ib, ia)
	})
	return out, nil
}

// Find returns the open pull request from head into base with Gitea's
// GET /repos/{owner}/{repo}/pulls/{base}/{head} (Gitea 1.22 and later):
// one call, however many pull requests the repository has. Gitea answers
// it with any one pull request of the two branches, open or not; only when
// that one is merged or closed does Find list the open pull requests to
// look for a later one, as when a change set is proposed again after its
// first proposal was closed.
func (p *Provider) Find(ctx context.Context, head, base string) (*scm.Proposal, error) {
	if head == "" || base == "" {
		return nil, fmt.Errorf("gitea: finding a pull request: %w: head and base are required", scm.ErrInvalid)
	}
	c, err := p.client(ctx)
	if err != nil {
		return nil, err
	}
	op := fmt.Sprintf("finding the pull request from %q into %q", head, base)
	pr, resp, err := c.GetPullRequestByBaseHead(p.owner, p.repo, base, head)
	if err != nil {
		return nil, wrap(ctx, op, resp, err)
	}
	if prop := proposal(pr); prop.State == scm.StateOpen && prop.Head == head && prop.Base == base {
		return prop, nil
	}
	open, err := p.List(ctx, &scm.ListRequest{State: scm.StateOpen, Head: head})
	if err != nil {
		return nil, err
	}
	for _, prop := range open {
		if prop.Base == base {
			return prop, nil
		}
	}
	return nil, fmt.Errorf("gitea: %s: %w: no open pull request", op, scm.ErrNotFound)
}

// SetBody replaces the description of pull request id.
func (p *Provider) SetBody(ctx context.Context, id, body string) error {
	index, err := parseID(id)
	if err != nil {
		return err
	}
	c, err := p.client(ctx)
	if err != nil {
		return err
	}
	_, resp, err := c.EditPullRequest(p.owner, p.repo, index, sdk.EditPullRequestOption{Body: &body})
	if err != nil {
		return wrap(ctx, "setting the body of pull request "+id, resp, err)
	}
	return nil
}

// labelIDs resolves label names to the repository's label ids, creating
// the labels that do not exist.
func (p *Provider) labelIDs(ctx context.Context, c *sdk.Client, names []string) ([]int64, error) {
	names = uniq(names)
	if len(names) == 0 {
		return nil, nil
	}
	ids, missing, err := p.lookupLabels(ctx, c, names)
	if err != nil || len(missing) == 0 {
		return ids, err
	}
	p.labelMu.Lock()
	defer p.labelMu.Unlock()
	// Another Open may have created them while this one waited.
	ids, missing, err = p.lookupLabels(ctx, c, names)
	if err != nil {
		return nil, err
	}
	for _, name := range missing {
		l, resp, err := c.CreateLabel(p.owner, p.repo, sdk.CreateLabelOption{Name: name, Color: LabelColor})
		if err != nil {
			return nil, wrap(ctx, fmt.Sprintf("creating label %q", name), resp, err)
		}
		ids = append(ids, l.ID)
	}
	return ids, nil
}

// lookupLabels returns the ids of the labels in names the repository has,
// and the names it lacks.
func (p *Provider) lookupLabels(ctx context.Context, c *sdk.Client, names []string) (ids []int64, missing []string, err error) {
	labels, err := all(ctx, "listing labels", func(page int) ([]*sdk.Label, *sdk.Response, error) {
		return c.ListRepoLabels(p.owner, p.repo, sdk.ListLabelsOptions{
			ListOptions: sdk.ListOptions{Page: page, PageSize: pageSize},
		})
	})
	if err != nil {
		return nil, nil, err
	}
	byName := make(map[string]int64, len(labels))
	for _, l := range labels {
		if _, dup := byName[l.Name]; !dup {
			byName[l.Name] = l.ID
		}
	}
	for _, name := range names {
		if id, ok := byName[name]; ok {
			ids = append(ids, id)
		} else {
			missing = append(missing, name)
		}
	}
	return ids, missing, nil
}

// all calls fetch for page 1 and the pages after it until the last. It
// follows the Link header's "next" page, as Gitea sends it; a server that
// sends no Link header is paged until a page comes back short.
func all[T any](ctx context.Context, op string, fetch func(page int) ([]T, *sdk.Response, error)) ([]T, error) {
	var out []T
	for page := 1; ; {
		items, resp, err := fetch(page)
		if err != nil {
			return nil, wrap(ctx, fmt.Sprintf("%s (page %d)", op, page), resp, err)
		}
		out = append(out, items...)
		switch {
		case resp.NextPage > page:
			page = resp.NextPage
		case resp.Header.Get("Link") == "" && len(items) >= pageSize:
			page++
		default:
			return out, nil
		}
	}
}

// wrap turns an SDK error into one wrapping the scm sentinel for Gitea's
// answer, keeping Gitea's message. A context that ended gives its own
// error. Credentials never reach the message: the SDK holds none, and
// neither URLs nor Gitea's messages carry them.
func wrap(ctx context.Context, op string, resp *sdk.Response, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("gitea: %s: %w", op, ctxErr)
	}
	if resp == nil || resp.Response == nil {
		if scm.IsSentinel(err) {
			// The HTTP client already said what went wrong, such as a
			// token source failing or a rate limit it gave up waiting on.
			return fmt.Errorf("gitea: %s: %w", op, err)
		}
		return fmt.Errorf("gitea: %s: %w: %s", op, scm.ErrUnavailable, message(err))
	}
	if code := resp.StatusCode; code >= 200 && code < 300 {
		return fmt.Errorf("gitea: %s: %w: unreadable answer (HTTP %d): %s", op, scm.ErrUnavailable, code, message(err))
	}
	d := detail(resp, err)
	if ra := resp.Header.Get("Retry-After"); ra != "" && resp.StatusCode == http.StatusTooManyRequests {
		d += "; retry after " + retryAfter(resp.Header)
	}
	if sentinel := scm.ForStatus(resp.StatusCode); sentinel != nil {
		return fmt.Errorf("gitea: %s: %w (%s)", op, sentinel, d)
	}
	return fmt.Errorf("gitea: %s: unexpected answer (%s)", op, d)
}

// detail describes an error answer: its status and Gitea's message. The
// SDK quotes a body that is not Gitea's JSON whole, such as a proxy's
// error page, which says no more than the status.
func detail(resp *sdk.Response, err error) string {
	status := resp.Status
	if status == "" {
		status = strconv.Itoa(resp.StatusCode)
	}
	if strings.HasPrefix(err.Error(), "unknown API error") {
		return "HTTP " + status
	}
	return "HTTP " + status + ": " + message(err)
}

// message returns err's message on one line, truncated as
// hostapi.TruncateMessage does.
func message(err error) string {
	return hostapi.TruncateMessage(strings.Join(strings.Fields(err.Error()), " "))
}

// retryAfter renders the wait an answer's Retry-After header asks for
// (seconds or an HTTP date) as a duration, or quotes a header that is
// neither.
func retryAfter(h http.Header) string {
	if d, ok := hostapi.RetryAfter(h, time.Now()); ok {
		return d.Round(time.Second).String()
	}
	return strconv.Quote(h.Get("Retry-After"))
}

// parseID parses a proposal ID as a pull request index. An ID that is not
// one names no pull request, so it is ErrNotFound.
func parseID(id string) (int64, error) {
	index, err := strconv.ParseInt(id, 10, 64)
	if err != nil || index <= 0 {
		return 0, fmt.Errorf("gitea: pull request %q: %w: Gitea pull requests are numbered 1, 2, …", id, scm.ErrNotFound)
	}
	return index, nil
}

// proposal converts a Gitea pull request.
func proposal(pr *sdk.PullRequest) *scm.Proposal {
	title, wip := trimWIP(pr.Title)
	p := &scm.Proposal{
		ID:    strconv.FormatInt(pr.Index, 10),
		URL:   pr.HTMLURL,
		Title: title,
		Body:  pr.Body,
		Head:  branch(pr.Head),
		Base:  branch(pr.Base),
		State: scm.StateOpen,
		// Gitea 1.22 and later report draft (computed from the title);
		// older versions only have the title.
		Draft: pr.Draft || wip,
	}
	switch {
	case pr.HasMerged || pr.Merged != nil:
		p.State = scm.StateMerged
	case pr.State == sdk.StateClosed:
		p.State = scm.StateClosed
	}
	for _, l := range pr.Labels {
		if l != nil {
			p.Labels = append(p.Labels, l.Name)
		}
	}
	if pr.Created != nil {
		p.CreatedAt = *pr.Created
	}
	if pr.Updated != nil {
		p.UpdatedAt = *pr.Updated
	}
	return p
}

// branch returns the branch name of one end of a pull request. Gitea's
// "label" is the branch name; "ref" is too while the branch exists, but
// becomes "refs/pull/<index>/head" once it is deleted, as after a merge.
func branch(b *sdk.PRBranchInfo) string {
	switch {
	case b == nil:
		return ""
	case b.Name != "":
		return b.Name
	default:
		return b.Ref
	}
}

// trimWIP removes a work-in-progress prefix from title and reports whether
// it had one.
func trimWIP(title string) (string, bool) {
	if rest, ok := hostapi.CutPrefixFold(title, wipPrefixes); ok {
		return strings.TrimLeft(rest, " "), true
	}
	return title, false
}

// uniq returns names without empty and repeated names, in order.
func uniq(names []string) []string {
	var out []string
	for _, n := range names {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
