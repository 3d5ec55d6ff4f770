package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/memsource"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/server"
	"github.com/cup-dev/cup/source"
)

// gated holds the demo's flag controller's calls: Get waits for the call's
// context to end when slowGet is set, and Put waits for release.
type gated struct {
	controller.Controller
	slowGet bool
	entered chan struct{}
	release chan struct{}
}

func (g *gated) Get(ctx context.Context, req *controller.GetRequest) (*controller.Resource, error) {
	if g.slowGet {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return g.Controller.Get(ctx, req)
}

func (g *gated) Put(ctx context.Context, req *controller.PutRequest) error {
	g.entered <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Controller.Put(ctx, req)
}

// newGatedFixture serves the demo repository with its flags controller
// gated, with opts.
// Writes run in branch mode, each on a change set of its own, so that they
// reach the controller at the same time.
func newGatedFixture(t *testing.T, g *gated, opts ...server.Option) *fixture {
	t.Helper()
	return newFixture(t,
		servertest.WithTypes(func(_ testing.TB, types []*server.Type) []*server.Type {
			for _, ty := range types {
				if ty.Plural == "flags" && ty.Group == "flags.cup.dev" {
					g.Controller = ty.Controller
					ty.Controller = g
				}
			}
			return types
		}),
		servertest.WithSourceOptions(memsource.WithWriteMode(source.ModeBranch)),
		servertest.WithServerOptions(opts...))
}

func TestMaxListPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, servertest.WithServerOptions(server.WithMaxListPage(2)))
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			rs, _ := f.clients(p)
			_, err := rs.List(t.Context(), connect.NewRequest(listReq("", 3, "")))
			wantCode(t, err, connect.CodeInvalidArgument)
			if !strings.Contains(err.Error(), "--max-list-page") || !strings.Contains(err.Error(), "at most 2") {
				t.Fatalf("error %q does not name the limit", err)
			}
			// A list that asks for no number gets pages of the limit.
			var all []string
			token := ""
			for pages := 0; ; pages++ {
				res, err := rs.List(t.Context(), connect.NewRequest(listReq("", 0, token)))
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Msg.Items) > 2 || pages > 10 {
					t.Fatalf("page of %d items, page %d", len(res.Msg.Items), pages)
				}
				all = append(all, names(res.Msg.Items)...)
				if token = res.Msg.NextPageToken; token == "" {
					break
				}
			}
			if len(all) < 3 {
				t.Fatalf("paged listing = %v, want every flag of the demo (3 or more)", all)
			}
		})
	}
	r := f.do(t, "GET", flagsPath+"?limit=3", "")
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "--max-list-page") {
		t.Fatalf("REST list over the limit = %d %s", r.status, r.body)
	}
	if r := f.do(t, "GET", flagsPath+"?limit=2", ""); r.status != http.StatusOK {
		t.Fatalf("REST list at the limit = %d %s", r.status, r.body)
	}
}

func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	f := newGatedFixture(t, &gated{slowGet: true}, server.WithRequestTimeout(200*time.Millisecond))
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			rs, _ := f.clients(p)
			start := time.Now()
			_, err := rs.Get(t.Context(), connect.NewRequest(getReq("dark-mode", "")))
			wantCode(t, err, connect.CodeDeadlineExceeded)
			if !strings.Contains(err.Error(), "--request-timeout") || !strings.Contains(err.Error(), "200ms") {
				t.Fatalf("error %q does not name the limit", err)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Fatalf("a call bounded by 200ms took %v", d)
			}
		})
	}
	r := f.do(t, "GET", flagsPath+"/dark-mode", "")
	if r.status != http.StatusGatewayTimeout || !strings.Contains(string(r.body), "--request-timeout") {
		t.Fatalf("REST get past the timeout = %d %s", r.status, r.body)
	}
}

func TestMaxConcurrentWrites(t *testing.T) {
	t.Parallel()
	const limit = 2
	g := &gated{entered: make(chan struct{}, limit), release: make(chan struct{})}
	f := newGatedFixture(t, g, server.WithMaxConcurrentWrites(limit))
	rs, _ := f.clients(protocols[0])
	ctx := t.Context()

	errs := make(chan error, limit)
	for i := range limit {
		go func() {
			_, err := rs.Put(ctx, connect.NewRequest(putReq(flag(t, "held-"+string(rune('a'+i)), true, nil))))
			errs <- err
		}()
	}
	for range limit {
		<-g.entered
	}
	// Every slot is taken: the next write is refused at once, over Connect
	// and REST, and naming the limit.
	_, err := rs.Put(ctx, connect.NewRequest(putReq(flag(t, "one-too-many", true, nil))))
	wantCode(t, err, connect.CodeResourceExhausted)
	if !strings.Contains(err.Error(), "--max-concurrent-writes") {
		t.Fatalf("error %q does not name the limit", err)
	}
	r := f.do(t, "DELETE", flagsPath+"/dark-mode", "")
	if r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), "--max-concurrent-writes") {
		t.Fatalf("REST delete past the limit = %d %s", r.status, r.body)
	}
	// Reads are not writes.
	if _, err := rs.Get(ctx, connect.NewRequest(getReq("dark-mode", ""))); err != nil {
		t.Fatal(err)
	}

	close(g.release)
	for range limit {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// With the slots free, writes go through again.
	go func() {
		for range g.entered {
		}
	}()
	res, err := rs.Put(ctx, connect.NewRequest(putReq(flag(t, "after", true, nil))))
	if err != nil || res.Msg.Result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED {
		t.Fatalf("Put after the slots freed = %v, %v", res, err)
	}
	close(g.entered)
}

// TestMaxInflightRequestBytes: while one write holds nearly all of the
// bytes the server may hold of request bodies, another write is refused
// at once, over REST and Connect, naming the limit; once the first ends,
// its bytes are free again.
func TestMaxInflightRequestBytes(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	g := &gated{entered: make(chan struct{}, 1), release: make(chan struct{})}
	f := newGatedFixture(t, g, server.WithMaxInflightRequestBytes(limit))
	rs, _ := f.clients(protocols[0])

	held := `{"spec": {"enabled": true}` + strings.Repeat(" ", limit+16<<10-40) + `}` // 16 KiB are free

	done := make(chan restResponse, 1)
	go func() { done <- f.do(t, "PUT", flagsPath+"/held", held) }()
	<-g.entered

	big := `{"spec": {"enabled": false}` + strings.Repeat(" ", 20<<10) + `}`
	r := f.do(t, "PUT", flagsPath+"/refused", big)
	if r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), "--max-inflight-request-bytes") {
		t.Fatalf("REST put past the limit = %d %s", r.status, r.body)
	}
	bigFlag := flag(t, "refused-too", true, nil)
	bigFlag.Metadata.Annotations = map[string]string{"padding": strings.Repeat("x", 20<<10)}
	_, err := rs.Put(t.Context(), connect.NewRequest(putReq(bigFlag)))
	wantCode(t, err, connect.CodeResourceExhausted)
	if !strings.Contains(err.Error(), "--max-inflight-request-bytes") {
		t.Fatalf("error %q does not name the limit", err)
	}
	// Small calls are not refused.
	if _, err := rs.Get(t.Context(), connect.NewRequest(getReq("dark-mode", ""))); err != nil {
		t.Fatal(err)
	}

	close(g.release)
	if r := <-done; r.status != http.StatusAccepted {
		t.Fatalf("the held put = %d %s", r.status, r.body)
	}
	go func() {
		for range g.entered {
		}
	}()
	if _, err := rs.Put(t.Context(), connect.NewRequest(putReq(flag(t, "after", true, nil)))); err != nil {
		t.Fatalf("a put after the held one ended: %v", err)
	}
	close(g.entered)
}

// TestCompressedBodiesCountAsTheirLimit: a gzipped body of a few KiB may
// grow to --max-request-bytes; it counts as that much from its first byte,
// so a budget smaller than one such body refuses it, and takes plain calls.
func TestCompressedBodiesCountAsTheirLimit(t *testing.T) {
	t.Parallel()
	g := &gated{entered: make(chan struct{}, 4), release: make(chan struct{})}
	close(g.release)
	f := newGatedFixture(t, g, server.WithMaxInflightRequestBytes(1<<20))
	plain, _ := f.clients(protocols[0])
	if _, err := plain.Put(t.Context(), connect.NewRequest(putReq(flag(t, "plain", true, nil)))); err != nil {
		t.Fatalf("an uncompressed put: %v", err)
	}
	for _, p := range []protocol{protocols[0], protocols[2]} { // Connect and gRPC
		p.opts = append(p.opts, connect.WithSendGzip())
		gz, _ := f.clients(p)
		_, err := gz.Put(t.Context(), connect.NewRequest(putReq(flag(t, "gzipped", true, nil))))
		wantCode(t, err, connect.CodeResourceExhausted)
		if !strings.Contains(err.Error(), "--max-inflight-request-bytes") {
			t.Fatalf("%s: error %q does not name the limit", p.name, err)
		}
	}
}
