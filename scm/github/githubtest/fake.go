// Package githubtest is an HTTP-level fake of the GitHub REST API's pull
// request endpoints, for testing scm/github and code built on it.
//
// The fake serves GitHub Enterprise Server's URL layout (a base ending in
// /api/v3/) on 127.0.0.1 and answers with GitHub's response shapes, status
// codes, rate-limit headers and Link pagination. It serves:
//
//	POST  /api/v3/repos/{owner}/{repo}/pulls
//	GET   /api/v3/repos/{owner}/{repo}/pulls
//	GET   /api/v3/repos/{owner}/{repo}/pulls/{number}
//	PATCH /api/v3/repos/{owner}/{repo}/pulls/{number}
//	POST  /api/v3/repos/{owner}/{repo}/issues/{number}/labels
//
// Every answer carries GitHub's X-RateLimit-* headers with budget to
// spare; only [scmtest.FaultRateLimited] exhausts it (403, remaining 0, a
// reset RetryAfter later, and Retry-After).
//
// Any other call is answered 404 and fails the test, so a test notices when
// code under test calls something nobody expected.
//
// Lists are paginated at most [PageSize] per page, a smaller cap than
// GitHub's 100, so that a few dozen pull requests exercise pagination.
package githubtest

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/scm/scmtest"
)

// PageSize is the largest page the fake serves, whatever per_page asks
// for, and the default page size.
const PageSize = 10

// rateLimit is the fake's primary rate limit per hour, GitHub's for a
// personal access token.
const rateLimit = 5000

const docsBase = "https://docs.github.com/rest"

// Fake is a fake GitHub holding one repository. It implements
// [scmtest.Fake] and is safe for concurrent use.
type Fake struct {
	// Recorder gives the fake SetFault and Requests.
	scmtest.Recorder

	t           testing.TB
	owner, repo string
	srv         *httptest.Server
	done        chan struct{} // closed when the test ends; releases held calls

	mu          sync.Mutex
	branches    map[string]string // name → head commit
	gitDir      string            // a bare repository whose branches exist too; see LinkRepository
	pulls       []*pull           // pulls[i].number == i+1
	labelIDs    map[string]int64
	used        int
	windowReset time.Time
}

var _ scmtest.Fake = (*Fake)(nil)

type pull struct {
	number                   int
	title, body, head, base  string
	headOwner                string // differs from the repository owner for a fork
	open, merged, draft      bool
	labels                   []string
	created, updated, closed time.Time
}

// NewFake starts a fake GitHub holding the repository owner/repo with a
// branch "main". It stops when the test ends.
func NewFake(t testing.TB, owner, repo string) *Fake {
	t.Helper()
	f := &Fake{
		t:           t,
		owner:       owner,
		repo:        repo,
		done:        make(chan struct{}),
		branches:    map[string]string{},
		labelIDs:    map[string]int64{},
		windowReset: time.Now().Add(time.Hour).Truncate(time.Second),
	}
	f.AddBranch("main")
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(f.done) }) // runs first: releases held calls
	return f
}

// URL returns the API's base URL, ending in /api/v3/.
func (f *Fake) URL() string { return f.srv.URL + "/api/v3/" }

// AddBranch makes a branch exist in the repository.
func (f *Fake) AddBranch(name string) {
	sum := sha1.Sum([]byte(name))
	f.mu.Lock()
	defer f.mu.Unlock()
	f.branches[name] = hex.EncodeToString(sum[:])
}

// LinkRepository makes the branches of the bare Git repository at dir
// exist too, as on GitHub, where pushing a branch makes it exist: for tests
// that push to a real repository and open proposals for what they pushed.
func (f *Fake) LinkRepository(dir string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gitDir = dir
}

// branch returns the head commit of a branch, and whether it exists.
// f.mu must be held.
func (f *Fake) branch(name string) (string, bool) {
	if sha, ok := f.branches[name]; ok {
		return sha, true
	}
	if !scmtest.HasBranch(f.gitDir, name) {
		return "", false
	}
	sha, err := gitrepo.Resolve(f.gitDir, "refs/heads/"+name)
	return sha, err == nil
}

// Merge merges the open pull request numbered id.
func (f *Fake) Merge(t testing.TB, id string) {
	t.Helper()
	f.finish(t, id, true)
}

// Close closes the open pull request numbered id without merging it.
func (f *Fake) Close(t testing.TB, id string) {
	t.Helper()
	f.finish(t, id, false)
}

func (f *Fake) finish(t testing.TB, id string, merge bool) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	pr := f.pullLocked(id)
	if pr == nil || !pr.open {
		t.Fatalf("githubtest: no open pull request %q", id)
		return
	}
	now := f.now()
	pr.open, pr.merged, pr.closed, pr.updated = false, merge, now, now
}

// OpenFromFork opens a pull request from branch head of user's fork into
// base, as a stranger would, and returns its number.
func (f *Fake) OpenFromFork(t testing.TB, user, head, base, title string) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.branches[base]; !ok {
		t.Fatalf("githubtest: no base branch %q", base)
	}
	pr := f.addLocked(title, "", head, base, false)
	pr.headOwner = user
	return strconv.Itoa(pr.number)
}

func (f *Fake) now() time.Time { return time.Now().UTC().Truncate(time.Second) }

func (f *Fake) pullLocked(id string) *pull {
	n, err := strconv.Atoi(id)
	if err != nil || n < 1 || n > len(f.pulls) {
		return nil
	}
	return f.pulls[n-1]
}

func (f *Fake) addLocked(title, body, head, base string, draft bool) *pull {
	now := f.now()
	pr := &pull{
		number: len(f.pulls) + 1, title: title, body: body, head: head, base: base,
		headOwner: f.owner, open: true, draft: draft, created: now, updated: now,
	}
	f.pulls = append(f.pulls, pr)
	return pr
}

// serve records the call, sets GitHub's headers, applies a fault and routes.
func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	fault, retryAfter := f.Record(r)
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.used++
	remaining, used, reset := max(rateLimit-f.used, 0), f.used, f.windowReset
	f.mu.Unlock()

	h := w.Header()
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")
	h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	h.Set("X-GitHub-Request-Id", fmt.Sprintf("FAKE:%04X", used))
	if fault == scmtest.FaultRateLimited {
		secs := int64(math.Ceil(retryAfter.Seconds()))
		remaining, used, reset = 0, rateLimit, time.Now().Add(retryAfter)
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	h.Set("X-RateLimit-Limit", strconv.Itoa(rateLimit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Used", strconv.Itoa(used))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(int64(math.Ceil(float64(reset.UnixNano())/1e9)), 10))
	h.Set("X-RateLimit-Resource", "core")

	switch fault {
	case scmtest.FaultServerError:
		writeJSON(w, http.StatusBadGateway, errorBody{Message: "Server Error"})
		return
	case scmtest.FaultUnauthorized:
		writeError(w, http.StatusUnauthorized, "Bad credentials", docsBase)
		return
	case scmtest.FaultForbidden:
		writeError(w, http.StatusForbidden, "Resource not accessible by personal access token", docsBase+"/pulls/pulls")
		return
	case scmtest.FaultRateLimited:
		writeError(w, http.StatusForbidden,
			"API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID "+h.Get("X-GitHub-Request-Id")+".",
			docsBase+"/overview/rate-limits-for-the-rest-api#about-the-rate-limit")
		return
	case scmtest.FaultInvalid:
		writeInvalid(w, fieldError{Resource: "PullRequest", Code: "custom", Message: "The request was refused by a fault the test set."})
		return
	case scmtest.FaultTimeout:
		select {
		case <-r.Context().Done():
		case <-f.done:
		}
		return
	}
	f.route(w, r, body)
}

func (f *Fake) route(w http.ResponseWriter, r *http.Request, body []byte) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v3/repos/"), "/")
	if !strings.HasPrefix(r.URL.Path, "/api/v3/repos/") || len(parts) < 3 ||
		!strings.EqualFold(parts[0], f.owner) || !strings.EqualFold(parts[1], f.repo) {
		f.unexpected(w, r)
		return
	}
	switch rest := parts[2:]; {
	case len(rest) == 1 && rest[0] == "pulls" && r.Method == http.MethodPost:
		f.createPull(w, r, body)
	case len(rest) == 1 && rest[0] == "pulls" && r.Method == http.MethodGet:
		f.listPulls(w, r)
	case len(rest) == 2 && rest[0] == "pulls" && r.Method == http.MethodGet:
		f.getPull(w, r, rest[1])
	case len(rest) == 2 && rest[0] == "pulls" && r.Method == http.MethodPatch:
		f.editPull(w, r, rest[1], body)
	case len(rest) == 3 && rest[0] == "issues" && rest[2] == "labels" && r.Method == http.MethodPost:
		f.addLabels(w, rest[1], body)
	default:
		f.unexpected(w, r)
	}
}

// unexpected answers a call the fake does not serve as GitHub answers an
// unknown route, and fails the test.
func (f *Fake) unexpected(w http.ResponseWriter, r *http.Request) {
	f.t.Errorf("githubtest: unexpected call %s %s", r.Method, r.URL)
	writeError(w, http.StatusNotFound, "Not Found", docsBase)
}

func (f *Fake) createPull(w http.ResponseWriter, r *http.Request, body []byte) {
	var in struct {
		Title, Head, Base, Body *string
		Draft                   *bool
	}
	if !decode(w, body, &in, "/pulls/pulls#create-a-pull-request") {
		return
	}
	for _, m := range []struct {
		field string
		v     *string
	}{{"title", in.Title}, {"head", in.Head}, {"base", in.Base}} {
		if m.v == nil || *m.v == "" {
			writeInvalid(w, fieldError{Resource: "PullRequest", Field: m.field, Code: "missing_field"})
			return
		}
	}
	head := *in.Head
	if owner, branch, ok := strings.Cut(head, ":"); ok {
		if !strings.EqualFold(owner, f.owner) {
			writeInvalid(w, fieldError{Resource: "PullRequest", Field: "head", Code: "invalid"})
			return
		}
		head = branch
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.branch(*in.Base); !ok {
		writeInvalid(w, fieldError{Resource: "PullRequest", Field: "base", Code: "invalid"})
		return
	}
	if _, ok := f.branch(head); !ok {
		writeInvalid(w, fieldError{Resource: "PullRequest", Field: "head", Code: "invalid"})
		return
	}
	if head == *in.Base {
		writeInvalid(w, fieldError{Resource: "PullRequest", Code: "custom",
			Message: fmt.Sprintf("No commits between %s and %s", *in.Base, head)})
		return
	}
	for _, pr := range f.pulls {
		if pr.open && pr.head == head && pr.base == *in.Base && pr.headOwner == f.owner {
			writeInvalid(w, fieldError{Resource: "PullRequest", Code: "custom",
				Message: fmt.Sprintf("A pull request already exists for %s:%s.", f.owner, head)})
			return
		}
	}
	pr := f.addLocked(*in.Title, deref(in.Body), head, *in.Base, in.Draft != nil && *in.Draft)
	out := f.fullLocked(pr, r)
	w.Header().Set("Location", out.URL)
	writeJSON(w, http.StatusCreated, out)
}

func (f *Fake) getPull(w http.ResponseWriter, r *http.Request, id string) {
	f.withPull(w, id, "/pulls/pulls#get-a-pull-request", func(pr *pull) {
		writeJSON(w, http.StatusOK, f.fullLocked(pr, r))
	})
}

func (f *Fake) editPull(w http.ResponseWriter, r *http.Request, id string, body []byte) {
	const docs = "/pulls/pulls#update-a-pull-request"
	var in struct {
		Title, Body, State, Base *string
	}
	if !decode(w, body, &in, docs) {
		return
	}
	f.withPull(w, id, docs, func(pr *pull) {
		if in.Base != nil {
			if _, ok := f.branch(*in.Base); !ok {
				writeInvalid(w, fieldError{Resource: "PullRequest", Field: "base", Code: "invalid"})
				return
			}
		}
		now := f.now()
		if in.State != nil {
			switch {
			case *in.State == "closed" && pr.open:
				pr.open, pr.closed = false, now
			case *in.State == "open" && !pr.open && !pr.merged:
				pr.open, pr.closed = true, time.Time{}
			case *in.State != "open" && *in.State != "closed", *in.State == "open" && pr.merged:
				writeInvalid(w, fieldError{Resource: "PullRequest", Field: "state", Code: "invalid"})
				return
			}
		}
		if in.Base != nil {
			pr.base = *in.Base
		}
		if in.Title != nil {
			pr.title = *in.Title
		}
		if in.Body != nil {
			pr.body = *in.Body
		}
		pr.updated = now
		writeJSON(w, http.StatusOK, f.fullLocked(pr, r))
	})
}

// withPull runs fn holding the lock with pull request id, or answers 404.
func (f *Fake) withPull(w http.ResponseWriter, id, docs string, fn func(*pull)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pr := f.pullLocked(id)
	if pr == nil {
		writeError(w, http.StatusNotFound, "Not Found", docsBase+docs)
		return
	}
	fn(pr)
}

// decode decodes a JSON request body into v, or answers 400 as GitHub does.
func decode(w http.ResponseWriter, body []byte, v any, docs string) bool {
	if json.Unmarshal(body, v) != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON", docsBase+docs)
		return false
	}
	return true
}

func (f *Fake) addLabels(w http.ResponseWriter, id string, body []byte) {
	const docs = "/issues/labels#add-labels-to-an-issue"
	names, ok := parseLabels(body)
	if !ok {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON", docsBase+docs)
		return
	}
	if len(names) == 0 {
		writeInvalid(w, fieldError{Resource: "Label", Field: "labels", Code: "missing_field"})
		return
	}
	f.withPull(w, id, docs, func(pr *pull) {
		for _, n := range names {
			if !slices.Contains(pr.labels, n) {
				pr.labels = append(pr.labels, n)
			}
		}
		pr.updated = f.now()
		writeJSON(w, http.StatusOK, f.labelsLocked(pr))
	})
}

// parseLabels accepts the body forms GitHub documents for adding labels: an
// array of names (go-github's form), {"labels": [names]}, and either with
// {"name": ...} objects in place of names.
func parseLabels(body []byte) ([]string, bool) {
	var wrapped struct {
		Labels json.RawMessage `json:"labels"`
	}
	if err := json.Unmarshal(body, &wrapped); err == nil && wrapped.Labels != nil {
		body = wrapped.Labels
	}
	var names []string
	if json.Unmarshal(body, &names) == nil {
		return names, true
	}
	var objs []struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(body, &objs) != nil {
		return nil, false
	}
	for _, o := range objs {
		names = append(names, o.Name)
	}
	return names, true
}

func (f *Fake) listPulls(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := cmp.Or(q.Get("state"), "open")
	if state != "open" && state != "closed" && state != "all" {
		writeInvalid(w, fieldError{Resource: "PullRequest", Field: "state", Code: "invalid"})
		return
	}
	// GitHub ignores a head filter without the "user:" part.
	headOwner, head, byHead := strings.Cut(q.Get("head"), ":")
	perPage, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || perPage < 1 || perPage > PageSize {
		perPage = PageSize
	}
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page < 1 {
		page = 1
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	var match []*pull
	for _, pr := range f.pulls {
		switch {
		case state == "open" && !pr.open, state == "closed" && pr.open:
		case byHead && (!strings.EqualFold(headOwner, pr.headOwner) || head != pr.head):
		case q.Get("base") != "" && q.Get("base") != pr.base:
		default:
			match = append(match, pr)
		}
	}
	// The default order, created descending; numbers grow with creation.
	if q.Get("direction") != "asc" {
		slices.Reverse(match)
	}
	last := max((len(match)+perPage-1)/perPage, 1)
	out := []*simplePull{}
	for _, pr := range match[min((page-1)*perPage, len(match)):min(page*perPage, len(match))] {
		out = append(out, f.simpleLocked(pr, r))
	}
	if link := linkHeader(f.base(r), r.URL, page, last); link != "" {
		w.Header().Set("Link", link)
	}
	writeJSON(w, http.StatusOK, out)
}

// linkHeader renders GitHub's pagination links for page of last.
func linkHeader(base string, u *url.URL, page, last int) string {
	at := func(p int, rel string) string {
		q := u.Query()
		q.Set("page", strconv.Itoa(p))
		return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, base, u.Path, q.Encode(), rel)
	}
	var links []string
	if page > 1 {
		links = append(links, at(min(page-1, last), "prev"))
	}
	if page < last {
		links = append(links, at(page+1, "next"), at(last, "last"))
	}
	if page > 1 {
		links = append(links, at(1, "first"))
	}
	return strings.Join(links, ", ")
}

// base is the scheme and host the call came to.
func (f *Fake) base(r *http.Request) string { return "http://" + r.Host }

type errorBody struct {
	Message          string       `json:"message"`
	Errors           []fieldError `json:"errors,omitempty"`
	DocumentationURL string       `json:"documentation_url,omitempty"`
	Status           string       `json:"status,omitempty"`
}

type fieldError struct {
	Resource string `json:"resource"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

func writeError(w http.ResponseWriter, status int, msg, docs string) {
	writeJSON(w, status, errorBody{Message: msg, DocumentationURL: docs, Status: strconv.Itoa(status)})
}

func writeInvalid(w http.ResponseWriter, e fieldError) {
	writeJSON(w, http.StatusUnprocessableEntity, errorBody{
		Message: "Validation Failed", Errors: []fieldError{e},
		DocumentationURL: docsBase + "/pulls/pulls", Status: "422",
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
