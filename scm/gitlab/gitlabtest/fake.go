// Package gitlabtest is an HTTP-level fake of GitLab's REST API (v4) for
// the merge request calls cup makes, for tests of scm/gitlab and of code
// that uses it.
//
// The fake answers with GitLab's own response shapes, status codes,
// pagination headers and rate-limit headers, so that GitLab's Go client
// runs against it unchanged. It serves one project and implements
// [scmtest.Fake], so the scm conformance suite can drive it.
package gitlabtest

import (
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

	"github.com/cup-dev/cup/scm/scmtest"
)

// MaxPerPage is the largest page the fake serves; GitLab's is 100. It is
// small so that a few dozen merge requests already span several pages.
const MaxPerPage = 10

// defaultPerPage is the page size when a call asks for none, as on GitLab.
const defaultPerPage = 20

// ProjectID is the numeric ID of the fake's project; calls may name the
// project by it instead of its path.
const ProjectID = 42

// rateLimit is the fake's limit of calls a minute, as RateLimit-Limit
// reports it.
const rateLimit = 2000

// Option configures a Fake.
type Option func(*Fake)

// WithPathPrefix serves the API under prefix, as a self-hosted GitLab
// installed under a relative URL does ("/gitlab": the API is at
// /gitlab/api/v4/). URL includes the prefix.
func WithPathPrefix(prefix string) Option {
	return func(f *Fake) {
		if p := strings.Trim(prefix, "/"); p != "" {
			f.prefix = "/" + p
		}
	}
}

// Fake is a GitLab serving one project on 127.0.0.1. It is safe for
// concurrent use. Calls to routes it does not serve, or for another
// project, are answered 404 and fail the test.
type Fake struct {
	t       testing.TB
	srv     *httptest.Server
	project string
	prefix  string
	// done ends calls held by FaultTimeout when the test ends.
	done chan struct{}

	mu         sync.Mutex
	branches   map[string]bool
	gitDir     string          // see LinkRepository
	mrs        []*mergeRequest // mrs[i] has IID i+1
	requests   []scmtest.Request
	fault      scmtest.Fault
	faultN     int
	retryAfter time.Duration
	faultSet   time.Time
	window     time.Time // start of the current rate-limit minute
	observed   int       // calls in the current rate-limit minute
}

var _ scmtest.Fake = (*Fake)(nil)

// NewFake starts a fake GitLab holding project ("group/project") with
// branch "main", and stops it when the test ends.
func NewFake(t testing.TB, project string, opts ...Option) *Fake {
	t.Helper()
	f := &Fake{
		t:        t,
		project:  project,
		done:     make(chan struct{}),
		branches: map[string]bool{"main": true},
	}
	for _, o := range opts {
		o(f)
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(f.done) }) // runs first: frees held calls
	return f
}

// URL returns the instance's base URL, without "api/v4/" and with a
// trailing slash: what scm/gitlab's Config.BaseURL takes.
func (f *Fake) URL() string { return f.srv.URL + f.prefix + "/" }

// AddBranch makes a branch exist.
func (f *Fake) AddBranch(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.branches[name] = true
}

// Merge marks an open merge request merged, as a maintainer would.
func (f *Fake) Merge(t testing.TB, id string) {
	t.Helper()
	f.setState(t, id, "merged")
}

// Close closes an open merge request.
func (f *Fake) Close(t testing.TB, id string) {
	t.Helper()
	f.setState(t, id, "closed")
}

func (f *Fake) setState(t testing.TB, id, state string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	mr := f.lookup(id)
	switch {
	case mr == nil:
		t.Fatalf("gitlabtest: no merge request !%s", id)
	case mr.State != "opened":
		t.Fatalf("gitlabtest: merge request !%s is %s, not opened", id, mr.State)
	}
	now := timestamp()
	mr.State, mr.UpdatedAt = state, now
	if state == "merged" {
		mr.MergedAt = &now
	} else {
		mr.ClosedAt = &now
	}
}

// SetFault makes the next n calls fail with fault (n < 0: every call
// until SetFault(scmtest.FaultNone, 0, 0)). A FaultRateLimited answer
// says the limit resets retryAfter after SetFault.
func (f *Fake) SetFault(fault scmtest.Fault, n int, retryAfter time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault, f.faultN, f.retryAfter, f.faultSet = fault, n, retryAfter, time.Now()
}

// Requests returns the calls received so far, oldest first. A Request's
// Path is the escaped path as sent, such as
// "/api/v4/projects/acme%2Fconfig/merge_requests".
func (f *Fake) Requests() []scmtest.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// mergeRequest is a merge request as GitLab's API shows it.
type mergeRequest struct {
	ID              int64      `json:"id"`
	IID             int64      `json:"iid"`
	ProjectID       int64      `json:"project_id"`
	Title           string     `json:"title"`
	Description     string     `json:"description"`
	State           string     `json:"state"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	MergedAt        *time.Time `json:"merged_at"`
	ClosedAt        *time.Time `json:"closed_at"`
	TargetBranch    string     `json:"target_branch"`
	SourceBranch    string     `json:"source_branch"`
	SourceProjectID int64      `json:"source_project_id"`
	TargetProjectID int64      `json:"target_project_id"`
	Labels          []string   `json:"labels"`
	Draft           bool       `json:"draft"`
	WorkInProgress  bool       `json:"work_in_progress"`
	DetailedStatus  string     `json:"detailed_merge_status"`
	WebURL          string     `json:"web_url"`
	References      references `json:"references"`
}

type references struct {
	Short    string `json:"short"`
	Relative string `json:"relative"`
	Full     string `json:"full"`
}

// lookup returns the merge request whose IID is id, or nil. f.mu is held.
func (f *Fake) lookup(id string) *mergeRequest {
	iid, err := strconv.Atoi(id)
	if err != nil || iid < 1 || iid > len(f.mrs) {
		return nil
	}
	return f.mrs[iid-1]
}

// found returns the merge request whose IID is id, or answers 404 as
// GitLab does and returns nil. f.mu is held.
func (f *Fake) found(w http.ResponseWriter, id string) *mergeRequest {
	mr := f.lookup(id)
	if mr == nil {
		writeJSON(w, http.StatusNotFound, message("404 Not found"))
	}
	return mr
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, scmtest.Request{
		Method: r.Method,
		Path:   r.URL.EscapedPath(),
		Query:  r.URL.RawQuery,
		Header: r.Header.Clone(),
		Body:   body,
	})
	fault := f.takeFault()
	f.mu.Unlock()

	if f.serveFault(w, r, fault) {
		return
	}
	f.setRateLimitHeaders(w.Header())

	// The project is one escaped path segment: /api/v4/projects/:id/...
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), f.prefix+"/api/v4/projects/")
	if !ok {
		f.unexpected(w, r)
		return
	}
	segs := strings.Split(rest, "/")
	if id, err := url.PathUnescape(segs[0]); err != nil || (id != f.project && id != strconv.Itoa(ProjectID)) {
		f.t.Errorf("gitlabtest: call for another project: %s %s", r.Method, r.URL.EscapedPath())
		writeJSON(w, http.StatusNotFound, message("404 Project Not Found"))
		return
	}
	switch {
	case len(segs) == 2 && segs[1] == "merge_requests" && r.Method == http.MethodGet:
		f.list(w, r)
	case len(segs) == 2 && segs[1] == "merge_requests" && r.Method == http.MethodPost:
		f.create(w, r, body)
	case len(segs) == 3 && segs[1] == "merge_requests" && r.Method == http.MethodGet:
		f.get(w, segs[2])
	case len(segs) == 3 && segs[1] == "merge_requests" && r.Method == http.MethodPut:
		f.update(w, r, segs[2], body)
	default:
		f.unexpected(w, r)
	}
}

// unexpected fails the test for a call the fake does not serve and
// answers it as GitLab answers an unknown route.
func (f *Fake) unexpected(w http.ResponseWriter, r *http.Request) {
	f.t.Errorf("gitlabtest: unexpected call %s %s", r.Method, r.URL.EscapedPath())
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "404 Not Found"})
}

// takeFault returns the fault the current call fails with. f.mu is held.
func (f *Fake) takeFault() scmtest.Fault {
	if f.fault == scmtest.FaultNone || f.faultN == 0 {
		return scmtest.FaultNone
	}
	if f.faultN > 0 {
		f.faultN--
	}
	return f.fault
}

// serveFault answers a call as GitLab does when it fails with fault, and
// reports whether it did.
func (f *Fake) serveFault(w http.ResponseWriter, r *http.Request, fault scmtest.Fault) bool {
	switch fault {
	case scmtest.FaultNone:
		return false
	case scmtest.FaultServerError:
		// What GitLab's front end answers when Puma is down.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<!DOCTYPE html>\n<html><head><title>GitLab is not responding (502)</title></head>"+
			"<body><h1>502</h1><h2>Whoops, GitLab is taking too much time to respond.</h2></body></html>\n")
	case scmtest.FaultUnauthorized:
		f.setRateLimitHeaders(w.Header())
		writeJSON(w, http.StatusUnauthorized, message("401 Unauthorized"))
	case scmtest.FaultForbidden:
		writeJSON(w, http.StatusForbidden, message("403 Forbidden"))
	case scmtest.FaultRateLimited:
		f.rateLimited(w)
	case scmtest.FaultInvalid:
		f.setRateLimitHeaders(w.Header())
		writeJSON(w, http.StatusUnprocessableEntity,
			map[string][]string{"message": {"You can't use same project/branch for source and target"}})
	case scmtest.FaultTimeout:
		select {
		case <-r.Context().Done():
		case <-f.done:
		}
	default:
		f.t.Errorf("gitlabtest: unknown fault %d", fault)
		w.WriteHeader(http.StatusInternalServerError)
	}
	return true
}

// rateLimited answers as GitLab's Rack::Attack throttle does: 429 with a
// plain-text body, Retry-After in whole seconds and RateLimit headers
// whose Remaining is 0.
func (f *Fake) rateLimited(w http.ResponseWriter) {
	f.mu.Lock()
	reset := f.faultSet.Add(f.retryAfter)
	f.mu.Unlock()
	wait := max(1, int(math.Ceil(time.Until(reset).Seconds())))
	h := w.Header()
	h.Set("RateLimit-Name", "throttle_authenticated_api")
	h.Set("RateLimit-Limit", strconv.Itoa(rateLimit))
	h.Set("RateLimit-Observed", strconv.Itoa(rateLimit))
	h.Set("RateLimit-Remaining", "0")
	h.Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("RateLimit-ResetTime", reset.UTC().Format(http.TimeFormat))
	h.Set("Retry-After", strconv.Itoa(wait))
	h.Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusTooManyRequests)
	io.WriteString(w, "Retry later\n")
}

// setRateLimitHeaders adds the RateLimit headers GitLab.com sends on API
// answers, counting calls in one-minute windows.
func (f *Fake) setRateLimitHeaders(h http.Header) {
	f.mu.Lock()
	now := time.Now()
	if now.Sub(f.window) >= time.Minute {
		f.window, f.observed = now.Truncate(time.Minute), 0
	}
	f.observed++
	observed, reset := f.observed, f.window.Add(time.Minute)
	f.mu.Unlock()
	h.Set("RateLimit-Name", "throttle_authenticated_api")
	h.Set("RateLimit-Limit", strconv.Itoa(rateLimit))
	h.Set("RateLimit-Observed", strconv.Itoa(observed))
	h.Set("RateLimit-Remaining", strconv.Itoa(max(0, rateLimit-observed)))
	h.Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("RateLimit-ResetTime", reset.UTC().Format(http.TimeFormat))
}

// get serves GET /projects/:id/merge_requests/:iid.
func (f *Fake) get(w http.ResponseWriter, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	mr := f.found(w, id)
	if mr == nil {
		return
	}
	writeJSON(w, http.StatusOK, mr)
}

// list serves GET /projects/:id/merge_requests: filters state,
// source_branch and target_branch; orders by created_at or updated_at,
// desc by default; pages by page and per_page (at most MaxPerPage) with
// GitLab's X-* pagination and Link headers.
func (f *Fake) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	if !slices.Contains([]string{"", "all", "opened", "closed", "locked", "merged"}, state) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "state does not have a valid value"})
		return
	}
	page, err1 := intParam(q, "page", 1)
	perPage, err2 := intParam(q, "per_page", defaultPerPage)
	if err1 != nil || err2 != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "page is invalid, per_page is invalid"})
		return
	}
	page, perPage = max(page, 1), min(max(perPage, 1), MaxPerPage)

	f.mu.Lock()
	var all []*mergeRequest
	for _, mr := range f.mrs {
		if (state == "" || state == "all" || mr.State == state) &&
			(q.Get("source_branch") == "" || mr.SourceBranch == q.Get("source_branch")) &&
			(q.Get("target_branch") == "" || mr.TargetBranch == q.Get("target_branch")) {
			all = append(all, mr)
		}
	}
	if q.Get("order_by") == "updated_at" {
		slices.SortStableFunc(all, func(a, b *mergeRequest) int { return a.UpdatedAt.Compare(b.UpdatedAt) })
	}
	if q.Get("sort") != "asc" {
		slices.Reverse(all)
	}
	start, end := min((page-1)*perPage, len(all)), min(page*perPage, len(all))
	out, err := json.Marshal(all[start:end])
	f.mu.Unlock()
	if err != nil {
		f.t.Errorf("gitlabtest: %v", err)
	}

	totalPages := max(1, (len(all)+perPage-1)/perPage)
	h := w.Header()
	h.Set("X-Page", strconv.Itoa(page))
	h.Set("X-Per-Page", strconv.Itoa(perPage))
	h.Set("X-Total", strconv.Itoa(len(all)))
	h.Set("X-Total-Pages", strconv.Itoa(totalPages))
	h.Set("X-Next-Page", "")
	h.Set("X-Prev-Page", "")
	var links []string
	link := func(p int, rel string) {
		q.Set("page", strconv.Itoa(p))
		q.Set("per_page", strconv.Itoa(perPage))
		u := url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: q.Encode()}
		links = append(links, fmt.Sprintf("<%s>; rel=%q", u.String(), rel))
	}
	if page > 1 {
		h.Set("X-Prev-Page", strconv.Itoa(min(page-1, totalPages)))
		link(min(page-1, totalPages), "prev")
	}
	if page < totalPages {
		h.Set("X-Next-Page", strconv.Itoa(page+1))
		link(page+1, "next")
	}
	link(1, "first")
	link(totalPages, "last")
	h.Set("Link", strings.Join(links, ", "))
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

// mrParams are the parameters of create and update calls, which GitLab
// takes as JSON or as a form.
type mrParams struct {
	Title        *string `json:"title"`
	Description  *string `json:"description"`
	SourceBranch *string `json:"source_branch"`
	TargetBranch *string `json:"target_branch"`
	Labels       *labels `json:"labels"`
	StateEvent   *string `json:"state_event"`
}

// labels are label names, given as a comma-separated string (how
// GitLab's Go client sends them) or as an array.
type labels []string

func (l *labels) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*l = splitLabels(s)
		return nil
	}
	var a []string
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	*l = splitLabels(strings.Join(a, ","))
	return nil
}

// splitLabels parses a comma-separated list as GitLab does: names
// trimmed, empty ones and duplicates dropped, sorted as GitLab shows them.
func splitLabels(s string) labels {
	l := labels{}
	for name := range strings.SplitSeq(s, ",") {
		if name = strings.TrimSpace(name); name != "" && !slices.Contains(l, name) {
			l = append(l, name)
		}
	}
	slices.Sort(l)
	return l
}

// params parses a create or update call's parameters, answering 401 for a
// call without credentials and 400 for a body GitLab would not parse.
func params(w http.ResponseWriter, r *http.Request, body []byte) (*mrParams, bool) {
	if !authenticated(r) {
		writeJSON(w, http.StatusUnauthorized, message("401 Unauthorized"))
		return nil, false
	}
	var p mrParams
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(body, &p); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "400 Bad request - the request body is not valid JSON"})
			return nil, false
		}
		return &p, true
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "400 Bad request"})
		return nil, false
	}
	for key, dst := range map[string]**string{"title": &p.Title, "description": &p.Description,
		"source_branch": &p.SourceBranch, "target_branch": &p.TargetBranch, "state_event": &p.StateEvent} {
		if form.Has(key) {
			*dst = new(form.Get(key))
		}
	}
	if form.Has("labels") {
		l := splitLabels(form.Get("labels"))
		p.Labels = &l
	}
	return &p, true
}

// create serves POST /projects/:id/merge_requests.
func (f *Fake) create(w http.ResponseWriter, r *http.Request, body []byte) {
	p, ok := params(w, r, body)
	if !ok {
		return
	}
	// Grape refuses missing parameters; the model, blank ones.
	blank := map[string][]string{}
	for _, req := range []struct {
		name string
		v    *string
	}{{"source_branch", p.SourceBranch}, {"target_branch", p.TargetBranch}, {"title", p.Title}} {
		if req.v == nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": req.name + " is missing"})
			return
		}
		if strings.TrimSpace(*req.v) == "" {
			blank[req.name] = []string{"can't be blank"}
		}
	}
	if len(blank) > 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": blank})
		return
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	src, dst := *p.SourceBranch, *p.TargetBranch
	// The checks and answers of GitLab's API::MergeRequests: 422 for the
	// same branch, 409 for a duplicate, 400 for the model's validation.
	if src == dst {
		writeJSON(w, http.StatusUnprocessableEntity,
			map[string][]string{"message": {"You can't use same project/branch for source and target"}})
		return
	}
	for _, mr := range f.mrs {
		if mr.State == "opened" && mr.SourceBranch == src && mr.TargetBranch == dst {
			writeJSON(w, http.StatusConflict, map[string][]string{"message": {
				fmt.Sprintf("Another open merge request already exists for this source branch: !%d", mr.IID)}})
			return
		}
	}
	invalid := map[string][]string{}
	if !f.hasBranch(src) {
		invalid["source_branch"] = []string{"does not exist"}
	}
	if !f.hasBranch(dst) {
		invalid["target_branch"] = []string{"does not exist"}
	}
	if len(invalid) > 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": invalid})
		return
	}

	now := timestamp()
	iid := int64(len(f.mrs) + 1)
	mr := &mergeRequest{
		ID:              1000 + iid,
		IID:             iid,
		ProjectID:       ProjectID,
		State:           "opened",
		CreatedAt:       now,
		UpdatedAt:       now,
		SourceBranch:    src,
		TargetBranch:    dst,
		SourceProjectID: ProjectID,
		TargetProjectID: ProjectID,
		Labels:          labels{},
		DetailedStatus:  "mergeable",
		WebURL:          fmt.Sprintf("%s/%s/-/merge_requests/%d", strings.TrimSuffix(f.URL(), "/"), f.project, iid),
		References: references{
			Short:    fmt.Sprintf("!%d", iid),
			Relative: fmt.Sprintf("!%d", iid),
			Full:     fmt.Sprintf("%s!%d", f.project, iid),
		},
	}
	mr.apply(p)
	f.mrs = append(f.mrs, mr)
	writeJSON(w, http.StatusCreated, mr)
}

// update serves PUT /projects/:id/merge_requests/:iid.
func (f *Fake) update(w http.ResponseWriter, r *http.Request, id string, body []byte) {
	p, ok := params(w, r, body)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	mr := f.found(w, id)
	if mr == nil {
		return
	}
	if p.Title == nil && p.Description == nil && p.TargetBranch == nil && p.Labels == nil && p.StateEvent == nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "title, description, target_branch, labels, state_event are missing, at least one parameter must be provided"})
		return
	}
	now := timestamp()
	if p.StateEvent != nil {
		switch {
		case *p.StateEvent == "close" && mr.State == "opened":
			mr.State, mr.ClosedAt = "closed", &now
		case *p.StateEvent == "reopen" && mr.State == "closed":
			mr.State, mr.ClosedAt = "opened", nil
		}
	}
	mr.apply(p)
	mr.UpdatedAt = now
	writeJSON(w, http.StatusOK, mr)
}

// apply sets the fields p gives; a title's draft marker makes the merge
// request a draft, as on GitLab.
func (mr *mergeRequest) apply(p *mrParams) {
	if p.Title != nil {
		mr.Title = *p.Title
		mr.Draft = isDraft(mr.Title)
		mr.WorkInProgress = mr.Draft
	}
	if p.Description != nil {
		mr.Description = *p.Description
	}
	if p.TargetBranch != nil {
		mr.TargetBranch = *p.TargetBranch
	}
	if p.Labels != nil {
		mr.Labels = *p.Labels
	}
}

// isDraft reports whether a title starts with one of GitLab's draft
// markers, in any case.
func isDraft(title string) bool {
	t := strings.ToLower(strings.TrimLeft(title, " "))
	return strings.HasPrefix(t, "draft:") || strings.HasPrefix(t, "[draft]") || strings.HasPrefix(t, "(draft)")
}

// authenticated reports whether a call carries any of the credentials
// GitLab accepts; writes need them.
func authenticated(r *http.Request) bool {
	return r.Header.Get("Authorization") != "" || r.Header.Get("PRIVATE-TOKEN") != "" || r.Header.Get("JOB-TOKEN") != ""
}

func intParam(q url.Values, name string, def int) (int, error) {
	if !q.Has(name) {
		return def, nil
	}
	return strconv.Atoi(q.Get(name))
}

func message(m string) map[string]string { return map[string]string{"message": m} }

// timestamp is the current time at GitLab's millisecond precision.
func timestamp() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
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
