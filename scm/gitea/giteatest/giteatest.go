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
	"io"
	"math"
	"net/http"
	"net/http/httptest"
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
