package gitlab_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/scm/gitlab"
	"github.com/cup-dev/cup/scm/gitlab/gitlabtest"
	"github.com/cup-dev/cup/scm/scmtest"
)

const (
	project = "acme/config"
	token   = "glpat-s3cr3t-t0ken"
	mrsPath = "/api/v4/projects/acme%2Fconfig/merge_requests"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newProvider returns a provider over fake authenticating with token.
func newProvider(t *testing.T, fake *gitlabtest.Fake, project string) *gitlab.Provider {
	t.Helper()
	p, err := gitlab.New(gitlab.Config{
		BaseURL:    fake.URL(),
		Project:    project,
		HTTPClient: scm.NewHTTPClient(scm.HTTPOptions{Token: scm.StaticToken(token)}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// openOne starts a fake holding one open merge request, !1 from cup/x
// into main, and returns it with a provider over it.
func openOne(t *testing.T) (*gitlabtest.Fake, *gitlab.Provider) {
	t.Helper()
	fake := gitlabtest.NewFake(t, project)
	fake.AddBranch("cup/x")
	p := newProvider(t, fake, project)
	if _, err := p.Open(t.Context(), &scm.OpenRequest{Title: "t", Head: "cup/x", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	return fake, p
}

// calls returns the fake's calls other than those before skip.
func calls(fake *gitlabtest.Fake, skip int) []scmtest.Request {
	return fake.Requests()[skip:]
}

func TestNew(t *testing.T) {
	t.Parallel()
	client := scm.NewHTTPClient(scm.HTTPOptions{})
	tests := []struct {
		name    string
		cfg     gitlab.Config
		wantErr string
	}{
		{"gitlab.com", gitlab.Config{Project: project, HTTPClient: client}, ""},
		{"self-hosted", gitlab.Config{BaseURL: "https://git.example.com", Project: project, HTTPClient: client}, ""},
		{"path prefix", gitlab.Config{BaseURL: "https://example.com/gitlab/", Project: "g/sub/p", HTTPClient: client}, ""},
		{"numeric project", gitlab.Config{Project: "42", HTTPClient: client}, ""},
		{"no client", gitlab.Config{Project: project}, "HTTPClient is required"},
		{"no project", gitlab.Config{HTTPClient: client}, "Project is required"},
		{"slash project", gitlab.Config{Project: "/acme/config", HTTPClient: client}, "not a project path"},
		{"blank project", gitlab.Config{Project: " acme/config", HTTPClient: client}, "not a project path"},
		{"encoded project", gitlab.Config{Project: "acme%2Fconfig", HTTPClient: client}, "URL-encoded"},
		{"no scheme", gitlab.Config{BaseURL: "git.example.com", Project: project, HTTPClient: client}, "not an http or https URL"},
		{"ftp", gitlab.Config{BaseURL: "ftp://git.example.com/", Project: project, HTTPClient: client}, "not an http or https URL"},
		{"query", gitlab.Config{BaseURL: "https://git.example.com/?x=1", Project: project, HTTPClient: client}, "query"},
		{"credentials", gitlab.Config{BaseURL: "https://bot:hunter2@git.example.com/", Project: project, HTTPClient: client}, "carries credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := gitlab.New(tt.cfg)
			if tt.wantErr == "" {
				if err != nil || p == nil {
					t.Fatalf("New() = %v, %v; want a provider", p, err)
				}
				if p.Name() != "gitlab" {
					t.Errorf("Name() = %q, want gitlab", p.Name())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New() error = %v, want one containing %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("New() error %q shows the password", err)
			}
		})
	}
}

func TestOpenCall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		req       scm.OpenRequest
		wantBody  map[string]any
		wantTitle string
	}{
		{
			name: "labels",
			req:  scm.OpenRequest{Title: "Add flag", Body: "cup change", Head: "cup/x", Base: "main", Labels: []string{"cup", "area/flags"}},
			wantBody: map[string]any{"title": "Add flag", "description": "cup change", "source_branch": "cup/x",
				"target_branch": "main", "labels": "cup,area/flags"},
		},
		{
			name: "draft without labels",
			req:  scm.OpenRequest{Title: "Add flag", Body: "cup change", Head: "cup/x", Base: "main", Draft: true},
			wantBody: map[string]any{"title": "Draft: Add flag", "description": "cup change", "source_branch": "cup/x",
				"target_branch": "main"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := gitlabtest.NewFake(t, project)
			fake.AddBranch("cup/x")
			p := newProvider(t, fake, project)

			got, err := p.Open(t.Context(), &tt.req)
			if err != nil {
				t.Fatal(err)
			}
			reqs := fake.Requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d calls, want 1: %+v", len(reqs), reqs)
			}
			r := reqs[0]
			if r.Method != http.MethodPost || r.Path != mrsPath || r.Query != "" {
				t.Errorf("call = %s %s?%s, want POST %s", r.Method, r.Path, r.Query, mrsPath)
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			assertAuth(t, r)
			var body map[string]any
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatalf("body %s: %v", r.Body, err)
			}
			if !equalJSON(body, tt.wantBody) {
				t.Errorf("body = %s, want %v", r.Body, tt.wantBody)
			}

			want := &scm.Proposal{ID: "1", URL: fake.URL() + project + "/-/merge_requests/1", Title: tt.req.Title,
				Body: tt.req.Body, Head: "cup/x", Base: "main", State: scm.StateOpen, Draft: tt.req.Draft}
			if len(tt.req.Labels) > 0 {
				want.Labels = []string{"area/flags", "cup"} // GitLab sorts them.
			}
			assertProposal(t, got, want)
			if got.CreatedAt.IsZero() || got.UpdatedAt.IsZero() {
				t.Errorf("times = %v, %v; want them set", got.CreatedAt, got.UpdatedAt)
			}

			again, err := p.Get(t.Context(), "1")
			if err != nil {
				t.Fatal(err)
			}
			assertProposal(t, again, want)
		})
	}
}

func TestListCalls(t *testing.T) {
	t.Parallel()
	fake := gitlabtest.NewFake(t, project)
	p := newProvider(t, fake, project)
	for _, head := range []string{"cup/x", "cup/y", "feature"} {
		fake.AddBranch(head)
		if _, err := p.Open(t.Context(), &scm.OpenRequest{Title: head, Head: head, Base: "main"}); err != nil {
			t.Fatal(err)
		}
	}
	fake.Merge(t, "2")

	tests := []struct {
		name      string
		req       scm.ListRequest
		wantQuery url.Values
		wantIDs   []string
	}{
		{"head", scm.ListRequest{Head: "cup/x"}, url.Values{"source_branch": {"cup/x"}, "state": {"all"}}, []string{"1"}},
		{"prefix", scm.ListRequest{HeadPrefix: "cup/"}, url.Values{"state": {"all"}}, []string{"2", "1"}},
		{"open", scm.ListRequest{State: scm.StateOpen}, url.Values{"state": {"opened"}}, []string{"3", "1"}},
		{"merged", scm.ListRequest{State: scm.StateMerged}, url.Values{"state": {"merged"}}, []string{"2"}},
		{"closed", scm.ListRequest{State: scm.StateClosed}, url.Values{"state": {"closed"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			skip := len(fake.Requests())
			got, err := p.List(t.Context(), &tt.req)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, pr := range got {
				ids = append(ids, pr.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tt.wantIDs, ",") {
				t.Errorf("IDs = %v, want %v", ids, tt.wantIDs)
			}
			reqs := calls(fake, skip)
			if len(reqs) != 1 || reqs[0].Method != http.MethodGet || reqs[0].Path != mrsPath {
				t.Fatalf("calls = %+v, want one GET %s", reqs, mrsPath)
			}
			q, _ := url.ParseQuery(reqs[0].Query)
			want := url.Values{"order_by": {"created_at"}, "sort": {"desc"}, "page": {"1"}, "per_page": {"100"}}
			for k, v := range tt.wantQuery {
				want[k] = v
			}
			if q.Encode() != want.Encode() {
				t.Errorf("query = %s, want %s", q.Encode(), want.Encode())
			}
		})
	}
}

// TestListNilRequest checks that a nil ListRequest selects every merge
// request, as an empty one does.
func TestListNilRequest(t *testing.T) {
	t.Parallel()
	_, p := openOne(t)
	got, err := p.List(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != "1" {
		t.Errorf("List(nil) = %v, want !1", got)
	}
}

func TestListPages(t *testing.T) {
	t.Parallel()
	fake := gitlabtest.NewFake(t, project)
	p := newProvider(t, fake, project)
	const n = 2*gitlabtest.MaxPerPage + 3
	for i := range n {
		head := "cup/" + strconv.Itoa(i)
		fake.AddBranch(head)
		if _, err := p.Open(t.Context(), &scm.OpenRequest{Title: head, Head: head, Base: "main"}); err != nil {
			t.Fatal(err)
		}
	}
	skip := len(fake.Requests())
	got, err := p.List(t.Context(), &scm.ListRequest{HeadPrefix: "cup/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("List returned %d proposals, want %d", len(got), n)
	}
	for i, pr := range got {
		if want := strconv.Itoa(n - i); pr.ID != want {
			t.Fatalf("proposal %d is !%s, want !%s (newest first)", i, pr.ID, want)
		}
	}
	reqs := calls(fake, skip)
	if len(reqs) != 3 {
		t.Fatalf("got %d page calls, want 3", len(reqs))
	}
	for i, r := range reqs {
		q, _ := url.ParseQuery(r.Query)
		if q.Get("page") != strconv.Itoa(i+1) {
			t.Errorf("call %d asked for page %q, want %d", i, q.Get("page"), i+1)
		}
	}
}

func TestSetBodyCall(t *testing.T) {
	t.Parallel()
	fake, p := openOne(t)
	skip := len(fake.Requests())
	if err := p.SetBody(t.Context(), "1", "new body"); err != nil {
		t.Fatal(err)
	}
	reqs := calls(fake, skip)
	if len(reqs) != 1 || reqs[0].Method != http.MethodPut || reqs[0].Path != mrsPath+"/1" {
		t.Fatalf("calls = %+v, want one PUT %s/1", reqs, mrsPath)
	}
	if string(reqs[0].Body) != `{"description":"new body"}` {
		t.Errorf("body = %s, want only the description", reqs[0].Body)
	}
	got, err := p.Get(t.Context(), "1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Body != "new body" {
		t.Errorf("Body = %q, want %q", got.Body, "new body")
	}
}

// TestProjects checks the ways to name a project and to reach an
// instance.
func TestProjects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		fakeProject string
		opts        []gitlabtest.Option
		project     string
		wantPath    string
	}{
		{"path", project, nil, project, mrsPath},
		{"numeric ID", project, nil, strconv.Itoa(gitlabtest.ProjectID), "/api/v4/projects/42/merge_requests"},
		{"subgroup and dot", "acme/infra/config.d", nil, "acme/infra/config.d", "/api/v4/projects/acme%2Finfra%2Fconfig%2Ed/merge_requests"},
		{"path prefix", project, []gitlabtest.Option{gitlabtest.WithPathPrefix("/gitlab/")}, project, "/gitlab" + mrsPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := gitlabtest.NewFake(t, tt.fakeProject, tt.opts...)
			fake.AddBranch("cup/x")
			p := newProvider(t, fake, tt.project)
			if _, err := p.Open(t.Context(), &scm.OpenRequest{Title: "t", Head: "cup/x", Base: "main"}); err != nil {
				t.Fatal(err)
			}
			got, err := p.List(t.Context(), &scm.ListRequest{Head: "cup/x"})
			if err != nil || len(got) != 1 {
				t.Fatalf("List() = %v, %v; want one proposal", got, err)
			}
			for _, r := range fake.Requests() {
				if r.Path != tt.wantPath {
					t.Errorf("call path = %s, want %s", r.Path, tt.wantPath)
				}
			}
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		fault   scmtest.Fault
		call    func(ctx context.Context, p scm.Provider) error
		want    error
		wantMsg string
	}{
		{"duplicate", scmtest.FaultNone, func(ctx context.Context, p scm.Provider) error {
			_, err := p.Open(ctx, &scm.OpenRequest{Title: "again", Head: "cup/x", Base: "main"})
			return err
		}, scm.ErrInvalid, "HTTP 409: Another open merge request already exists for this source branch: !1"},
		{"unknown head", scmtest.FaultNone, func(ctx context.Context, p scm.Provider) error {
			_, err := p.Open(ctx, &scm.OpenRequest{Title: "t", Head: "cup/missing", Base: "main"})
			return err
		}, scm.ErrInvalid, "HTTP 400: source_branch does not exist"},
		{"same branch", scmtest.FaultNone, func(ctx context.Context, p scm.Provider) error {
			_, err := p.Open(ctx, &scm.OpenRequest{Title: "t", Head: "main", Base: "main"})
			return err
		}, scm.ErrInvalid, "HTTP 422: You can't use same project/branch for source and target"},
		{"comma in label", scmtest.FaultNone, func(ctx context.Context, p scm.Provider) error {
			_, err := p.Open(ctx, &scm.OpenRequest{Title: "t", Head: "cup/y", Base: "main", Labels: []string{"a,b"}})
			return err
		}, scm.ErrInvalid, "comma"},
		{"unknown ID", scmtest.FaultNone, func(ctx context.Context, p scm.Provider) error {
			_, err := p.Get(ctx, "99")
			return err
		}, scm.ErrNotFound, "merge request !99"},
		{"unknown ID set body", scmtest.FaultNone, func(ctx context.Context, p scm.Provider) error {
			return p.SetBody(ctx, "99", "b")
		}, scm.ErrNotFound, "merge request !99"},
		{"bad ID", scmtest.FaultNone, func(ctx context.Context, p scm.Provider) error {
			_, err := p.Get(ctx, "!1")
			return err
		}, scm.ErrInvalid, "not a positive number"},
		{"no open request", scmtest.FaultNone, func(ctx context.Context, p scm.Provider) error {
			_, err := p.Open(ctx, nil)
			return err
		}, scm.ErrInvalid, "no request"},
		{"bad state", scmtest.FaultNone, func(ctx context.Context, p scm.Provider) error {
			_, err := p.List(ctx, &scm.ListRequest{State: 9})
			return err
		}, scm.ErrInvalid, "unknown proposal state"},
		{"server error", scmtest.FaultServerError, getOne, scm.ErrUnavailable, "HTTP 502: Bad Gateway"},
		{"unauthorized", scmtest.FaultUnauthorized, getOne, scm.ErrUnauthenticated, "HTTP 401: 401 Unauthorized"},
		{"forbidden", scmtest.FaultForbidden, getOne, scm.ErrPermissionDenied, "HTTP 403: 403 Forbidden"},
		{"invalid", scmtest.FaultInvalid, getOne, scm.ErrInvalid, "HTTP 422: You can't use same project/branch for source and target"},
		// A limit resetting in an hour is longer than the transport waits.
		{"rate limited", scmtest.FaultRateLimited, getOne, scm.ErrRateLimited, "HTTP 429: Retry later"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake, p := openOne(t)
			skip := len(fake.Requests())
			fake.SetFault(tt.fault, -1, time.Hour)
			err := tt.call(t.Context(), p)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error = %q, want it to contain %q", err, tt.wantMsg)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("error %q shows the token", err)
			}
			// client-go must not retry: one call, or none for
			// arguments refused before calling.
			if n := len(calls(fake, skip)); n > 1 {
				t.Errorf("got %d calls, want at most 1 (no retries)", n)
			}
		})
	}
}

func getOne(ctx context.Context, p scm.Provider) error {
	_, err := p.Get(ctx, "1")
	return err
}

func TestContextAndTransportErrors(t *testing.T) {
	t.Parallel()
	t.Run("canceled", func(t *testing.T) {
		t.Parallel()
		fake := gitlabtest.NewFake(t, project)
		p := newProvider(t, fake, project)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := p.List(ctx, &scm.ListRequest{})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		fake := gitlabtest.NewFake(t, project)
		p := newProvider(t, fake, project)
		fake.SetFault(scmtest.FaultTimeout, -1, 0)
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, err := p.Get(ctx, "1")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error = %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("transport timeout", func(t *testing.T) {
		t.Parallel()
		fake := gitlabtest.NewFake(t, project)
		fake.SetFault(scmtest.FaultTimeout, -1, 0)
		p, err := gitlab.New(gitlab.Config{BaseURL: fake.URL(), Project: project,
			HTTPClient: scm.NewHTTPClient(scm.HTTPOptions{Timeout: 100 * time.Millisecond})})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Get(t.Context(), "1")
		if !errors.Is(err, scm.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error = %v, want ErrUnavailable and not the caller's deadline", err)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		p, err := gitlab.New(gitlab.Config{BaseURL: srv.URL, Project: project,
			HTTPClient: scm.NewHTTPClient(scm.HTTPOptions{Token: scm.StaticToken(token)})})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Get(t.Context(), "1")
		if !errors.Is(err, scm.ErrUnavailable) {
			t.Errorf("error = %v, want ErrUnavailable", err)
		}
		if strings.Contains(err.Error(), token) {
			t.Errorf("error %q shows the token", err)
		}
	})
	t.Run("token source fails", func(t *testing.T) {
		t.Parallel()
		fake := gitlabtest.NewFake(t, project)
		p, err := gitlab.New(gitlab.Config{BaseURL: fake.URL(), Project: project,
			HTTPClient: scm.NewHTTPClient(scm.HTTPOptions{Token: failingToken{}})})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Get(t.Context(), "1")
		if !errors.Is(err, scm.ErrUnauthenticated) {
			t.Errorf("error = %v, want ErrUnauthenticated", err)
		}
	})
}

type failingToken struct{}

func (failingToken) Token(context.Context) (string, error) {
	return "", errors.New("token file missing")
}

// assertAuth checks a call carries the transport's credentials and no
// others of client-go's making.
func assertAuth(t *testing.T, r scmtest.Request) {
	t.Helper()
	if got := r.Header.Values("Authorization"); len(got) != 1 || got[0] != "Bearer "+token {
		t.Errorf("Authorization = %q, want one Bearer token", got)
	}
	for _, h := range []string{"Private-Token", "Job-Token"} {
		if v := r.Header.Get(h); v != "" {
			t.Errorf("%s header sent: client-go added credentials", h)
		}
	}
}

func assertProposal(t *testing.T, got, want *scm.Proposal) {
	t.Helper()
	g, w := *got, *want
	g.CreatedAt, g.UpdatedAt = time.Time{}, time.Time{}
	if g.ID != w.ID || g.URL != w.URL || g.Title != w.Title || g.Body != w.Body || g.Head != w.Head ||
		g.Base != w.Base || g.State != w.State || g.Draft != w.Draft || strings.Join(g.Labels, ",") != strings.Join(w.Labels, ",") {
		t.Errorf("proposal = %+v\nwant       %+v", g, w)
	}
}

func equalJSON(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
