package gitea_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/scm/gitea"
	"github.com/cup-dev/cup/scm/gitea/giteatest"
	"github.com/cup-dev/cup/scm/scmtest"
)

const token = "s3cr3t-gitea-token"

// newProvider starts a fake holding acme/config and returns a provider over
// it that authenticates with token.
func newProvider(t *testing.T, client *http.Client) (*gitea.Provider, *giteatest.Fake) {
	t.Helper()
	fake := giteatest.NewFake(t, "acme", "config")
	if client == nil {
		client = scm.NewHTTPClient(scm.HTTPOptions{Token: scm.StaticToken(token)})
	}
	p, err := gitea.New(gitea.Config{BaseURL: fake.URL(), Owner: "acme", Repo: "config", HTTPClient: client})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		for _, r := range fake.Requests() {
			if r.Path == "/api/v1/version" {
				t.Errorf("the provider asked for the server version: %s %s", r.Method, r.Path)
			}
			if got := r.Header.Get("Authorization"); got != "Bearer "+token {
				t.Errorf("%s %s: Authorization %q, want the Bearer token", r.Method, r.Path, got)
			}
		}
	})
	return p, fake
}

// newWithPull is newProvider with pull request 1 open from cup/a into main.
func newWithPull(t *testing.T, client *http.Client) (*gitea.Provider, *giteatest.Fake) {
	t.Helper()
	p, fake := newProvider(t, client)
	fake.AddBranch("cup/a")
	if _, err := p.Open(t.Context(), &scm.OpenRequest{Title: "T", Body: "old", Head: "cup/a", Base: "main"}); err != nil {
		t.Fatalf("Open: %v", err)
	}
	return p, fake
}

// call is the part of a recorded request the tests compare.
type call struct {
	Method, Path, Query string
	Body                map[string]any
}

func calls(t *testing.T, fake *giteatest.Fake) []call {
	t.Helper()
	var out []call
	for _, r := range fake.Requests() {
		c := call{Method: r.Method, Path: r.Path, Query: r.Query}
		if len(r.Body) > 0 {
			if err := json.Unmarshal(r.Body, &c.Body); err != nil {
				t.Fatalf("%s %s: body %q is not a JSON object: %v", r.Method, r.Path, r.Body, err)
			}
		}
		out = append(out, c)
	}
	return out
}

// checkCall compares a call's method, path, query and the given body
// fields; body fields not in want must be JSON zero values or absent.
func checkCall(t *testing.T, got call, method, path, query string, want map[string]any) {
	t.Helper()
	if got.Method != method || got.Path != path || got.Query != query {
		t.Errorf("call = %s %s?%s, want %s %s?%s", got.Method, got.Path, got.Query, method, path, query)
	}
	for k, v := range got.Body {
		w, ok := want[k]
		if !ok {
			if !isZero(v) {
				t.Errorf("%s %s: body field %q = %#v, want it zero or absent", method, path, k, v)
			}
			continue
		}
		if fmt.Sprint(v) != fmt.Sprint(w) {
			t.Errorf("%s %s: body field %q = %#v, want %#v", method, path, k, v, w)
		}
	}
	for k := range want {
		if _, ok := got.Body[k]; !ok {
			t.Errorf("%s %s: body lacks field %q", method, path, k)
		}
	}
}

func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case float64:
		return v == 0
	case bool:
		return !v
	case []any:
		return len(v) == 0
	}
	return false
}

func TestNew(t *testing.T) {
	t.Parallel()
	client := scm.NewHTTPClient(scm.HTTPOptions{Token: scm.StaticToken(token)})
	tests := []struct {
		name    string
		cfg     gitea.Config
		wantErr string
	}{
		{"no base URL", gitea.Config{Owner: "acme", Repo: "config", HTTPClient: client}, "BaseURL is required"},
		{"relative base URL", gitea.Config{BaseURL: "gitea.example.com", Owner: "acme", Repo: "config", HTTPClient: client}, "absolute"},
		{"other scheme", gitea.Config{BaseURL: "ftp://gitea.example.com/", Owner: "acme", Repo: "config", HTTPClient: client}, "absolute"},
		{"credentials in URL", gitea.Config{BaseURL: "https://bob:" + token + "@gitea.example.com/", Owner: "acme", Repo: "config", HTTPClient: client}, "credentials"},
		{"query", gitea.Config{BaseURL: "https://gitea.example.com/?a=b", Owner: "acme", Repo: "config", HTTPClient: client}, "query"},
		{"no owner", gitea.Config{BaseURL: "https://gitea.example.com/", Repo: "config", HTTPClient: client}, "Owner and Repo"},
		{"no repo", gitea.Config{BaseURL: "https://gitea.example.com/", Owner: "acme", HTTPClient: client}, "Owner and Repo"},
		{"no client", gitea.Config{BaseURL: "https://gitea.example.com/", Owner: "acme", Repo: "config"}, "HTTPClient is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := gitea.New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New = %v, %v; want an error containing %q", p, err, tt.wantErr)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("error %q contains the token", err)
			}
		})
	}
}

func TestNewDoesNoIO(t *testing.T) {
	t.Parallel()
	fake := giteatest.NewFake(t, "acme", "config")
	p, err := gitea.New(gitea.Config{BaseURL: fake.URL(), Owner: "acme", Repo: "config",
		HTTPClient: scm.NewHTTPClient(scm.HTTPOptions{Token: scm.StaticToken(token)})})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "gitea" {
		t.Errorf("Name = %q, want gitea", p.Name())
	}
	if got := fake.Requests(); len(got) != 0 {
		t.Errorf("New made %d calls, want none: %+v", len(got), got)
	}
}

func TestOpenCalls(t *testing.T) {
	t.Parallel()
	p, fake := newProvider(t, nil)
	fake.AddBranch("cup/a")
	fake.AddBranch("cup/b")
	cupID := fake.AddLabel("cup")

	got, err := p.Open(t.Context(), &scm.OpenRequest{
		Title: "Update flags", Body: "Changes:\n- flags/a", Head: "cup/a", Base: "main",
		Labels: []string{"cup", "needs-review", "cup"},
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	want := &scm.Proposal{ID: "1", Title: "Update flags", Body: "Changes:\n- flags/a", Head: "cup/a", Base: "main",
		State: scm.StateOpen, Labels: []string{"cup", "needs-review"}}
	checkProposal(t, got, want)
	if want := fake.URL() + "acme/config/pulls/1"; got.URL != want {
		t.Errorf("URL = %q, want %q", got.URL, want)
	}

	// A missing label makes Open look again under a lock before creating
	// it, so that concurrent Opens create it once.
	c := calls(t, fake)
	if len(c) != 4 {
		t.Fatalf("Open made %d calls, want 4: %+v", len(c), c)
	}
	checkCall(t, c[0], "GET", "/api/v1/repos/acme/config/labels", "limit=50&page=1", nil)
	checkCall(t, c[1], "GET", "/api/v1/repos/acme/config/labels", "limit=50&page=1", nil)
	checkCall(t, c[2], "POST", "/api/v1/repos/acme/config/labels", "",
		map[string]any{"name": "needs-review", "color": gitea.LabelColor})
	checkCall(t, c[3], "POST", "/api/v1/repos/acme/config/pulls", "", map[string]any{
		"title": "Update flags", "body": "Changes:\n- flags/a", "head": "cup/a", "base": "main",
		"labels": []any{float64(cupID), float64(cupID + 1)},
	})

	// The second Open finds both labels and creates none.
	if _, err := p.Open(t.Context(), &scm.OpenRequest{
		Title: "More", Head: "cup/b", Base: "main", Labels: []string{"needs-review", "cup"},
	}); err != nil {
		t.Fatalf("second Open: %v", err)
	}
	c = calls(t, fake)[4:]
	if len(c) != 2 {
		t.Fatalf("second Open made %d calls, want 2: %+v", len(c), c)
	}
	checkCall(t, c[0], "GET", "/api/v1/repos/acme/config/labels", "limit=50&page=1", nil)
	checkCall(t, c[1], "POST", "/api/v1/repos/acme/config/pulls", "", map[string]any{
		"title": "More", "head": "cup/b", "base": "main",
		"labels": []any{float64(cupID + 1), float64(cupID)},
	})
}

func TestOpenWithoutLabelsListsNone(t *testing.T) {
	t.Parallel()
	_, fake := newWithPull(t, nil)
	c := calls(t, fake)
	if len(c) != 1 {
		t.Fatalf("Open made %d calls, want 1: %+v", len(c), c)
	}
	checkCall(t, c[0], "POST", "/api/v1/repos/acme/config/pulls", "",
		map[string]any{"title": "T", "body": "old", "head": "cup/a", "base": "main"})
}

func TestLabelsPaged(t *testing.T) {
	t.Parallel()
	p, fake := newProvider(t, nil)
	fake.AddBranch("cup/a")
	for i := range 2*giteatest.MaxPageSize + 3 {
		fake.AddLabel(fmt.Sprintf("l%d", i))
	}
	got, err := p.Open(t.Context(), &scm.OpenRequest{Title: "T", Head: "cup/a", Base: "main", Labels: []string{"l22"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Labels, []string{"l22"}) {
		t.Errorf("Labels = %q, want [l22]", got.Labels)
	}
	var pages []string
	for _, c := range calls(t, fake) {
		if c.Method == "POST" && c.Path == "/api/v1/repos/acme/config/labels" {
			t.Errorf("Open created label %v, which exists on page 3", c.Body["name"])
		}
		if c.Method == "GET" {
			pages = append(pages, c.Query)
		}
	}
	if want := []string{"limit=50&page=1", "limit=50&page=2", "limit=50&page=3"}; !slices.Equal(pages, want) {
		t.Errorf("label pages = %q, want %q", pages, want)
	}
}

func TestDraft(t *testing.T) {
	t.Parallel()
	p, fake := newProvider(t, nil)
	fake.AddBranch("cup/a")
	got, err := p.Open(t.Context(), &scm.OpenRequest{Title: "Try this", Head: "cup/a", Base: "main", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	c := calls(t, fake)
	checkCall(t, c[len(c)-1], "POST", "/api/v1/repos/acme/config/pulls", "",
		map[string]any{"title": "WIP: Try this", "head": "cup/a", "base": "main"})
	want := &scm.Proposal{ID: "1", Title: "Try this", Head: "cup/a", Base: "main", State: scm.StateOpen, Draft: true}
	checkProposal(t, got, want)
	got, err = p.Get(t.Context(), "1")
	if err != nil {
		t.Fatal(err)
	}
	checkProposal(t, got, want)
}

func TestHeadOfDeletedBranch(t *testing.T) {
	t.Parallel()
	p, fake := newWithPull(t, nil)
	fake.Merge(t, "1")
	fake.DeleteBranch("cup/a")
	got, err := p.Get(t.Context(), "1")
	if err != nil {
		t.Fatal(err)
	}
	checkProposal(t, got, &scm.Proposal{ID: "1", Title: "T", Body: "old", Head: "cup/a", Base: "main", State: scm.StateMerged})
	list, err := p.List(t.Context(), &scm.ListRequest{Head: "cup/a"})
	if err != nil || len(list) != 1 {
		t.Fatalf("List(Head: cup/a) = %d proposals, %v; want 1", len(list), err)
	}
}

func TestListCalls(t *testing.T) {
	t.Parallel()
	p, fake := newProvider(t, nil)
	const n = 23
	for i := 1; i <= n; i++ {
		head := fmt.Sprintf("cup/%02d", i)
		if i%5 == 0 {
			head = fmt.Sprintf("feature/%02d", i)
		}
		fake.AddBranch(head)
		if _, err := p.Open(t.Context(), &scm.OpenRequest{Title: head, Head: head, Base: "main"}); err != nil {
			t.Fatal(err)
		}
	}
	fake.Merge(t, "2")
	fake.Close(t, "3")
	before := len(fake.Requests())

	// The fake's pages hold 10: 23 pull requests take 3 pages, the 21
	// open ones 3 and the 2 closed ones 1.
	tests := []struct {
		req   scm.ListRequest
		state string
		pages int
		want  []string
	}{
		{scm.ListRequest{}, "all", 3, ids(n, func(int) bool { return true })},
		{scm.ListRequest{State: scm.StateOpen}, "open", 3, ids(n, func(i int) bool { return i != 2 && i != 3 })},
		{scm.ListRequest{State: scm.StateMerged}, "closed", 1, []string{"2"}},
		{scm.ListRequest{State: scm.StateClosed}, "closed", 1, []string{"3"}},
		{scm.ListRequest{HeadPrefix: "cup/"}, "all", 3, ids(n, func(i int) bool { return i%5 != 0 })},
		{scm.ListRequest{Head: "feature/10"}, "all", 3, []string{"10"}},
		{scm.ListRequest{Head: "cup/02", State: scm.StateOpen}, "open", 3, nil},
	}
	for _, tt := range tests {
		got, err := p.List(t.Context(), &tt.req)
		if err != nil {
			t.Fatalf("List(%+v): %v", tt.req, err)
		}
		var gotIDs []string
		for _, prop := range got {
			gotIDs = append(gotIDs, prop.ID)
		}
		if !slices.Equal(gotIDs, tt.want) {
			t.Errorf("List(%+v) = %q, want %q", tt.req, gotIDs, tt.want)
		}
		c := calls(t, fake)[before:]
		before += len(c)
		var queries []string
		for _, c := range c {
			if c.Method != "GET" || c.Path != "/api/v1/repos/acme/config/pulls" {
				t.Errorf("List made call %s %s", c.Method, c.Path)
			}
			queries = append(queries, c.Query)
		}
		var want []string
		for page := 1; page <= tt.pages; page++ {
			want = append(want, fmt.Sprintf("limit=50&page=%d&state=%s", page, tt.state))
		}
		if !slices.Equal(queries, want) {
			t.Errorf("List(%+v) queries = %q, want %q", tt.req, queries, want)
		}
	}
}

// ids returns the IDs from n down to 1 that keep selects.
func ids(n int, keep func(int) bool) []string {
	var out []string
	for i := n; i >= 1; i-- {
		if keep(i) {
			out = append(out, fmt.Sprint(i))
		}
	}
	return out
}

func TestSetBodyCalls(t *testing.T) {
	t.Parallel()
	p, fake := newWithPull(t, nil)
	if err := p.SetBody(t.Context(), "1", "new body"); err != nil {
		t.Fatal(err)
	}
	c := calls(t, fake)
	checkCall(t, c[len(c)-1], "PATCH", "/api/v1/repos/acme/config/pulls/1", "", map[string]any{"body": "new body"})
	got, err := p.Get(t.Context(), "1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Body != "new body" || got.Title != "T" {
		t.Errorf("after SetBody: title %q body %q, want T and new body", got.Title, got.Body)
	}
}

func TestBaseURLWithAPIPath(t *testing.T) {
	t.Parallel()
	fake := giteatest.NewFake(t, "acme", "config")
	fake.AddBranch("cup/a")
	p, err := gitea.New(gitea.Config{BaseURL: fake.URL() + "api/v1/", Owner: "acme", Repo: "config", HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Open(t.Context(), &scm.OpenRequest{Title: "T", Head: "cup/a", Base: "main"}); err != nil {
		t.Fatalf("Open: %v", err)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		call    func(context.Context, *gitea.Provider) error
		fault   scmtest.Fault
		want    error
		wantMsg string
		noCalls bool
	}{
		{name: "unknown head", call: open("cup/missing"), want: scm.ErrInvalid, wantMsg: "no such branch"},
		{name: "duplicate", call: open("cup/a"), want: scm.ErrInvalid, wantMsg: "already exists"},
		{name: "no title", call: func(ctx context.Context, p *gitea.Provider) error {
			_, err := p.Open(ctx, &scm.OpenRequest{Head: "cup/a", Base: "main"})
			return err
		}, want: scm.ErrInvalid, noCalls: true},
		{name: "unknown id", call: get("999"), want: scm.ErrNotFound, wantMsg: "HTTP 404 Not Found: not found"},
		{name: "malformed id", call: get("abc"), want: scm.ErrNotFound, noCalls: true},
		{name: "zero id", call: get("0"), want: scm.ErrNotFound, noCalls: true},
		{name: "set body of unknown id", call: func(ctx context.Context, p *gitea.Provider) error {
			return p.SetBody(ctx, "999", "x")
		}, want: scm.ErrNotFound},
		{name: "unknown state", call: func(ctx context.Context, p *gitea.Provider) error {
			_, err := p.List(ctx, &scm.ListRequest{State: scm.State(42)})
			return err
		}, want: scm.ErrInvalid, noCalls: true},
		{name: "server error", call: get("1"), fault: scmtest.FaultServerError, want: scm.ErrUnavailable, wantMsg: "(HTTP 502 Bad Gateway)"},
		{name: "unauthorized", call: get("1"), fault: scmtest.FaultUnauthorized, want: scm.ErrUnauthenticated, wantMsg: "token is required"},
		{name: "forbidden", call: open("cup/b"), fault: scmtest.FaultForbidden, want: scm.ErrPermissionDenied, wantMsg: "scope"},
		{name: "invalid", call: open("cup/b"), fault: scmtest.FaultInvalid, want: scm.ErrInvalid, wantMsg: "[Title]: Required"},
		{name: "rate limited", call: list, fault: scmtest.FaultRateLimited, want: scm.ErrRateLimited, wantMsg: "retry after 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A client that neither waits out rate limits nor retries,
			// whatever scm.NewHTTPClient learns to do.
			p, fake := newWithPull(t, &http.Client{Transport: bearer{}})
			fake.AddBranch("cup/b")
			before := len(fake.Requests())
			fake.SetFault(tt.fault, 1, 500*time.Millisecond)
			err := tt.call(t.Context(), p)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error = %v, want one wrapping %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error = %q, want it to contain %q", err, tt.wantMsg)
			}
			if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q holds the token or a line break", err)
			}
			if n := len(fake.Requests()) - before; tt.noCalls && n != 0 {
				t.Errorf("made %d calls, want none", n)
			}
		})
	}
}

func TestContextEnds(t *testing.T) {
	t.Parallel()
	p, fake := newProvider(t, nil)
	fake.SetFault(scmtest.FaultTimeout, -1, 0)

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Get(ctx, "1")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Get after the deadline = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Get took %v after a 100ms deadline", d)
	}

	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	if _, err := p.List(ctx, &scm.ListRequest{}); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a canceled context = %v, want context.Canceled", err)
	}
}

func TestTransportErrorUnavailable(t *testing.T) {
	t.Parallel()
	fake := giteatest.NewFake(t, "acme", "config")
	url := fake.URL()
	p, err := gitea.New(gitea.Config{BaseURL: url, Owner: "acme", Repo: "config",
		HTTPClient: &http.Client{Transport: failing{}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Get(t.Context(), "1")
	if !errors.Is(err, scm.ErrUnavailable) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Get over a failing transport = %v, want ErrUnavailable with the cause", err)
	}
}

func open(head string) func(context.Context, *gitea.Provider) error {
	return func(ctx context.Context, p *gitea.Provider) error {
		_, err := p.Open(ctx, &scm.OpenRequest{Title: "T", Head: head, Base: "main", Labels: []string{"x"}})
		return err
	}
}

func get(id string) func(context.Context, *gitea.Provider) error {
	return func(ctx context.Context, p *gitea.Provider) error {
		_, err := p.Get(ctx, id)
		return err
	}
}

func list(ctx context.Context, p *gitea.Provider) error {
	_, err := p.List(ctx, &scm.ListRequest{})
	return err
}

// bearer authenticates with token and does nothing else.
type bearer struct{}

func (bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return http.DefaultTransport.RoundTrip(r)
}

// failing fails every call as an unreachable host does.
type failing struct{}

func (failing) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
}

func checkProposal(t *testing.T, got, want *scm.Proposal) {
	t.Helper()
	if got.ID != want.ID || got.Title != want.Title || got.Body != want.Body || got.Head != want.Head ||
		got.Base != want.Base || got.State != want.State || got.Draft != want.Draft ||
		!slices.Equal(got.Labels, want.Labels) {
		t.Errorf("proposal = %+v, want %+v", got, want)
	}
	if got.CreatedAt.IsZero() || got.UpdatedAt.IsZero() {
		t.Errorf("proposal %s has no timestamps: %+v", got.ID, got)
	}
}

func ExampleNew() {
	// New does no I/O: this host need not exist until the first call.
	p, err := gitea.New(gitea.Config{
		BaseURL:    "https://gitea.example.com/",
		Owner:      "acme",
		Repo:       "config",
		HTTPClient: scm.NewHTTPClient(scm.HTTPOptions{Token: scm.StaticToken("token")}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Name())
	// Output: gitea
}

func TestConcurrentOpensCreateLabelOnce(t *testing.T) {
	t.Parallel()
	p, fake := newProvider(t, nil)
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		head := fmt.Sprintf("cup/%d", i)
		fake.AddBranch(head)
		go func() {
			_, err := p.Open(t.Context(), &scm.OpenRequest{Title: "T", Head: head, Base: "main", Labels: []string{"cup"}})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	created := 0
	for _, c := range calls(t, fake) {
		if c.Method == "POST" && c.Path == "/api/v1/repos/acme/config/labels" {
			created++
		}
	}
	if created != 1 {
		t.Errorf("%d Opens created label cup %d times, want once", n, created)
	}
}

func TestStatusMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code int
		want error
	}{
		{http.StatusBadRequest, scm.ErrInvalid},
		{http.StatusUnauthorized, scm.ErrUnauthenticated},
		{http.StatusForbidden, scm.ErrPermissionDenied},
		{http.StatusNotFound, scm.ErrNotFound},
		{http.StatusRequestTimeout, scm.ErrUnavailable},
		{http.StatusConflict, scm.ErrInvalid},
		{http.StatusPreconditionFailed, scm.ErrInvalid},
		{http.StatusUnprocessableEntity, scm.ErrInvalid},
		{http.StatusLocked, scm.ErrInvalid},
		{http.StatusTooManyRequests, scm.ErrRateLimited},
		{http.StatusInternalServerError, scm.ErrUnavailable},
		{http.StatusServiceUnavailable, scm.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.code), func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.code)
				io.WriteString(w, `{"message":"gitea says no","url":"https://gitea.example.com/api/swagger"}`)
			}))
			t.Cleanup(srv.Close)
			p, err := gitea.New(gitea.Config{BaseURL: srv.URL, Owner: "acme", Repo: "config", HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			err = p.SetBody(t.Context(), "1", "body")
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), "gitea says no") {
				t.Errorf("HTTP %d: error = %v, want one wrapping %q with Gitea's message", tt.code, err, tt.want)
			}
		})
	}
}
