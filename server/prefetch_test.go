package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/server"
)

// fileController serves the resources of a namespace as if they were kept
// in one file: every call reads them all. It counts its Gets and Lists.
type fileController struct {
	costsList bool          // what GetCostsList says
	problem   string        // a file List leaves out, when not empty
	listErr   error         // what List returns, when not nil
	block     chan struct{} // List waits for it to close (or its context to end), when not nil
	gets      atomic.Int64
	lists     atomic.Int64
}

var (
	_ controller.GetCostsList  = (*fileController)(nil)
	_ controller.ProblemLister = (*fileController)(nil)
)

// widgets is what every namespace holds.
var widgets = []string{"a", "b", "c"}

func widget(namespace, name string) *controller.Resource {
	return &controller.Resource{
		APIVersion: "test.cup.dev/v1", Kind: "Widget",
		Metadata: controller.Metadata{Namespace: namespace, Name: name, Labels: map[string]string{"of": namespace}},
		Spec:     json.RawMessage(fmt.Sprintf(`{"name":%q}`, name)),
	}
}

func (c *fileController) GetCostsList() bool { return c.costsList }

func (c *fileController) Get(_ context.Context, req *controller.GetRequest) (*controller.Resource, error) {
	c.gets.Add(1)
	for _, n := range widgets {
		if n == req.Name {
			return widget(req.Namespace, n), nil
		}
	}
	return nil, fmt.Errorf("widget %q: %w", req.Name, controller.ErrNotFound)
}

func (c *fileController) List(ctx context.Context, req *controller.ListRequest) ([]*controller.Resource, error) {
	rs, _, err := c.ListProblems(ctx, req)
	return rs, err
}

func (c *fileController) ListProblems(ctx context.Context, req *controller.ListRequest) ([]*controller.Resource, []controller.Problem, error) {
	c.lists.Add(1)
	if c.block != nil {
		select {
		case <-c.block:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	if c.listErr != nil {
		return nil, nil, c.listErr
	}
	var rs []*controller.Resource
	for _, n := range widgets {
		rs = append(rs, widget(req.Namespace, n))
	}
	var ps []controller.Problem
	if c.problem != "" {
		ps = append(ps, controller.Problem{Origin: c.problem, Err: fmt.Errorf("%s: %w", c.problem, controller.ErrMalformed)})
	}
	return rs, ps, nil
}

func (c *fileController) Put(context.Context, *controller.PutRequest) error {
	return errors.New("read-only")
}

func (c *fileController) Delete(context.Context, *controller.DeleteRequest) error {
	return errors.New("read-only")
}

// fileFixture is a server of widgets served by a fileController.
type fileFixture struct {
	*callsFixture
	ctrl *fileController
	srv  *server.Server
}

func newFileFixture(t *testing.T, c *fileController, opts ...server.Option) *fileFixture {
	t.Helper()
	f := &fileFixture{callsFixture: &callsFixture{reg: prometheus.NewRegistry(), logs: new(syncBuffer)}, ctrl: c}
	typ := &server.Type{
		Type: controller.Type{Group: "test.cup.dev", Version: "v1", Kind: "Widget", Plural: "widgets"}, Singular: "widget",
		Controller: c,
	}
	logger := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := server.New(oneCommit{}, []*server.Type{typ},
		append([]server.Option{server.WithLogger(logger), server.WithMetrics(f.reg)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	f.srv, f.handler = srv, srv.Handler()
	t.Cleanup(func() {
		srv.CloseWatches()
		if t.Failed() {
			t.Log(f.logs.String())
		}
	})
	return f
}

// get GETs a widget and returns its status and the name the body holds.
func (f *fileFixture) get(t *testing.T, namespace, name string) (int, string) {
	t.Helper()
	code, body := f.rest("GET", widgetsPath(namespace)+"/"+name, "")
	if code != http.StatusOK {
		return code, body
	}
	var r struct {
		Metadata struct{ Namespace, Name string }
		Spec     struct{ Name string }
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("GET %s/%s: %v: %s", namespace, name, err, body)
	}
	if r.Metadata.Namespace != namespace || r.Metadata.Name != name || r.Spec.Name != name {
		t.Errorf("GET %s/%s answered %s", namespace, name, body)
	}
	return code, r.Metadata.Name
}

// listsAfter waits d, GETs a missing widget, lets what it started end, and
// fails t unless the controller has answered want lists in all.
func (f *fileFixture) listsAfter(t *testing.T, d time.Duration, want int64) {
	t.Helper()
	time.Sleep(d)
	f.rest("GET", widgetsPath("ns")+"/missing", "")
	synctest.Wait()
	if _, lists := f.counted(); lists != want {
		t.Errorf("after %v more, the controller answered %d lists, want %d", d, lists, want)
	}
}

// counted returns the counts of the controller's calls.
func (f *fileFixture) counted() (gets, lists int64) { return f.ctrl.gets.Load(), f.ctrl.lists.Load() }

// prefetches returns how many listings in the background ended with the
// outcome.
func (f *fileFixture) prefetches(t *testing.T, outcome string) float64 {
	t.Helper()
	v, _ := f.labelled(t, "cup_server_listing_prefetches_total", outcome)
	return v
}

func TestGetsAreAnsweredFromAListing(t *testing.T) {
	t.Parallel()
	f := newFileFixture(t, &fileController{})
	if code, body := f.get(t, "ns", "a"); code != http.StatusOK {
		t.Fatalf("GET a = %d %s", code, body)
	}
	if code, body := f.rest("GET", widgetsPath("ns"), ""); code != http.StatusOK {
		t.Fatalf("LIST = %d %s", code, body)
	}
	for _, n := range widgets[1:] {
		if code, body := f.get(t, "ns", n); code != http.StatusOK {
			t.Errorf("GET %s = %d %s", n, code, body)
		}
	}
	code, body := f.rest("GET", widgetsPath("ns")+"/missing", "")
	if code != http.StatusNotFound || !strings.Contains(body, `\"missing\" not found`) {
		t.Errorf("GET missing = %d %s, want 404 naming it", code, body)
	}
	if gets, lists := f.counted(); gets != 1 || lists != 1 {
		t.Errorf("the controller answered %d gets and %d lists, want 1 and 1: the listing answers the gets after it", gets, lists)
	}
	if got := f.metric(t, "cup_server_gets_from_listings_total"); got != 3 {
		t.Errorf("cup_server_gets_from_listings_total = %v, want 3", got)
	}
	// Another namespace has no listing: the controller answers, and lists
	// nothing in the background, since its Get does not cost a List.
	if code, body := f.get(t, "other", "b"); code != http.StatusOK {
		t.Errorf("GET other/b = %d %s", code, body)
	}
	if gets, lists := f.counted(); gets != 2 || lists != 1 {
		t.Errorf("after a get in another namespace, the controller answered %d gets and %d lists, want 2 and 1", gets, lists)
	}
}

func TestGetsOfNamesAListingLeftOutAskTheController(t *testing.T) {
	t.Parallel()
	f := newFileFixture(t, &fileController{problem: "ns/broken.json"})
	if code, body := f.rest("GET", widgetsPath("ns"), ""); code != http.StatusOK {
		t.Fatalf("LIST = %d %s", code, body)
	}
	if code, body := f.get(t, "ns", "b"); code != http.StatusOK {
		t.Errorf("GET b = %d %s", code, body)
	}
	// The name may be that of the file the listing left out.
	if code, body := f.rest("GET", widgetsPath("ns")+"/broken", ""); code != http.StatusNotFound {
		t.Errorf("GET broken = %d %s, want the controller's 404", code, body)
	}
	if gets, lists := f.counted(); gets != 1 || lists != 1 {
		t.Errorf("the controller answered %d gets and %d lists, want 1 (broken) and 1", gets, lists)
	}
}

func TestAGetThatCostsAListListsInTheBackground(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFileFixture(t, &fileController{costsList: true})
		// A write reads the resource it replaces, and lists nothing: its
		// commit is the next one.
		f.rest("PUT", widgetsPath("ns")+"/a", `{"apiVersion":"test.cup.dev/v1","kind":"Widget","metadata":{"name":"a"}}`)
		synctest.Wait()
		if gets, lists := f.counted(); gets != 1 || lists != 0 {
			t.Fatalf("a PUT made %d gets and %d lists, want 1 and 0", gets, lists)
		}
		if code, body := f.get(t, "ns", "a"); code != http.StatusOK {
			t.Fatalf("GET a = %d %s", code, body)
		}
		synctest.Wait() // the listing in the background
		if got := f.prefetches(t, "listed"); got != 1 {
			t.Fatalf("listings in the background: %v, want 1", got)
		}
		for _, n := range widgets[1:] {
			if code, body := f.get(t, "ns", n); code != http.StatusOK {
				t.Errorf("GET %s = %d %s", n, code, body)
			}
		}
		if code, body := f.rest("GET", widgetsPath("ns")+"/missing", ""); code != http.StatusNotFound {
			t.Errorf("GET missing = %d %s", code, body)
		}
		synctest.Wait()
		if gets, lists := f.counted(); gets != 1 || lists != 1 {
			t.Errorf("the controller answered %d gets and %d lists, want 1 (the PUT's, which the first GET found memoised) and 1", gets, lists)
		}
		// A list of the namespace is the one read in the background.
		if code, body := f.rest("GET", widgetsPath("ns"), ""); code != http.StatusOK || !strings.Contains(body, `"c"`) {
			t.Errorf("LIST = %d %s", code, body)
		}
		if _, lists := f.counted(); lists != 1 {
			t.Errorf("the controller answered %d lists, want 1", lists)
		}
		if !strings.Contains(f.logs.String(), "listed a namespace in the background") {
			t.Errorf("no log line of the listing in the background:\n%s", f.logs.String())
		}
	})
}

func TestAFailedListingInTheBackgroundWaitsAMinute(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFileFixture(t, &fileController{costsList: true, listErr: errors.New("the file is too large")})
		for _, n := range widgets {
			if code, body := f.get(t, "ns", n); code != http.StatusOK {
				t.Fatalf("GET %s = %d %s", n, code, body)
			}
			synctest.Wait()
		}
		if gets, lists := f.counted(); gets != 3 || lists != 1 {
			t.Errorf("the controller answered %d gets and %d lists, want 3 and 1: a failed listing is not tried again at once", gets, lists)
		}
		if got := f.prefetches(t, "failed"); got != 1 {
			t.Errorf("failed listings in the background: %v, want 1", got)
		}
		if !strings.Contains(f.logs.String(), "the file is too large") {
			t.Errorf("the warning does not say why the listing failed:\n%s", f.logs.String())
		}
		f.listsAfter(t, time.Minute+time.Second, 2)
	})
}

func TestAListingTooLargeForTheMemoIsNotReadAgainAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// Room for a resource, not for a listing of three.
		f := newFileFixture(t, &fileController{costsList: true}, server.WithCacheBytes(1200))
		for _, n := range widgets {
			if code, body := f.get(t, "ns", n); code != http.StatusOK {
				t.Fatalf("GET %s = %d %s", n, code, body)
			}
			synctest.Wait()
		}
		if got := f.prefetches(t, "unkept"); got != 1 {
			t.Errorf("listings too large to keep: %v, want 1", got)
		}
		if gets, lists := f.counted(); gets != 3 || lists != 1 {
			t.Errorf("the controller answered %d gets and %d lists, want 3 and 1", gets, lists)
		}
		// Not a minute later, as after a failure: ten.
		f.listsAfter(t, 2*time.Minute, 1)
		f.listsAfter(t, 9*time.Minute, 2)
	})
}

func TestShutdownCancelsAListingInTheBackground(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFileFixture(t, &fileController{costsList: true, block: make(chan struct{})})
		if code, body := f.get(t, "ns", "a"); code != http.StatusOK {
			t.Fatalf("GET a = %d %s", code, body)
		}
		synctest.Wait() // the listing waits for block
		f.srv.CloseWatches()
		synctest.Wait()
		if got := f.prefetches(t, "canceled"); got != 1 {
			t.Errorf("listings canceled: %v, want 1", got)
		}
		// None starts after.
		f.get(t, "ns", "b")
		synctest.Wait()
		if _, lists := f.counted(); lists != 1 {
			t.Errorf("the controller answered %d lists, want 1", lists)
		}
	})
}
