package github_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/scm/github"
	"github.com/cup-dev/cup/scm/github/githubtest"
	"github.com/cup-dev/cup/scm/scmtest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	// The default client waits out rate limits; one that never waits
	// hands the rate-limit answer to the provider.
	for name, maxWait := range map[string]time.Duration{"Waiting": 0, "NotWaiting": -1} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			scmtest.Run(t, scmtest.Harness{
				New: func(t *testing.T, token string) (scm.Provider, scmtest.Fake) {
					fake := githubtest.NewFake(t, "acme", "config")
					c := scm.NewHTTPClient(scm.HTTPOptions{Token: scm.StaticToken(token), MaxWait: maxWait})
					return newProvider(t, fake.URL(), c), fake
				},
				AuthHeader: func(token string) (string, string) { return "Authorization", "Bearer " + token },
			})
		})
	}
}

func newProvider(t *testing.T, baseURL string, c *http.Client) *github.Provider {
	t.Helper()
	p, err := github.New(github.Config{BaseURL: baseURL, Owner: "acme", Repo: "config", HTTPClient: c})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// setup starts a fake and a provider over it.
func setup(t *testing.T) (*github.Provider, *githubtest.Fake) {
	t.Helper()
	fake := githubtest.NewFake(t, "acme", "config")
	return newProvider(t, fake.URL(), scm.NewHTTPClient(scm.HTTPOptions{Token: scm.StaticToken("t0ken")})), fake
}

// open opens a pull request for a new branch head into main.
func open(t *testing.T, p *github.Provider, fake *githubtest.Fake, head string) *scm.Proposal {
	t.Helper()
	fake.AddBranch(head)
	prop, err := p.Open(t.Context(), &scm.OpenRequest{Title: "T", Head: head, Base: "main"})
	if err != nil {
		t.Fatalf("Open(%s): %v", head, err)
	}
	return prop
}

// jsonEqual reports whether got and want hold the same JSON value.
func jsonEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("body %q is not JSON: %v", got, err)
		return false
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %q: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

func TestOpenCalls(t *testing.T) {
	t.Parallel()
	p, fake := setup(t)
	fake.AddBranch("cup/x")
	got, err := p.Open(t.Context(), &scm.OpenRequest{
		Title: "Title", Body: "Body", Head: "cup/x", Base: "main", Labels: []string{"cup", "flags"}, Draft: true,
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if got.ID != "1" || !strings.HasSuffix(got.URL, "/acme/config/pull/1") {
		t.Errorf("Open = {ID %q, URL %q}, want pull request 1", got.ID, got.URL)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("Open made %d calls, want 2: %+v", len(reqs), reqs)
	}
	want := []struct{ method, path, body string }{
		{"POST", "/api/v3/repos/acme/config/pulls", `{"title":"Title","body":"Body","head":"cup/x","base":"main","draft":true}`},
		// go-github sends the bare array, one of the forms GitHub documents.
		{"POST", "/api/v3/repos/acme/config/issues/1/labels", `["cup","flags"]`},
	}
	for i, w := range want {
		r := reqs[i]
		if r.Method != w.method || r.Path != w.path || !jsonEqual(t, r.Body, w.body) {
			t.Errorf("call %d = %s %s %s, want %s %s %s", i, r.Method, r.Path, r.Body, w.method, w.path, w.body)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer t0ken" {
			t.Errorf("call %d: Authorization = %q", i, got)
		}
	}
}

func TestOpenWithoutLabelsMakesOneCall(t *testing.T) {
	t.Parallel()
	p, fake := setup(t)
	open(t, p, fake, "cup/x")
	reqs := fake.Requests()
	if len(reqs) != 1 || !jsonEqual(t, reqs[0].Body, `{"title":"T","body":"","head":"cup/x","base":"main","draft":false}`) {
		t.Errorf("Open made calls %+v, want one without labels", reqs)
	}
}

func TestOpenRejectsBadRequestsWithoutCalls(t *testing.T) {
	t.Parallel()
	p, fake := setup(t)
	for _, req := range []*scm.OpenRequest{
		nil,
		{Head: "cup/x", Base: "main"},
		{Title: "T", Base: "main"},
		{Title: "T", Head: "cup/x"},
		{Title: "T", Head: "mallory:cup/x", Base: "main"},
	} {
		if _, err := p.Open(t.Context(), req); !errors.Is(err, scm.ErrInvalid) {
			t.Errorf("Open(%+v) = %v, want ErrInvalid", req, err)
		}
	}
	if reqs := fake.Requests(); len(reqs) != 0 {
		t.Errorf("made %d calls, want none", len(reqs))
	}
}

// roundTripper is an http.RoundTripper made of a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestOpenLabelFailureNamesThePullRequest(t *testing.T) {
	t.Parallel()
	fake := githubtest.NewFake(t, "acme", "config")
	fake.AddBranch("cup/x")
	base := http.DefaultTransport
	c := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, "/labels") {
			return nil, errors.New("connection reset")
		}
		return base.RoundTrip(r)
	})}
	p := newProvider(t, fake.URL(), c)
	_, err := p.Open(t.Context(), &scm.OpenRequest{Title: "T", Head: "cup/x", Base: "main", Labels: []string{"cup"}})
	if !errors.Is(err, scm.ErrUnavailable) || !strings.Contains(err.Error(), "#1 (http") {
		t.Errorf("Open = %v, want ErrUnavailable naming pull request #1 and its URL", err)
	}
}

func TestListQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		req  scm.ListRequest
		want url.Values
	}{
		{scm.ListRequest{Head: "cup/x"}, url.Values{"head": {"acme:cup/x"}, "state": {"all"}, "per_page": {"100"}}},
		{scm.ListRequest{State: scm.StateOpen}, url.Values{"state": {"open"}, "per_page": {"100"}}},
		{scm.ListRequest{State: scm.StateMerged}, url.Values{"state": {"closed"}, "per_page": {"100"}}},
		{scm.ListRequest{State: scm.StateClosed, HeadPrefix: "cup/"}, url.Values{"state": {"closed"}, "per_page": {"100"}}},
	}
	for _, tt := range tests {
		t.Run(tt.req.State.String()+tt.req.Head+tt.req.HeadPrefix, func(t *testing.T) {
			t.Parallel()
			p, fake := setup(t)
			if _, err := p.List(t.Context(), &tt.req); err != nil {
				t.Fatalf("List: %v", err)
			}
			reqs := fake.Requests()
			if len(reqs) != 1 || reqs[0].Method != "GET" || reqs[0].Path != "/api/v3/repos/acme/config/pulls" {
				t.Fatalf("List made calls %+v, want one GET .../pulls", reqs)
			}
			if got, _ := url.ParseQuery(reqs[0].Query); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("List(%+v) query = %v, want %v", tt.req, got, tt.want)
			}
		})
	}
}

func TestListFollowsPages(t *testing.T) {
	t.Parallel()
	p, fake := setup(t)
	for i := range 25 {
		open(t, p, fake, fmt.Sprintf("cup/%02d", i))
	}
	before := len(fake.Requests())
	got, err := p.List(t.Context(), &scm.ListRequest{})
	if err != nil || len(got) != 25 {
		t.Fatalf("List = %d proposals, %v; want 25", len(got), err)
	}
	var pages []string
	for _, r := range fake.Requests()[before:] {
		q, _ := url.ParseQuery(r.Query)
		pages = append(pages, q.Get("page"))
	}
	if want := []string{"", "2", "3"}; !reflect.DeepEqual(pages, want) {
		t.Errorf("List asked for pages %q, want %q", pages, want)
	}
}

func TestListIgnoresForks(t *testing.T) {
	t.Parallel()
	p, fake := setup(t)
	open(t, p, fake, "cup/x")
	fork := fake.OpenFromFork(t, "mallory", "cup/x", "main", "Looks like cup's")
	for _, req := range []scm.ListRequest{{HeadPrefix: "cup/"}, {Head: "cup/x"}} {
		got, err := p.List(t.Context(), &req)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ID == fork {
			t.Errorf("List(%+v) = %d proposals (fork is #%s), want only #1", req, len(got), fork)
		}
	}
	all, err := p.List(t.Context(), &scm.ListRequest{})
	if err != nil || len(all) != 2 {
		t.Errorf("List() = %d proposals, %v; want both", len(all), err)
	}
}

func TestSetBodyCall(t *testing.T) {
	t.Parallel()
	p, fake := setup(t)
	open(t, p, fake, "cup/x")
	if err := p.SetBody(t.Context(), "1", "new"); err != nil {
		t.Fatal(err)
	}
	r := fake.Requests()[1]
	if r.Method != "PATCH" || r.Path != "/api/v3/repos/acme/config/pulls/1" || !jsonEqual(t, r.Body, `{"body":"new"}`) {
		t.Errorf("SetBody sent %s %s %s", r.Method, r.Path, r.Body)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	c := &http.Client{}
	tests := []struct {
		name string
		cfg  github.Config
		ok   bool
	}{
		{"Valid", github.Config{Owner: "acme", Repo: "config", HTTPClient: c}, true},
		{"Enterprise", github.Config{BaseURL: "https://ghe.example.com/api/v3/", Owner: "acme", Repo: "config", HTTPClient: c}, true},
		{"NoOwner", github.Config{Repo: "config", HTTPClient: c}, false},
		{"NoRepo", github.Config{Owner: "acme", HTTPClient: c}, false},
		{"NoClient", github.Config{Owner: "acme", Repo: "config"}, false},
		{"OwnerWithSlash", github.Config{Owner: "acme/x", Repo: "config", HTTPClient: c}, false},
		{"RepoDotDot", github.Config{Owner: "acme", Repo: "..", HTTPClient: c}, false},
		{"RelativeURL", github.Config{BaseURL: "ghe.example.com/api/v3/", Owner: "acme", Repo: "config", HTTPClient: c}, false},
		{"BadScheme", github.Config{BaseURL: "ftp://ghe.example.com/", Owner: "acme", Repo: "config", HTTPClient: c}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := github.New(tt.cfg)
			if (err == nil) != tt.ok || (p != nil) != tt.ok {
				t.Errorf("New(%+v) = %v, %v; want ok=%v", tt.cfg, p, err, tt.ok)
			}
		})
	}
}

func TestBaseURL(t *testing.T) {
	t.Parallel()
	t.Run("WithoutTrailingSlash", func(t *testing.T) {
		t.Parallel()
		fake := githubtest.NewFake(t, "acme", "config")
		open(t, newProvider(t, strings.TrimSuffix(fake.URL(), "/"), &http.Client{}), fake, "cup/x")
		if got := fake.Requests()[0].Path; got != "/api/v3/repos/acme/config/pulls" {
			t.Errorf("called %s", got)
		}
	})
	t.Run("Default", func(t *testing.T) {
		t.Parallel()
		var got string
		c := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			got = r.URL.String()
			return response(r, http.StatusNotFound, nil, `{"message":"Not Found"}`), nil
		})}
		p := newProvider(t, "", c)
		if _, err := p.Get(t.Context(), "7"); !errors.Is(err, scm.ErrNotFound) {
			t.Errorf("Get = %v, want ErrNotFound", err)
		}
		if want := "https://api.github.com/repos/acme/config/pulls/7"; got != want {
			t.Errorf("called %s, want %s", got, want)
		}
	})
}

func response(r *http.Request, status int, h http.Header, body string) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{
		StatusCode: status, Status: http.StatusText(status), Header: h, Request: r,
		Body: io.NopCloser(strings.NewReader(body)),
	}
}

// TestErrors maps answers the fake does not give to sentinels.
func TestErrors(t *testing.T) {
	t.Parallel()
	reset := time.Now().Add(time.Hour).Unix()
	tests := []struct {
		name   string
		status int
		header http.Header
		body   string
		err    error // transport error instead of a response
		want   error
		text   string
	}{
		{name: "PrimaryRateLimit429", status: 429, body: `{"message":"API rate limit exceeded"}`,
			header: http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {strconv.FormatInt(reset, 10)}}, want: scm.ErrRateLimited, text: "API rate limit exceeded"},
		{name: "SecondaryRateLimit", status: 403, header: http.Header{"Retry-After": {"60"}},
			body: `{"message":"You have exceeded a secondary rate limit","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`,
			want: scm.ErrRateLimited, text: "secondary rate limit"},
		{name: "SecondaryRateLimitUnknownDocs", status: 403, header: http.Header{"Retry-After": {"60"}},
			body: `{"message":"slow down"}`, want: scm.ErrRateLimited},
		{name: "Forbidden", status: 403, header: http.Header{"X-Ratelimit-Remaining": {"4999"}},
			body: `{"message":"Resource not accessible by integration"}`, want: scm.ErrPermissionDenied, text: "Resource not accessible by integration"},
		{name: "TwoFactor", status: 401, header: http.Header{"X-Github-Otp": {"required; app"}}, body: `{"message":"Must specify two-factor authentication OTP code."}`, want: scm.ErrUnauthenticated},
		{name: "Gone", status: 410, body: `{"message":"Gone"}`, want: scm.ErrNotFound},
		{name: "BadRequest", status: 400, body: `{"message":"Problems parsing JSON"}`, want: scm.ErrInvalid, text: "Problems parsing JSON"},
		{name: "HTMLServerError", status: 500, body: `<html>oops</html>`, want: scm.ErrUnavailable, text: "HTTP 500"},
		{name: "Unavailable", status: 503, body: `{"message":"Service Unavailable"}`, want: scm.ErrUnavailable},
		{name: "BadJSON", status: 200, body: `{"number":`, want: scm.ErrUnavailable},
		{name: "TransportError", err: errors.New("connection refused"), want: scm.ErrUnavailable, text: "connection refused"},
		{name: "TransportTimeout", err: context.DeadlineExceeded, want: scm.ErrUnavailable},
		{name: "TokenSource", err: scm.ErrUnauthenticated, want: scm.ErrUnauthenticated},
		{name: "TokenSourcePermissionDenied", err: fmt.Errorf("getting a token: %w", scm.ErrPermissionDenied), want: scm.ErrPermissionDenied},
		{name: "NotModified", status: 304, want: scm.ErrUnavailable, text: "HTTP 304"},
		{name: "Unauthorized", status: 401, body: `{"message":"Bad credentials"}`, want: scm.ErrUnauthenticated, text: "Bad credentials"},
		{name: "NotFound", status: 404, body: `{"message":"Not Found"}`, want: scm.ErrNotFound},
		{name: "RequestTimeout", status: 408, want: scm.ErrInvalid, text: "HTTP 408"},
		{name: "Conflict", status: 409, body: `{"message":"Conflict"}`, want: scm.ErrInvalid},
		{name: "Unprocessable", status: 422, body: `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"No commits between main and cup/x"}]}`,
			want: scm.ErrInvalid, text: "No commits between main and cup/x"},
		{name: "TooManyRequests", status: 429, body: `{"message":"slow down"}`, want: scm.ErrRateLimited},
		{name: "TooManyRequestsRetryAfter", status: 429, header: http.Header{"Retry-After": {"60"}}, body: `{"message":"slow down"}`, want: scm.ErrRateLimited},
		{name: "UnavailableForLegalReasons", status: 451, body: `{"message":"Repository access blocked"}`, want: scm.ErrPermissionDenied},
		{name: "BadGateway", status: 502, want: scm.ErrUnavailable, text: "HTTP 502"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newProvider(t, "https://ghe.example.com/api/v3/", &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
				if tt.err != nil {
					return nil, tt.err
				}
				return response(r, tt.status, tt.header, tt.body), nil
			})})
			_, err := p.Get(t.Context(), "7")
			if !errors.Is(err, tt.want) {
				t.Errorf("Get = %v, want %v", err, tt.want)
			}
			if err != nil && (!strings.Contains(err.Error(), tt.text) || !strings.Contains(err.Error(), "#7")) {
				t.Errorf("Get = %q, want it to name #7 and say %q", err, tt.text)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Get = %v: a transport timeout is not the caller's deadline", err)
			}
		})
	}
}

func TestContextErrorsPassThrough(t *testing.T) {
	t.Parallel()
	p, fake := setup(t)
	fake.SetFault(scmtest.FaultTimeout, -1, 0)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := p.List(ctx, &scm.ListRequest{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("List = %v, want context.Canceled", err)
	}
}

// TestNoClientSideRateLimit checks that go-github's own rate-limit tracking
// is off: after an answer that spends the last of the budget, the next call
// must still reach the transport, which decides whether to wait.
func TestNoClientSideRateLimit(t *testing.T) {
	t.Parallel()
	fake := githubtest.NewFake(t, "acme", "config")
	fake.AddBranch("cup/x")
	reset := time.Now().Add(time.Hour).Unix()
	c := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		res, err := http.DefaultTransport.RoundTrip(r)
		if err == nil {
			res.Header.Set("X-RateLimit-Remaining", "0")
			res.Header.Set("X-RateLimit-Reset", strconv.FormatInt(reset, 10))
		}
		return res, err
	})}
	p := newProvider(t, fake.URL(), c)
	for range 3 {
		if _, err := p.List(t.Context(), &scm.ListRequest{}); err != nil {
			t.Fatalf("List: %v", err)
		}
	}
	if n := len(fake.Requests()); n != 3 {
		t.Errorf("the fake saw %d calls, want 3", n)
	}
}
