// Package giteatest is an HTTP-level fake of Gitea's API v1, holding one
// repository, for testing code that talks to Gitea (such as scm/gitea with
// the scmtest conformance suite).
//
// The fake answers with Gitea's own response shapes, status codes and
// headers for the calls it serves:
//
//	GET   /api/v1/version
//	GET   /api/v1/repos/{owner}/{repo}/pulls          (state, page, limit; Link and X-Total-Count)
//	POST  /api/v1/repos/{owner}/{repo}/pulls          (201; 404 for an unknown branch, 409 for a duplicate, 422 for a missing field)
//	GET   /api/v1/repos/{owner}/{repo}/pulls/{index}
//	PATCH /api/v1/repos/{owner}/{repo}/pulls/{index}  (201, as Gitea answers)
//	GET   /api/v1/repos/{owner}/{repo}/labels         (page, limit; Link and X-Total-Count)
//	POST  /api/v1/repos/{owner}/{repo}/labels         (201)
//
// Pages hold at most MaxPageSize items, so that paging is exercised with
// few items. Any other call is answered 404 and fails the test.
package giteatest

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cup-dev/cup/scm/scmtest"
)

// MaxPageSize is the most items a page of a list holds, and the page size
// when the call asks for none. Gitea's defaults are 50
// (MAX_RESPONSE_ITEMS) and 30 (DEFAULT_PAGING_NUM); the fake's are small so
// that a few dozen items take several pages.
const MaxPageSize = 10

// Version is the Gitea version GET /api/v1/version reports.
const Version = "1.24.0"

// Fake is a fake Gitea server. It implements scmtest.Fake and is safe for
// concurrent use.
type Fake struct {
	t           testing.TB
	owner, repo string
	srv         *httptest.Server
	// stop releases calls held by FaultTimeout when the test ends.
	stop chan struct{}

	mu         sync.Mutex
	branches   map[string]bool
	gitDir     string  // see LinkRepository
	pulls      []*pull // pulls[i] has index i+1
	labels     []*label
	fault      scmtest.Fault
	faultN     int
	retryAfter time.Duration
	requests   []scmtest.Request
}

var _ scmtest.Fake = (*Fake)(nil)

type pull struct {
	index              int64
	title, body        string
	head, base         string
	labels             []int64
	closed, merged     bool
	created, updated   time.Time
	closedAt, mergedAt *time.Time
	mergeSHA, headSHA  string
	baseSHA, mergeBase string
}

type label struct {
	id                 int64
	name, color, descr string
	exclusive          bool
}

// NewFake starts a fake Gitea on 127.0.0.1 holding the repository
// owner/repo with branch "main". It stops when the test ends.
func NewFake(t testing.TB, owner, repo string) *Fake {
	t.Helper()
	f := &Fake{
		t:        t,
		owner:    owner,
		repo:     repo,
		stop:     make(chan struct{}),
		branches: map[string]bool{"main": true},
	}
	mux := http.NewServeMux()
	base := "/api/v1/repos/{owner}/{repo}"
	mux.HandleFunc("GET /api/v1/version", f.version)
	mux.HandleFunc("GET "+base+"/pulls", f.repoRoute(f.listPulls))
	mux.HandleFunc("POST "+base+"/pulls", f.repoRoute(f.createPull))
	mux.HandleFunc("GET "+base+"/pulls/{index}", f.repoRoute(f.getPull))
	mux.HandleFunc("GET "+base+"/pulls/{base}/{head...}", f.repoRoute(f.getPullByBaseHead))
	mux.HandleFunc("PATCH "+base+"/pulls/{index}", f.repoRoute(f.editPull))
	mux.HandleFunc("GET "+base+"/labels", f.repoRoute(f.listLabels))
	mux.HandleFunc("POST "+base+"/labels", f.repoRoute(f.createLabel))
	mux.HandleFunc("/", f.unexpected)
	f.srv = httptest.NewServer(f.record(mux))
	t.Cleanup(func() {
		close(f.stop)
		f.srv.Close()
	})
	return f
}

// URL returns the server's root URL, such as "http://127.0.0.1:4242/",
// without "/api/v1": what scm/gitea's Config.BaseURL takes.
func (f *Fake) URL() string { return f.srv.URL + "/" }

// AddBranch makes a branch exist.
func (f *Fake) AddBranch(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.branches[name] = true
}

// DeleteBranch deletes a branch, as merging with "delete branch" does.
// Pull requests from it then report head.ref "refs/pull/<index>/head", as
// Gitea's do.
func (f *Fake) DeleteBranch(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.branches, name)
}

// AddLabel creates a repository label and returns its id.
func (f *Fake) AddLabel(name string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addLabel(name, "#e11d21", "", false).id
}

// Merge marks pull request id merged, as a reviewer would.
func (f *Fake) Merge(t testing.TB, id string) {
	t.Helper()
	f.close(t, id, true)
}

// Close closes pull request id without merging it.
func (f *Fake) Close(t testing.TB, id string) {
	t.Helper()
	f.close(t, id, false)
}

func (f *Fake) close(t testing.TB, id string, merge bool) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	pr := f.pull(id)
	switch {
	case pr == nil:
		t.Errorf("giteatest: no pull request %q", id)
		return
	case pr.closed:
		t.Errorf("giteatest: pull request %q is already closed", id)
		return
	}
	now := f.tick()
	pr.closed, pr.closedAt, pr.updated = true, &now, now
	if merge {
		pr.merged, pr.mergedAt = true, &now
		pr.mergeSHA = sha("merge", pr.head, pr.base)
	}
}

// SetFault makes the next n calls fail with flt (n < 0: every call until
// SetFault(scmtest.FaultNone, 0, 0)). A FaultRateLimited call is answered
// 429 with Retry-After set to retryAfter in whole seconds, rounded up;
// Gitea has no rate limiter of its own, so there are no X-RateLimit
// headers, only what a limiting proxy sends.
func (f *Fake) SetFault(flt scmtest.Fault, n int, retryAfter time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault, f.faultN, f.retryAfter = flt, n, retryAfter
	if flt == scmtest.FaultNone {
		f.faultN = 0
	}
}

// Requests returns the calls received so far, oldest first.
func (f *Fake) Requests() []scmtest.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// record records every call and fails those SetFault asks for.
func (f *Fake) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, scmtest.Request{
			Method: r.Method,
			Path:   r.URL.Path,
			Query:  r.URL.RawQuery,
			Header: r.Header.Clone(),
			Body:   body,
		})
		flt, retry := scmtest.FaultNone, f.retryAfter
		if f.faultN != 0 {
			flt = f.fault
			if f.faultN > 0 {
				f.faultN--
			}
		}
		f.mu.Unlock()
		if f.fail(w, r, flt, retry) {
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		next.ServeHTTP(w, r)
	})
}

// fail answers r as flt asks and reports whether it did.
func (f *Fake) fail(w http.ResponseWriter, r *http.Request, flt scmtest.Fault, retry time.Duration) bool {
	switch flt {
	case scmtest.FaultNone:
		return false
	case scmtest.FaultServerError:
		// What a reverse proxy in front of a Gitea that is down sends.
		text(w, http.StatusBadGateway, "text/html",
			"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n")
	case scmtest.FaultUnauthorized:
		f.apiError(w, http.StatusUnauthorized, "token is required")
	case scmtest.FaultForbidden:
		f.apiError(w, http.StatusForbidden, "token does not have at least one of required scope(s), required=[write:repository], token scope=read:repository")
	case scmtest.FaultRateLimited:
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
		text(w, http.StatusTooManyRequests, "text/plain; charset=utf-8", "Too Many Requests\n")
	case scmtest.FaultInvalid:
		f.apiError(w, http.StatusUnprocessableEntity, "[Title]: Required")
	case scmtest.FaultTimeout:
		select {
		case <-r.Context().Done():
		case <-f.stop:
		}
	default:
		f.t.Errorf("giteatest: unknown fault %d", flt)
		f.apiError(w, http.StatusInternalServerError, "unknown fault")
	}
	return true
}

// text writes a response that is not JSON, as a proxy in front of Gitea
// sends.
func text(w http.ResponseWriter, code int, contentType, body string) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(code)
	io.WriteString(w, body)
}

func (f *Fake) unexpected(w http.ResponseWriter, r *http.Request) {
	f.t.Errorf("giteatest: unexpected call %s %s", r.Method, r.URL)
	f.apiError(w, http.StatusNotFound, "not found")
}

// repoRoute answers calls for other repositories 404, as Gitea does.
func (f *Fake) repoRoute(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.PathValue("owner"), f.owner) || !strings.EqualFold(r.PathValue("repo"), f.repo) {
			f.apiError(w, http.StatusNotFound, "not found")
			return
		}
		h(w, r)
	}
}

func (f *Fake) version(w http.ResponseWriter, _ *http.Request) {
	f.json(w, http.StatusOK, map[string]string{"version": Version})
}

func (f *Fake) listPulls(w http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state")
	if state == "" {
		state = "open"
	}
	f.mu.Lock()
	var out []*apiPull
	// Gitea's default order: newest first.
	for i := len(f.pulls) - 1; i >= 0; i-- {
		pr := f.pulls[i]
		if (state == "open" && pr.closed) || (state == "closed" && !pr.closed) {
			continue
		}
		out = append(out, f.apiPull(pr))
	}
	f.mu.Unlock()
	page(f, w, r, out)
}

func (f *Fake) getPull(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pr := f.pull(r.PathValue("index"))
	if pr == nil {
		f.apiError(w, http.StatusNotFound, "not found")
		return
	}
	f.json(w, http.StatusOK, f.apiPull(pr))
}

// getPullByBaseHead answers GET /repos/{owner}/{repo}/pulls/{base}/{head}
// (Gitea 1.22 and later) as Gitea 1.26 does: with one pull request of the
// two branches in whatever state, the first opened, or 404. A head
// "owner:branch" names a branch of a fork, which the fake has none of.
func (f *Fake) getPullByBaseHead(w http.ResponseWriter, r *http.Request) {
	base, head := r.PathValue("base"), r.PathValue("head")
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, pr := range f.pulls {
		if pr.base == base && pr.head == head {
			f.json(w, http.StatusOK, f.apiPull(pr))
			return
		}
	}
	f.apiError(w, http.StatusNotFound, "not found")
}

// createOption is Gitea's CreatePullRequestOption.
type createOption struct {
	Head      string     `json:"head"`
	Base      string     `json:"base"`
	Title     string     `json:"title"`
	Body      string     `json:"body"`
	Assignee  string     `json:"assignee"`
	Assignees []string   `json:"assignees"`
	Reviewers []string   `json:"reviewers"`
	Milestone int64      `json:"milestone"`
	Labels    []int64    `json:"labels"`
	Deadline  *time.Time `json:"due_date"`
}

func (f *Fake) createPull(w http.ResponseWriter, r *http.Request) {
	var opt createOption
	if !f.decode(w, r, &opt) {
		return
	}
	switch {
	case opt.Head == "":
		f.apiError(w, http.StatusUnprocessableEntity, "[Head]: Required")
		return
	case opt.Base == "":
		f.apiError(w, http.StatusUnprocessableEntity, "[Base]: Required")
		return
	case opt.Title == "":
		f.apiError(w, http.StatusUnprocessableEntity, "[Title]: Required")
		return
	case opt.Head == opt.Base:
		f.apiError(w, http.StatusUnprocessableEntity, "Invalid PullRequest: There are no changes between the head and the base")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.hasBranch(opt.Head) || !f.hasBranch(opt.Base) {
		// Gitea's parseCompareInfo: an unknown head or base is a 404.
		f.apiError(w, http.StatusNotFound, "not found")
		return
	}
	for _, pr := range f.pulls {
		if !pr.closed && pr.head == opt.Head && pr.base == opt.Base {
			f.apiError(w, http.StatusConflict, fmt.Sprintf(
				"pull request already exists for these targets [id: %d, issue_id: %d, head_repo_id: 1, base_repo_id: 1, head_branch: %s, base_branch: %s]",
				pr.index, pr.index, pr.head, pr.base))
			return
		}
	}
	now := f.tick()
	pr := &pull{
		index:   int64(len(f.pulls) + 1),
		title:   opt.Title,
		body:    opt.Body,
		head:    opt.Head,
		base:    opt.Base,
		created: now,
		updated: now,
		headSHA: sha("branch", opt.Head),
		baseSHA: sha("branch", opt.Base),
	}
	pr.mergeBase = pr.baseSHA
	// Gitea drops ids that name no label.
	for _, id := range opt.Labels {
		if f.label(id) != nil && !slices.Contains(pr.labels, id) {
			pr.labels = append(pr.labels, id)
		}
	}
	f.pulls = append(f.pulls, pr)
	f.json(w, http.StatusCreated, f.apiPull(pr))
}

// editOption is Gitea's EditPullRequestOption, as far as the fake applies it.
type editOption struct {
	Title  string  `json:"title"`
	Body   *string `json:"body"`
	Base   string  `json:"base"`
	Labels []int64 `json:"labels"`
	State  *string `json:"state"`
}

func (f *Fake) editPull(w http.ResponseWriter, r *http.Request) {
	var opt editOption
	if !f.decode(w, r, &opt) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	pr := f.pull(r.PathValue("index"))
	if pr == nil {
		f.apiError(w, http.StatusNotFound, "not found")
		return
	}
	if opt.Base != "" && opt.Base != pr.base {
		f.t.Errorf("giteatest: changing a pull request's base is not supported")
	}
	if opt.State != nil {
		if pr.merged {
			f.apiError(w, http.StatusPreconditionFailed, "cannot change state of this pull request, it was already merged")
			return
		}
		f.t.Errorf("giteatest: changing a pull request's state is not supported")
	}
	if opt.Title != "" {
		pr.title = opt.Title
	}
	if opt.Body != nil {
		pr.body = *opt.Body
	}
	if opt.Labels != nil {
		pr.labels = nil
		for _, id := range opt.Labels {
			if f.label(id) != nil {
				pr.labels = append(pr.labels, id)
			}
		}
	}
	pr.updated = f.tick()
	// Gitea answers an edit 201 Created.
	f.json(w, http.StatusCreated, f.apiPull(pr))
}

func (f *Fake) listLabels(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	out := make([]*apiLabel, 0, len(f.labels))
	for _, l := range f.labels {
		out = append(out, f.apiLabel(l))
	}
	f.mu.Unlock()
	page(f, w, r, out)
}

// createLabelOption is Gitea's CreateLabelOption.
type createLabelOption struct {
	Name        string `json:"name"`
	Color       string `json:"color"`
	Description string `json:"description"`
	Exclusive   bool   `json:"exclusive"`
	IsArchived  bool   `json:"is_archived"`
}

var colorRE = regexp.MustCompile(`^#?[0-9a-fA-F]{6}$`)

func (f *Fake) createLabel(w http.ResponseWriter, r *http.Request) {
	var opt createLabelOption
	if !f.decode(w, r, &opt) {
		return
	}
	switch {
	case strings.TrimSpace(opt.Name) == "":
		f.apiError(w, http.StatusUnprocessableEntity, "[Name]: Required")
		return
	case !colorRE.MatchString(opt.Color):
		f.apiError(w, http.StatusUnprocessableEntity, "invalid color")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Gitea does not require label names to be unique.
	l := f.addLabel(opt.Name, "#"+strings.TrimPrefix(opt.Color, "#"), opt.Description, opt.Exclusive)
	f.json(w, http.StatusCreated, f.apiLabel(l))
}

func (f *Fake) addLabel(name, color, descr string, exclusive bool) *label {
	l := &label{id: int64(len(f.labels) + 1), name: name, color: strings.ToLower(color), descr: descr, exclusive: exclusive}
	f.labels = append(f.labels, l)
	return l
}

// page writes one page of items as Gitea does: page is 1-based, limit is
// capped at MaxPageSize, and the Link header names the next, last, first
// and previous pages.
func page[T any](f *Fake, w http.ResponseWriter, r *http.Request, items []T) {
	q := r.URL.Query()
	num, _ := strconv.Atoi(q.Get("page"))
	num = max(num, 1)
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 || limit > MaxPageSize {
		limit = MaxPageSize
	}
	total := len(items)
	pages := (total + limit - 1) / limit
	link := func(n int, rel string) string {
		u := *r.URL
		v := u.Query()
		v.Set("page", strconv.Itoa(n))
		u.RawQuery = v.Encode()
		return fmt.Sprintf("<%s%s>; rel=%q", f.URL(), u.RequestURI()[1:], rel)
	}
	var links []string
	if num < pages {
		links = append(links, link(num+1, "next"), link(pages, "last"))
	}
	if num > 1 {
		links = append(links, link(1, "first"), link(min(num-1, max(pages, 1)), "prev"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ","))
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(total))
	start := min((num-1)*limit, total)
	f.json(w, http.StatusOK, items[start:min(start+limit, total)])
}

// pull returns the pull request with index id, or nil. f.mu is held.
func (f *Fake) pull(id string) *pull {
	i, err := strconv.Atoi(id)
	if err != nil || i < 1 || i > len(f.pulls) {
		return nil
	}
	return f.pulls[i-1]
}

// label returns the label with the id, or nil. f.mu is held.
func (f *Fake) label(id int64) *label {
	if id < 1 || id > int64(len(f.labels)) {
		return nil
	}
	return f.labels[id-1]
}

// tick returns the time of a change: now, in whole seconds, as Gitea
// stores it.
func (f *Fake) tick() time.Time {
	return time.Now().UTC().Truncate(time.Second)
}

func (f *Fake) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		f.apiError(w, http.StatusUnprocessableEntity, "[]: "+err.Error())
		return false
	}
	return true
}

// apiError writes Gitea's error body, {"message": ..., "url": ...}.
func (f *Fake) apiError(w http.ResponseWriter, code int, msg string) {
	f.json(w, code, map[string]string{"message": msg, "url": f.URL() + "api/swagger"})
}

func (f *Fake) json(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(code)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		f.t.Errorf("giteatest: encoding a response: %v", err)
	}
}

func sha(parts ...string) string {
	h := sha1.Sum([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])
}

// The response shapes below are Gitea's (modules/structs), field for field
// where the fake has a value.

type apiUser struct {
	ID        int64  `json:"id"`
	Login     string `json:"login"`
	LoginName string `json:"login_name"`
	FullName  string `json:"full_name"`
	Email     string `json:"email"`
	AvatarURL string `json:"avatar_url"`
	HTMLURL   string `json:"html_url"`
	IsAdmin   bool   `json:"is_admin"`
	Username  string `json:"username"`
}

type apiRepo struct {
	ID            int64    `json:"id"`
	Owner         *apiUser `json:"owner"`
	Name          string   `json:"name"`
	FullName      string   `json:"full_name"`
	Private       bool     `json:"private"`
	HTMLURL       string   `json:"html_url"`
	CloneURL      string   `json:"clone_url"`
	DefaultBranch string   `json:"default_branch"`
}

type apiBranch struct {
	Label  string   `json:"label"`
	Ref    string   `json:"ref"`
	Sha    string   `json:"sha"`
	RepoID int64    `json:"repo_id"`
	Repo   *apiRepo `json:"repo"`
}

type apiLabel struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Exclusive   bool   `json:"exclusive"`
	IsArchived  bool   `json:"is_archived"`
	Color       string `json:"color"`
	Description string `json:"description"`
	URL         string `json:"url"`
}

type apiPull struct {
	ID                      int64       `json:"id"`
	URL                     string      `json:"url"`
	Number                  int64       `json:"number"`
	User                    *apiUser    `json:"user"`
	Title                   string      `json:"title"`
	Body                    string      `json:"body"`
	Labels                  []*apiLabel `json:"labels"`
	Milestone               any         `json:"milestone"`
	Assignee                *apiUser    `json:"assignee"`
	Assignees               []*apiUser  `json:"assignees"`
	RequestedReviewers      []*apiUser  `json:"requested_reviewers"`
	RequestedReviewersTeams []any       `json:"requested_reviewers_teams"`
	State                   string      `json:"state"`
	Draft                   bool        `json:"draft"`
	IsLocked                bool        `json:"is_locked"`
	Comments                int         `json:"comments"`
	ReviewComments          int         `json:"review_comments"`
	Additions               int         `json:"additions"`
	Deletions               int         `json:"deletions"`
	ChangedFiles            int         `json:"changed_files"`
	HTMLURL                 string      `json:"html_url"`
	DiffURL                 string      `json:"diff_url"`
	PatchURL                string      `json:"patch_url"`
	Mergeable               bool        `json:"mergeable"`
	Merged                  bool        `json:"merged"`
	MergedAt                *time.Time  `json:"merged_at"`
	MergeCommitSHA          *string     `json:"merge_commit_sha"`
	MergedBy                *apiUser    `json:"merged_by"`
	AllowMaintainerEdit     bool        `json:"allow_maintainer_edit"`
	Base                    *apiBranch  `json:"base"`
	Head                    *apiBranch  `json:"head"`
	MergeBase               string      `json:"merge_base"`
	DueDate                 *time.Time  `json:"due_date"`
	CreatedAt               *time.Time  `json:"created_at"`
	UpdatedAt               *time.Time  `json:"updated_at"`
	ClosedAt                *time.Time  `json:"closed_at"`
	PinOrder                int         `json:"pin_order"`
}

func (f *Fake) apiUser() *apiUser {
	return &apiUser{
		ID: 1, Login: "cup-bot", FullName: "cup", Email: "cup-bot@noreply.localhost",
		AvatarURL: f.URL() + "avatars/1", HTMLURL: f.URL() + "cup-bot", Username: "cup-bot",
	}
}

func (f *Fake) apiRepo() *apiRepo {
	owner := f.apiUser()
	owner.ID, owner.Login, owner.Username, owner.HTMLURL = 2, f.owner, f.owner, f.URL()+url.PathEscape(f.owner)
	return &apiRepo{
		ID: 1, Owner: owner, Name: f.repo, FullName: f.owner + "/" + f.repo,
		HTMLURL: f.repoURL(), CloneURL: f.repoURL() + ".git", DefaultBranch: "main",
	}
}

func (f *Fake) repoURL() string {
	return f.URL() + url.PathEscape(f.owner) + "/" + url.PathEscape(f.repo)
}

func (f *Fake) apiLabel(l *label) *apiLabel {
	return &apiLabel{
		ID: l.id, Name: l.name, Exclusive: l.exclusive, Description: l.descr,
		// Gitea stores "#rrggbb" and answers without the "#".
		Color: strings.TrimPrefix(l.color, "#"),
		URL:   fmt.Sprintf("%s/api/v1/repos/%s/%s/labels/%d", f.srv.URL, f.owner, f.repo, l.id),
	}
}

// apiPull renders pr as Gitea's services/convert.ToAPIPullRequest does.
// f.mu is held.
func (f *Fake) apiPull(pr *pull) *apiPull {
	html := fmt.Sprintf("%s/pulls/%d", f.repoURL(), pr.index)
	created, updated := pr.created, pr.updated
	out := &apiPull{
		ID:      pr.index + 100,
		URL:     html,
		Number:  pr.index,
		User:    f.apiUser(),
		Title:   pr.title,
		Body:    pr.body,
		Labels:  []*apiLabel{},
		State:   "open",
		Draft:   wip(pr.title),
		HTMLURL: html, DiffURL: html + ".diff", PatchURL: html + ".patch",
		Mergeable:           !pr.closed,
		Merged:              pr.merged,
		MergedAt:            pr.mergedAt,
		AllowMaintainerEdit: false,
		Base:                &apiBranch{Label: pr.base, Ref: pr.base, Sha: pr.baseSHA, RepoID: 1, Repo: f.apiRepo()},
		Head:                &apiBranch{Label: pr.head, Ref: pr.head, Sha: pr.headSHA, RepoID: 1, Repo: f.apiRepo()},
		MergeBase:           pr.mergeBase,
		CreatedAt:           &created,
		UpdatedAt:           &updated,
		ClosedAt:            pr.closedAt,
	}
	if !f.hasBranch(pr.head) {
		out.Head.Ref = fmt.Sprintf("refs/pull/%d/head", pr.index)
	}
	if pr.closed {
		out.State = "closed"
	}
	if pr.merged {
		sha := pr.mergeSHA
		out.MergeCommitSHA, out.MergedBy = &sha, f.apiUser()
	}
	for _, id := range pr.labels {
		out.Labels = append(out.Labels, f.apiLabel(f.label(id)))
	}
	return out
}

// wip reports whether title has one of Gitea's default work-in-progress
// prefixes, which is what Gitea 1.22 and later report as draft.
func wip(title string) bool {
	for _, p := range []string{"WIP:", "[WIP]"} {
		if len(title) >= len(p) && strings.EqualFold(title[:len(p)], p) {
			return true
		}
	}
	return false
}

// LinkRepository makes the branches of the bare Git repository at dir
// exist too, as pushing a branch does on the host.
func (f *Fake) LinkRepository(dir string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gitDir = dir
}

// hasBranch reports whether a branch exists. f.mu must be held.
func (f *Fake) hasBranch(name string) bool {
	return f.branches[name] || scmtest.HasBranch(f.gitDir, name)
}
