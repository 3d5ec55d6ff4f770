package scmtest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/scm"
)

// Run runs the conformance suite against the provider h makes. Every test
// is a parallel subtest with a fake and a token of its own.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil || h.AuthHeader == nil {
		t.Fatal("scmtest: Harness.New and Harness.AuthHeader are required")
	}
	tests := []struct {
		name string
		run  func(*testing.T, *env)
	}{
		{"Open", testOpen},
		{"OpenPlain", testOpenPlain},
		{"OpenWithoutBranch", testOpenWithoutBranch},
		{"OpenWithoutTitle", testOpenWithoutTitle},
		{"OpenTwice", testOpenTwice},
		{"GetUnknown", testGetUnknown},
		{"GetMalformedID", testGetMalformedID},
		{"List", testList},
		{"ListPagination", testListPagination},
		{"Find", testFind},
		{"FindCost", testFindCost},
		{"FindAfterClose", testFindAfterClose},
		{"SetBody", testSetBody},
		{"SetBodyUnknown", testSetBodyUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newEnv(t, h))
		})
	}
	// These run each call with a fake of its own.
	for _, tt := range []struct {
		name string
		run  func(*testing.T, Harness)
	}{
		{"Faults", testFaults},
		{"Timeout", testTimeout},
		{"RateLimited", testRateLimited},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, h)
		})
	}
}

// env is one test's provider, fake and token.
type env struct {
	h     Harness
	p     scm.Provider
	fake  Fake
	token string
}

// newEnv starts a fake, and checks when the test ends that every call it
// received carried the token.
func newEnv(t *testing.T, h Harness) *env {
	t.Helper()
	token := "cup-test-" + rand.Text()
	p, fake := h.New(t, token)
	if p == nil || fake == nil {
		t.Fatal("scmtest: Harness.New returned a nil provider or fake")
	}
	name, value := h.AuthHeader(token)
	t.Cleanup(func() {
		for _, r := range fake.Requests() {
			if got := r.Header.Get(name); got != value {
				t.Errorf("%s %s: header %s does not carry the token (got %d bytes)", r.Method, r.Path, name, len(got))
			}
		}
	})
	return &env{h: h, p: p, fake: fake, token: token}
}

// open opens a proposal for a new branch head into main.
func (e *env) open(t *testing.T, head string) *scm.Proposal {
	t.Helper()
	e.fake.AddBranch(head)
	p, err := e.p.Open(t.Context(), &scm.OpenRequest{Title: "Update " + head, Body: "Changes in " + head, Head: head, Base: "main"})
	if err != nil {
		t.Fatalf("Open(%s): %v", head, err)
	}
	return p
}

// checkErr fails unless err wraps one of want, and checks that it does not
// give the token away.
func (e *env) checkErr(t *testing.T, what string, err error, want ...error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: got no error, want %v", what, want)
		return
	}
	if strings.Contains(err.Error(), e.token) || strings.Contains(fmt.Sprintf("%+v", err), e.token) {
		t.Errorf("%s: the error gives the token away: %v", what, err)
	}
	for _, w := range want {
		if errors.Is(err, w) {
			return
		}
	}
	t.Errorf("%s: got %v, want an error wrapping one of %v", what, err, want)
}

func testOpen(t *testing.T, e *env) {
	e.fake.AddBranch("cup/open")
	req := &scm.OpenRequest{
		Title:  "Set the rollout to 50%",
		Body:   "Changes:\n\n- flags/rollout.yaml",
		Head:   "cup/open",
		Base:   "main",
		Labels: []string{"cup", "config change"},
		Draft:  true,
	}
	before := time.Now().Add(-time.Minute)
	got, err := e.p.Open(t.Context(), req)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if got.ID == "" {
		t.Error("Open: empty ID")
	}
	if u, err := url.Parse(got.URL); err != nil || !u.IsAbs() {
		t.Errorf("Open: URL %q is not an absolute URL", got.URL)
	}
	if got.CreatedAt.Before(before) || got.UpdatedAt.Before(before) {
		t.Errorf("Open: CreatedAt %v, UpdatedAt %v: want the time the proposal was opened", got.CreatedAt, got.UpdatedAt)
	}
	e.checkProposal(t, "Open", got, req, scm.StateOpen)

	again, err := e.p.Get(t.Context(), got.ID)
	if err != nil {
		t.Fatalf("Get(%s): %v", got.ID, err)
	}
	e.checkProposal(t, "Get", again, req, scm.StateOpen)
	if again.ID != got.ID || again.URL != got.URL || !again.CreatedAt.Equal(got.CreatedAt) {
		t.Errorf("Get = {ID %q, URL %q, CreatedAt %v}, want Open's {%q, %q, %v}",
			again.ID, again.URL, again.CreatedAt, got.ID, got.URL, got.CreatedAt)
	}
}

// checkProposal compares the fields of p that req set.
func (e *env) checkProposal(t *testing.T, what string, p *scm.Proposal, req *scm.OpenRequest, state scm.State) {
	t.Helper()
	if p.Title != req.Title || p.Body != req.Body || p.Head != req.Head || p.Base != req.Base {
		t.Errorf("%s = {Title %q, Body %q, Head %q, Base %q}, want {%q, %q, %q, %q}",
			what, p.Title, p.Body, p.Head, p.Base, req.Title, req.Body, req.Head, req.Base)
	}
	if p.State != state {
		t.Errorf("%s: State = %v, want %v", what, p.State, state)
	}
	if p.Draft != req.Draft && !(req.Draft && e.h.DraftUnsupported) {
		t.Errorf("%s: Draft = %v, want %v", what, p.Draft, req.Draft)
	}
	if got, want := sorted(p.Labels), sorted(req.Labels); !slices.Equal(got, want) {
		t.Errorf("%s: Labels = %q, want %q", what, got, want)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func testOpenPlain(t *testing.T, e *env) {
	e.fake.AddBranch("cup/plain")
	req := &scm.OpenRequest{Title: "Plain", Head: "cup/plain", Base: "main"}
	got, err := e.p.Open(t.Context(), req)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	e.checkProposal(t, "Open", got, req, scm.StateOpen)
	again, err := e.p.Get(t.Context(), got.ID)
	if err != nil {
		t.Fatalf("Get(%s): %v", got.ID, err)
	}
	e.checkProposal(t, "Get", again, req, scm.StateOpen)
}

func testOpenWithoutBranch(t *testing.T, e *env) {
	_, err := e.p.Open(t.Context(), &scm.OpenRequest{Title: "Nothing", Head: "cup/missing", Base: "main"})
	e.checkErr(t, "Open for a head without branch", err, scm.ErrInvalid)
}

func testOpenWithoutTitle(t *testing.T, e *env) {
	e.fake.AddBranch("cup/untitled")
	_, err := e.p.Open(t.Context(), &scm.OpenRequest{Head: "cup/untitled", Base: "main"})
	e.checkErr(t, "Open without a title", err, scm.ErrInvalid)
}

func testOpenTwice(t *testing.T, e *env) {
	e.open(t, "cup/twice")
	_, err := e.p.Open(t.Context(), &scm.OpenRequest{Title: "Again", Head: "cup/twice", Base: "main"})
	e.checkErr(t, "Open for a head with an open proposal", err, scm.ErrInvalid)
}

func testGetUnknown(t *testing.T, e *env) {
	e.open(t, "cup/known")
	_, err := e.p.Get(t.Context(), "4242")
	e.checkErr(t, "Get(4242)", err, scm.ErrNotFound)
}

func testGetMalformedID(t *testing.T, e *env) {
	for _, id := range []string{"", "not-an-id", "../1"} {
		_, err := e.p.Get(t.Context(), id)
		e.checkErr(t, fmt.Sprintf("Get(%q)", id), err, scm.ErrInvalid, scm.ErrNotFound)
	}
}

func testList(t *testing.T, e *env) {
	// Opened oldest first; List returns newest first.
	ids := map[string]string{}
	for _, head := range []string{"cup/a", "cup/b", "feature/c", "cup/merged", "cup/closed", "cupcake"} {
		ids[head] = e.open(t, head).ID
	}
	e.fake.Merge(t, ids["cup/merged"])
	e.fake.Close(t, ids["cup/closed"])

	tests := []struct {
		name string
		req  scm.ListRequest
		want []string // heads, newest first
	}{
		{"All", scm.ListRequest{}, []string{"cupcake", "cup/closed", "cup/merged", "feature/c", "cup/b", "cup/a"}},
		{"HeadPrefix", scm.ListRequest{HeadPrefix: "cup/"}, []string{"cup/closed", "cup/merged", "cup/b", "cup/a"}},
		{"Head", scm.ListRequest{Head: "cup/a"}, []string{"cup/a"}},
		{"HeadIsExact", scm.ListRequest{Head: "cup"}, nil},
		{"HeadUnknown", scm.ListRequest{Head: "cup/none"}, nil},
		{"Open", scm.ListRequest{State: scm.StateOpen}, []string{"cupcake", "feature/c", "cup/b", "cup/a"}},
		{"OpenHeadPrefix", scm.ListRequest{State: scm.StateOpen, HeadPrefix: "cup/"}, []string{"cup/b", "cup/a"}},
		{"Merged", scm.ListRequest{State: scm.StateMerged}, []string{"cup/merged"}},
		{"Closed", scm.ListRequest{State: scm.StateClosed}, []string{"cup/closed"}},
		{"MergedHead", scm.ListRequest{State: scm.StateMerged, Head: "cup/merged"}, []string{"cup/merged"}},
		{"OpenHeadMerged", scm.ListRequest{State: scm.StateOpen, Head: "cup/merged"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := e.p.List(t.Context(), &tt.req)
			if err != nil {
				t.Fatalf("List(%+v): %v", tt.req, err)
			}
			var heads []string
			for _, p := range got {
				heads = append(heads, p.Head)
				if p.ID != ids[p.Head] {
					t.Errorf("List(%+v): %s has ID %q, want %q", tt.req, p.Head, p.ID, ids[p.Head])
				}
				want := scm.StateOpen
				switch p.Head {
				case "cup/merged":
					want = scm.StateMerged
				case "cup/closed":
					want = scm.StateClosed
				}
				if p.State != want {
					t.Errorf("List(%+v): %s is %v, want %v", tt.req, p.Head, p.State, want)
				}
			}
			if !slices.Equal(heads, tt.want) {
				t.Errorf("List(%+v) = %q, want %q", tt.req, heads, tt.want)
			}
		})
	}
}

func testListPagination(t *testing.T, e *env) {
	const n = 35
	want := map[string]bool{}
	for i := range n {
		want[e.open(t, fmt.Sprintf("cup/page-%02d", i)).ID] = true
	}
	e.open(t, "other/page")
	before := len(e.fake.Requests())
	got, err := e.p.List(t.Context(), &scm.ListRequest{HeadPrefix: "cup/"})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	calls := len(e.fake.Requests()) - before
	seen := map[string]bool{}
	for _, p := range got {
		if !want[p.ID] || seen[p.ID] {
			t.Errorf("List: unexpected or repeated proposal %s (%s)", p.ID, p.Head)
		}
		seen[p.ID] = true
	}
	if len(seen) != n {
		t.Errorf("List returned %d of the %d proposals", len(seen), n)
	}
	if calls < 2 {
		t.Errorf("List made %d call(s); the fake paginates, so it should have followed more than one page", calls)
	}
}

func testFind(t *testing.T, e *env) {
	want := e.open(t, "cup/find")
	e.open(t, "cup/find-other")
	e.fake.AddBranch("release")
	got, err := e.p.Find(t.Context(), "cup/find", "main")
	if err != nil {
		t.Fatalf("Find(cup/find, main): %v", err)
	}
	if got.ID != want.ID || got.Head != "cup/find" || got.Base != "main" || got.State != scm.StateOpen || got.Title != want.Title {
		t.Errorf("Find(cup/find, main) = %+v, want %+v", got, want)
	}
	for _, tt := range []struct{ head, base string }{
		{"cup/find", "release"},
		{"cup/none", "main"},
		{"cup", "main"},
	} {
		_, err := e.p.Find(t.Context(), tt.head, tt.base)
		e.checkErr(t, fmt.Sprintf("Find(%s, %s)", tt.head, tt.base), err, scm.ErrNotFound)
	}
	e.fake.Merge(t, want.ID)
	_, err = e.p.Find(t.Context(), "cup/find", "main")
	e.checkErr(t, "Find after the merge", err, scm.ErrNotFound)
}

// testFindCost checks that Find asks the host for the one proposal rather
// than reading them all: its calls do not grow with the proposals the
// repository holds, here more than any host's page.
func testFindCost(t *testing.T, e *env) {
	const n = 35
	for i := range n {
		e.open(t, fmt.Sprintf("cup/cost-%02d", i))
	}
	for _, head := range []string{"cup/cost-00", "cup/cost-34", "cup/cost-none"} {
		before := len(e.fake.Requests())
		_, err := e.p.Find(t.Context(), head, "main")
		if head == "cup/cost-none" {
			e.checkErr(t, "Find(cup/cost-none)", err, scm.ErrNotFound)
		} else if err != nil {
			t.Fatalf("Find(%s): %v", head, err)
		}
		if calls := len(e.fake.Requests()) - before; calls != 1 {
			t.Errorf("Find(%s) made %d calls among %d proposals, want 1", head, calls, n)
		}
	}
}

// testFindAfterClose proposes a branch again after its first proposal was
// closed: Find must return the new one, not the closed one.
func testFindAfterClose(t *testing.T, e *env) {
	first := e.open(t, "cup/again")
	e.fake.Close(t, first.ID)
	second := e.open(t, "cup/again")
	got, err := e.p.Find(t.Context(), "cup/again", "main")
	if err != nil {
		t.Fatalf("Find(cup/again, main): %v", err)
	}
	if got.ID != second.ID || got.State != scm.StateOpen {
		t.Errorf("Find(cup/again, main) = %s (%v), want the new proposal %s", got.ID, got.State, second.ID)
	}
}

func testSetBody(t *testing.T, e *env) {
	p := e.open(t, "cup/body")
	for _, body := range []string{"Changes:\n\n- a.yaml\n- b.yaml", ""} {
		if err := e.p.SetBody(t.Context(), p.ID, body); err != nil {
			t.Fatalf("SetBody(%q): %v", body, err)
		}
		got, err := e.p.Get(t.Context(), p.ID)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if got.Body != body || got.Title != p.Title || got.Head != p.Head {
			t.Errorf("after SetBody(%q), Get = {Body %q, Title %q, Head %q}, want {%q, %q, %q}",
				body, got.Body, got.Title, got.Head, body, p.Title, p.Head)
		}
	}
}

func testSetBodyUnknown(t *testing.T, e *env) {
	err := e.p.SetBody(t.Context(), "4242", "body")
	e.checkErr(t, "SetBody(4242)", err, scm.ErrNotFound)
}

// call is one provider method, made ready for a fault test.
type call struct {
	name string
	// prepare creates what the call needs and returns the call.
	prepare func(t *testing.T, e *env) func(ctx context.Context) error
}

var calls = []call{
	{"Open", func(t *testing.T, e *env) func(context.Context) error {
		e.fake.AddBranch("cup/fault")
		return func(ctx context.Context) error {
			_, err := e.p.Open(ctx, &scm.OpenRequest{Title: "Fault", Head: "cup/fault", Base: "main", Labels: []string{"cup"}})
			return err
		}
	}},
	{"Get", func(t *testing.T, e *env) func(context.Context) error {
		id := e.open(t, "cup/fault").ID
		return func(ctx context.Context) error {
			_, err := e.p.Get(ctx, id)
			return err
		}
	}},
	{"List", func(t *testing.T, e *env) func(context.Context) error {
		e.open(t, "cup/fault")
		return func(ctx context.Context) error {
			_, err := e.p.List(ctx, &scm.ListRequest{HeadPrefix: "cup/"})
			return err
		}
	}},
	{"Find", func(t *testing.T, e *env) func(context.Context) error {
		e.open(t, "cup/fault")
		return func(ctx context.Context) error {
			_, err := e.p.Find(ctx, "cup/fault", "main")
			return err
		}
	}},
	{"SetBody", func(t *testing.T, e *env) func(context.Context) error {
		id := e.open(t, "cup/fault").ID
		return func(ctx context.Context) error {
			return e.p.SetBody(ctx, id, "new body")
		}
	}},
}

// forEachCall runs test for every call, each with an env of its own.
func forEachCall(t *testing.T, h Harness, test func(t *testing.T, e *env, c call)) {
	t.Helper()
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			test(t, newEnv(t, h), c)
		})
	}
}

// afterFault checks that the provider works again once the fault is gone:
// it must not refuse calls on the strength of an earlier answer.
func afterFault(t *testing.T, e *env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := e.p.List(ctx, &scm.ListRequest{}); err != nil {
		t.Errorf("List after the fault ended: %v", err)
	}
}

func testFaults(t *testing.T, h Harness) {
	faults := []struct {
		name  string
		fault Fault
		want  error
	}{
		{"ServerError", FaultServerError, scm.ErrUnavailable},
		{"Unauthorized", FaultUnauthorized, scm.ErrUnauthenticated},
		{"Forbidden", FaultForbidden, scm.ErrPermissionDenied},
		{"Invalid", FaultInvalid, scm.ErrInvalid},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			forEachCall(t, h, func(t *testing.T, e *env, c call) {
				run := c.prepare(t, e)
				// Every call fails, so that a transport that retries
				// still sees the fault.
				e.fake.SetFault(f.fault, -1, 0)
				e.checkErr(t, c.name, run(t.Context()), f.want)
				e.fake.SetFault(FaultNone, 0, 0)
				afterFault(t, e)
			})
		})
	}
}

func testTimeout(t *testing.T, h Harness) {
	const deadline = 300 * time.Millisecond
	forEachCall(t, h, func(t *testing.T, e *env, c call) {
		run := c.prepare(t, e)
		e.fake.SetFault(FaultTimeout, -1, 0)
		ctx, cancel := context.WithTimeout(t.Context(), deadline)
		defer cancel()
		start := time.Now()
		err := run(ctx)
		if took := time.Since(start); took > deadline+2*time.Second {
			t.Errorf("%s returned %v after the context's deadline", c.name, took-deadline)
		}
		e.checkErr(t, c.name, err, context.DeadlineExceeded, scm.ErrUnavailable)
		e.fake.SetFault(FaultNone, 0, 0)
		afterFault(t, e)
	})
}

// testRateLimited accepts both ways to meet an exhausted rate limit: an
// HTTP client that waits for the reset, after which the call succeeds, and
// one that does not, after which it fails with ErrRateLimited.
func testRateLimited(t *testing.T, h Harness) {
	const retryAfter = time.Second
	forEachCall(t, h, func(t *testing.T, e *env, c call) {
		run := c.prepare(t, e)
		e.fake.SetFault(FaultRateLimited, 1, retryAfter)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		start := time.Now()
		err := run(ctx)
		if err == nil {
			if took := time.Since(start); took < retryAfter/2 {
				t.Errorf("%s succeeded after %v; a client that waits for the limit must wait for it to reset (%v)", c.name, took, retryAfter)
			}
		} else {
			e.checkErr(t, c.name, err, scm.ErrRateLimited)
		}
		afterFault(t, e)
	})
}
