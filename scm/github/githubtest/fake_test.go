package githubtest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cup-dev/cup/scm/github/githubtest"
	"github.com/cup-dev/cup/scm/scmtest"
)

// recordingTB keeps the errors a fake reports instead of failing the test.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recordingTB) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errs
}

// do calls the fake and decodes the JSON answer into v (unless nil).
func do(t *testing.T, method, url, body string, v any) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %s: %v", method, url, b, err)
		}
	}
	return res
}

func TestUnexpectedCallsFailTheTest(t *testing.T) {
	t.Parallel()
	rec := &recordingTB{TB: t}
	fake := githubtest.NewFake(rec, "acme", "config")
	for _, c := range []struct{ method, path string }{
		{"GET", "repos/acme/config/issues"},
		{"DELETE", "repos/acme/config/pulls/1"},
		{"PUT", "repos/acme/config/pulls/1/merge"},
		{"GET", "repos/other/config/pulls"},
		{"GET", "user"},
	} {
		var body struct{ Message string }
		res := do(t, c.method, fake.URL()+c.path, "", &body)
		if res.StatusCode != http.StatusNotFound || body.Message != "Not Found" {
			t.Errorf("%s %s = %d %q, want 404 Not Found", c.method, c.path, res.StatusCode, body.Message)
		}
	}
	if errs := rec.errors(); len(errs) != 5 {
		t.Errorf("the fake reported %d unexpected calls, want 5: %q", len(errs), errs)
	}
	if n := len(fake.Requests()); n != 5 {
		t.Errorf("recorded %d calls, want 5", n)
	}
}

func TestShapes(t *testing.T) {
	t.Parallel()
	fake := githubtest.NewFake(t, "acme", "config")
	fake.AddBranch("cup/x")
	var created map[string]any
	res := do(t, "POST", fake.URL()+"repos/acme/config/pulls", `{"title":"T","head":"cup/x","base":"main"}`, &created)
	if res.StatusCode != http.StatusCreated || res.Header.Get("Location") != created["url"] {
		t.Fatalf("create = %d, Location %q, url %v", res.StatusCode, res.Header.Get("Location"), created["url"])
	}
	for _, k := range []string{"merged", "mergeable", "html_url", "number", "state", "draft", "head", "base", "labels", "created_at", "updated_at", "merged_at"} {
		if _, ok := created[k]; !ok {
			t.Errorf("a pull request has no %q", k)
		}
	}
	if created["body"] != nil || created["merged_at"] != nil {
		t.Errorf("body = %v, merged_at = %v; GitHub sends null", created["body"], created["merged_at"])
	}
	if head := created["head"].(map[string]any); head["label"] != "acme:cup/x" || head["ref"] != "cup/x" {
		t.Errorf("head = %v", head)
	}

	var list []map[string]any
	do(t, "GET", fake.URL()+"repos/acme/config/pulls", "", &list)
	if len(list) != 1 {
		t.Fatalf("list = %v", list)
	}
	if _, ok := list[0]["merged"]; ok {
		t.Error(`a listed pull request has "merged"; GitHub's list does not send it`)
	}

	var labels []map[string]any
	do(t, "POST", fake.URL()+"repos/acme/config/issues/1/labels", `{"labels":["a",{"name":"b"}]}`, nil)
	do(t, "POST", fake.URL()+"repos/acme/config/issues/1/labels", `["a","c"]`, &labels)
	var names []string
	for _, l := range labels {
		names = append(names, l["name"].(string))
	}
	if strings.Join(names, ",") != "c" && strings.Join(names, ",") != "a,c" {
		t.Errorf("labels = %q", names)
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	fake := githubtest.NewFake(t, "acme", "config")
	fake.AddBranch("cup/x")
	tests := []struct{ body, want string }{
		{`{"title":"T","head":"cup/missing","base":"main"}`, `"field":"head","code":"invalid"`},
		{`{"title":"T","head":"cup/x","base":"missing"}`, `"field":"base","code":"invalid"`},
		{`{"head":"cup/x","base":"main"}`, `"field":"title","code":"missing_field"`},
		{`{"title":"T","head":"main","base":"main"}`, `No commits between main and main`},
		{`{"title":"T","head":"cup/x","base":"main"}`, ``}, // opens
		{`{"title":"T","head":"acme:cup/x","base":"main"}`, `A pull request already exists for acme:cup/x.`},
	}
	for _, tt := range tests {
		var raw json.RawMessage
		res := do(t, "POST", fake.URL()+"repos/acme/config/pulls", tt.body, &raw)
		switch {
		case tt.want == "" && res.StatusCode != http.StatusCreated:
			t.Errorf("POST %s = %d %s, want 201", tt.body, res.StatusCode, raw)
		case tt.want != "" && (res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(raw), tt.want) ||
			!strings.Contains(string(raw), `"message":"Validation Failed"`)):
			t.Errorf("POST %s = %d %s, want 422 with %s", tt.body, res.StatusCode, raw, tt.want)
		}
	}
	var notFound struct{ Message string }
	if res := do(t, "GET", fake.URL()+"repos/acme/config/pulls/9", "", &notFound); res.StatusCode != 404 || notFound.Message != "Not Found" {
		t.Errorf("GET unknown = %d %q", res.StatusCode, notFound.Message)
	}
}

func TestPagination(t *testing.T) {
	t.Parallel()
	fake := githubtest.NewFake(t, "acme", "config")
	for i := range 25 {
		b := fmt.Sprintf("cup/%02d", i)
		fake.AddBranch(b)
		do(t, "POST", fake.URL()+"repos/acme/config/pulls", fmt.Sprintf(`{"title":"T","head":%q,"base":"main"}`, b), nil)
	}
	tests := []struct {
		query string
		first int // number of the first pull request on the page
		n     int
		rels  string
	}{
		{"per_page=100", 25, githubtest.PageSize, "next,last"},
		{"per_page=100&page=2", 15, githubtest.PageSize, "prev,next,last,first"},
		{"per_page=100&page=3", 5, 5, "prev,first"},
		{"per_page=100&page=4", 0, 0, "prev,first"},
		{"per_page=20&direction=asc&page=2", 11, githubtest.PageSize, "prev,next,last,first"},
		{"state=closed", 0, 0, ""},
		{"head=acme:cup/03", 4, 1, ""},
		{"head=cup/03", 25, githubtest.PageSize, "next,last"}, // GitHub ignores a head without its owner
		{"head=mallory:cup/03", 0, 0, ""},
	}
	for _, tt := range tests {
		var list []struct{ Number int }
		res := do(t, "GET", fake.URL()+"repos/acme/config/pulls?"+tt.query, "", &list)
		if len(list) != tt.n || (tt.n > 0 && list[0].Number != tt.first) {
			t.Errorf("?%s = %d pull requests starting at %v, want %d starting at #%d", tt.query, len(list), list, tt.n, tt.first)
		}
		var rels []string
		for l := range strings.SplitSeq(res.Header.Get("Link"), ", ") {
			if _, rel, ok := strings.Cut(l, `; rel="`); ok {
				rels = append(rels, strings.TrimSuffix(rel, `"`))
				if !strings.Contains(l, "per_page=") && strings.Contains(tt.query, "per_page") {
					t.Errorf("?%s: link %s drops per_page", tt.query, l)
				}
			}
		}
		if got := strings.Join(rels, ","); got != tt.rels {
			t.Errorf("?%s: Link rels = %q, want %q (%s)", tt.query, got, tt.rels, res.Header.Get("Link"))
		}
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fault     scmtest.Fault
		status    int
		message   string
		remaining string
	}{
		{scmtest.FaultServerError, 502, "Server Error", "4999"},
		{scmtest.FaultUnauthorized, 401, "Bad credentials", "4999"},
		{scmtest.FaultForbidden, 403, "Resource not accessible by personal access token", "4999"},
		{scmtest.FaultInvalid, 422, "Validation Failed", "4999"},
		{scmtest.FaultRateLimited, 403, "API rate limit exceeded for user ID 1.", "0"},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(int(tt.fault)), func(t *testing.T) {
			t.Parallel()
			fake := githubtest.NewFake(t, "acme", "config")
			fake.SetFault(tt.fault, 1, 5*time.Second)
			var body struct{ Message string }
			res := do(t, "GET", fake.URL()+"repos/acme/config/pulls", "", &body)
			if res.StatusCode != tt.status || !strings.HasPrefix(body.Message, tt.message) {
				t.Errorf("= %d %q, want %d %q", res.StatusCode, body.Message, tt.status, tt.message)
			}
			if got := res.Header.Get("X-RateLimit-Remaining"); got != tt.remaining {
				t.Errorf("X-RateLimit-Remaining = %q, want %q", got, tt.remaining)
			}
			for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Reset", "X-RateLimit-Used", "X-RateLimit-Resource"} {
				if res.Header.Get(h) == "" {
					t.Errorf("no %s", h)
				}
			}
			if tt.fault == scmtest.FaultRateLimited {
				reset, _ := strconv.ParseInt(res.Header.Get("X-RateLimit-Reset"), 10, 64)
				if d := time.Until(time.Unix(reset, 0)); d < 4*time.Second || d > 6*time.Second || res.Header.Get("Retry-After") != "5" {
					t.Errorf("resets in %v, Retry-After %q; want 5s", d, res.Header.Get("Retry-After"))
				}
			}
			if res := do(t, "GET", fake.URL()+"repos/acme/config/pulls", "", nil); res.StatusCode != 200 {
				t.Errorf("the call after the fault = %d, want 200", res.StatusCode)
			}
		})
	}
}
