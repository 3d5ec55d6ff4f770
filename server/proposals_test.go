package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/internal/memsource"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/server"
	"github.com/cup-dev/cup/source"
)

// fakeProposals is a server.Proposals holding a fixed list, newest first.
type fakeProposals struct {
	list []*scm.Tracked
	err  error // returned by ListProposals when set
}

func (f *fakeProposals) ListProposals(ctx context.Context, filter server.ProposalFilter) ([]*scm.Tracked, error) {
	if f.err != nil {
		return nil, f.err
	}
	var out []*scm.Tracked
	for _, p := range f.list {
		if filter.Matches(p) {
			out = append(out, p)
		}
	}
	return out, ctx.Err()
}

func (f *fakeProposals) GetProposal(_ context.Context, id string) (*scm.Tracked, error) {
	for _, p := range f.list {
		if p.ID == id {
			return p, nil
		}
	}
	return nil, fmt.Errorf("proposal %q: %w", id, scm.ErrNotFound)
}

var _ server.Proposals = (*fakeProposals)(nil)

func flagResource(namespace, name string) source.ResourceRef {
	return source.ResourceRef{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Flag", Plural: "flags", Namespace: namespace, Name: name}
}

var proposalTime = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// demoProposals: 12 (open) changes default/new-checkout, 11 (merged)
// default/dark-mode, 10 (open, a draft) a service and staging/new-checkout.
func demoProposals() *fakeProposals {
	p := func(id string, st scm.State, rs ...source.ResourceRef) *scm.Tracked {
		return &scm.Tracked{
			Proposal: scm.Proposal{
				ID: id, URL: "https://git.example.com/demo/pulls/" + id, Title: "Change " + id,
				Head: "cup/change-" + id, Base: "main", State: st,
				CreatedAt: proposalTime, UpdatedAt: proposalTime.Add(time.Hour),
			},
			Provider: "gitea", Resources: rs,
		}
	}
	draft := p("10", scm.StateOpen,
		source.ResourceRef{Group: "apps.cup.dev", Version: "v1alpha1", Kind: "Service", Plural: "services", Namespace: "default", Name: "api"},
		flagResource("staging", "new-checkout"))
	draft.Draft = true
	return &fakeProposals{list: []*scm.Tracked{
		p("12", scm.StateOpen, flagResource("default", "new-checkout")),
		p("11", scm.StateMerged, flagResource("default", "dark-mode")),
		draft,
	}}
}

// proposingSource proposes every write that commits as proposal 7, as a
// source in proposal mode would, and records the resources each names.
type proposingSource struct {
	*memsource.Source
	mu        sync.Mutex
	resources [][]source.ResourceRef
}

func (s *proposingSource) Update(ctx context.Context, req *source.UpdateRequest) (*source.UpdateResult, error) {
	res, err := s.Source.Update(ctx, req)
	if err != nil || req.DryRun || res.Unchanged {
		return res, err
	}
	s.mu.Lock()
	s.resources = append(s.resources, slices.Clone(req.Resources))
	s.mu.Unlock()
	res.Proposal = &source.ProposalRef{ID: "7", URL: "https://git.example.com/demo/pulls/7"}
	return res, nil
}

func (s *proposingSource) written() [][]source.ResourceRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.resources)
}

// demoTypes are the types the harness serves for the demo repository.
func demoTypes(t *testing.T) []*server.Type {
	t.Helper()
	files, err := servertest.DemoFiles()
	if err != nil {
		t.Fatal(err)
	}
	types, err := servertest.Types(files, ".cup")
	if err != nil {
		t.Fatal(err)
	}
	return types
}

// serve serves srv on 127.0.0.1 for the test's duration and returns its URL.
func serve(t *testing.T, srv *server.Server) string {
	t.Helper()
	return servertest.Serve(t, srv.Handler())
}

// testLogger sends logs to the test's output.
func testLogger(t *testing.T) *slog.Logger { return servertest.Logger(t) }

// newProposalFixture serves a copy of the demo repository in branch mode,
// through a proposingSource, with p as the server's proposals.
func newProposalFixture(t *testing.T, p server.Proposals) *fixture {
	t.Helper()
	var src *proposingSource
	f := newFixture(t,
		servertest.WithSourceOptions(memsource.WithWriteMode(source.ModeBranch)),
		servertest.WithSource(func(s source.Source) source.Source {
			src = &proposingSource{Source: s.(*memsource.Source)}
			return src
		}),
		servertest.WithServerOptions(server.WithProposals(p)))
	f.proposing = src
	return f
}

func (f *fixture) proposalClient(p protocol) cupv1alpha1connect.ProposalServiceClient {
	return cupv1alpha1connect.NewProposalServiceClient(p.httpClient(), f.url, p.opts...)
}

func proposalIDs(ps []*cupv1alpha1.Proposal) string {
	ids := make([]string, 0, len(ps))
	for _, p := range ps {
		ids = append(ids, p.Id)
	}
	return strings.Join(ids, ",")
}

func wantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	wantCode(t, err, connect.CodeInvalidArgument)
	if !strings.Contains(err.Error(), field) {
		t.Fatalf("error %v does not name %s", err, field)
	}
}

func TestProposals(t *testing.T) {
	t.Parallel()
	newFixture := func(t *testing.T) *fixture { return newProposalFixture(t, demoProposals()) }
	eachProtocolWith(t, newFixture, func(t *testing.T, f *fixture, p protocol) {
		ps := f.proposalClient(p)
		ctx := t.Context()
		const (
			open   = cupv1alpha1.ProposalState_PROPOSAL_STATE_OPEN
			merged = cupv1alpha1.ProposalState_PROPOSAL_STATE_MERGED
		)
		for _, tc := range []struct {
			name string
			req  *cupv1alpha1.ListProposalsRequest
			want string
		}{
			{"all", &cupv1alpha1.ListProposalsRequest{}, "12,11,10"},
			{"open", &cupv1alpha1.ListProposalsRequest{State: open}, "12,10"},
			{"merged", &cupv1alpha1.ListProposalsRequest{State: merged}, "11"},
			{"one resource", &cupv1alpha1.ListProposalsRequest{Group: "flags.cup.dev", Plural: "flags", Namespace: "default", Name: "new-checkout"}, "12"},
			{"a namespace", &cupv1alpha1.ListProposalsRequest{Namespace: "staging"}, "10"},
			{"a type", &cupv1alpha1.ListProposalsRequest{Group: "flags.cup.dev", Plural: "flags"}, "12,11,10"},
			{"open in a namespace", &cupv1alpha1.ListProposalsRequest{State: open, Namespace: "default"}, "12,10"},
			{"nothing", &cupv1alpha1.ListProposalsRequest{Group: "nope.cup.dev"}, ""},
		} {
			res, err := ps.ListProposals(ctx, connect.NewRequest(tc.req))
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got := proposalIDs(res.Msg.Proposals); got != tc.want {
				t.Fatalf("%s: ListProposals = %s, want %s", tc.name, got, tc.want)
			}
		}

		got, err := ps.GetProposal(ctx, connect.NewRequest(&cupv1alpha1.GetProposalRequest{Id: "10"}))
		if err != nil {
			t.Fatal(err)
		}
		pr := got.Msg.Proposal
		if pr.Id != "10" || pr.Url != "https://git.example.com/demo/pulls/10" || pr.Title != "Change 10" || pr.State != open ||
			pr.Branch != "cup/change-10" || pr.Base != "main" || !pr.Draft || pr.Provider != "gitea" ||
			!pr.CreateTime.AsTime().Equal(proposalTime) || !pr.UpdateTime.AsTime().Equal(proposalTime.Add(time.Hour)) ||
			len(pr.Resources) != 2 || pr.Resources[1].Kind != "Flag" || pr.Resources[1].Version != "v1alpha1" ||
			pr.Resources[1].Namespace != "staging" || pr.Resources[0].Plural != "services" {
			t.Fatalf("GetProposal(10) = %v", pr)
		}
		_, err = ps.GetProposal(ctx, connect.NewRequest(&cupv1alpha1.GetProposalRequest{Id: "99"}))
		wantCode(t, err, connect.CodeNotFound)
		if !strings.Contains(err.Error(), `"99"`) {
			t.Fatalf("error %v does not name the proposal", err)
		}
		for _, id := range []string{"", "x", "../1", "-1", "1 ", strings.Repeat("1", 21)} {
			_, err := ps.GetProposal(ctx, connect.NewRequest(&cupv1alpha1.GetProposalRequest{Id: id}))
			wantInvalid(t, err, "id")
		}
		for _, tc := range []struct {
			req   *cupv1alpha1.ListProposalsRequest
			field string
		}{
			{&cupv1alpha1.ListProposalsRequest{Name: "new-checkout"}, "name needs namespace and plural"},
			{&cupv1alpha1.ListProposalsRequest{Name: "new-checkout", Namespace: "default"}, "name needs namespace and plural"},
			{&cupv1alpha1.ListProposalsRequest{Namespace: "Default"}, "namespace"},
			{&cupv1alpha1.ListProposalsRequest{Group: "../x"}, "group"},
			{&cupv1alpha1.ListProposalsRequest{Plural: "a/b"}, "plural"},
			{&cupv1alpha1.ListProposalsRequest{State: 9}, "state"},
		} {
			_, err := ps.ListProposals(ctx, connect.NewRequest(tc.req))
			wantInvalid(t, err, tc.field)
		}

		// A Get lists the open proposals changing the resource, whatever
		// revision it reads.
		rs, _ := f.clients(p)
		for _, tc := range []struct{ name, want string }{{"new-checkout", "12"}, {"dark-mode", ""}, {"search-v2", ""}} {
			res, err := rs.Get(ctx, connect.NewRequest(getReq(tc.name, "")))
			if err != nil {
				t.Fatal(err)
			}
			if got := proposalIDs(res.Msg.Proposals); got != tc.want {
				t.Fatalf("Get(%s).proposals = %s, want %s", tc.name, got, tc.want)
			}
		}
		res, err := rs.Get(ctx, connect.NewRequest(getReq("new-checkout", "main")))
		if err != nil || proposalIDs(res.Msg.Proposals) != "12" || res.Msg.Proposals[0].Url == "" {
			t.Fatalf("Get(new-checkout at main) = %v, %v", res, err)
		}
	})
}

func TestWriteProposal(t *testing.T) {
	t.Parallel()
	newFixture := func(t *testing.T) *fixture { return newProposalFixture(t, demoProposals()) }
	eachProtocolWith(t, newFixture, func(t *testing.T, f *fixture, p protocol) {
		rs, _ := f.clients(p)
		ctx := t.Context()

		put, err := rs.Put(ctx, connect.NewRequest(putReq(flag(t, "beta-banner", true, nil))))
		if err != nil {
			t.Fatal(err)
		}
		r := put.Msg.Result
		want := &cupv1alpha1.Proposal{
			Id: "7", Url: "https://git.example.com/demo/pulls/7", State: cupv1alpha1.ProposalState_PROPOSAL_STATE_OPEN,
			Branch: r.Branch, Base: "main",
		}
		if !strings.HasPrefix(r.Branch, "cup/") || r.Proposal.String() != want.String() {
			t.Fatalf("Put.result = %v, want its proposal %v", r, want)
		}

		// To a named branch, and in a change set (whose base the server
		// does not know).
		named := putReq(flag(t, "named", true, nil))
		named.Revision = "main"
		if res, err := rs.Put(ctx, connect.NewRequest(named)); err != nil || res.Msg.Result.Proposal.GetBase() != "main" {
			t.Fatalf("Put(revision main) = %v, %v", res, err)
		}
		del := deleteReq("dark-mode")
		del.ChangeSet = r.Branch
		d, err := rs.Delete(ctx, connect.NewRequest(del))
		if err != nil {
			t.Fatal(err)
		}
		if pr := d.Msg.Result.Proposal; pr.GetId() != "7" || pr.GetBranch() != r.Branch || pr.GetBase() != "" {
			t.Fatalf("Delete in change set: proposal = %v", pr)
		}

		// A dry run proposes nothing.
		dry := putReq(flag(t, "beta-banner", false, nil))
		dry.DryRun = true
		if res, err := rs.Put(ctx, connect.NewRequest(dry)); err != nil || res.Msg.Result.Proposal != nil {
			t.Fatalf("dry run = %v, %v", res, err)
		}

		var names []string
		for _, refs := range f.proposing.written() {
			if len(refs) != 1 {
				t.Fatalf("a write named %v, want one resource", refs)
			}
			names = append(names, fmt.Sprintf("%+v", refs[0]))
		}
		wantNames := []string{
			fmt.Sprintf("%+v", flagResource("default", "beta-banner")),
			fmt.Sprintf("%+v", flagResource("default", "named")),
			fmt.Sprintf("%+v", flagResource("default", "dark-mode")),
		}
		if !slices.Equal(names, wantNames) {
			t.Fatalf("UpdateRequest.Resources = %v, want %v", names, wantNames)
		}
	})
}

func TestProposalsREST(t *testing.T) {
	t.Parallel()
	f := newProposalFixture(t, demoProposals())
	const path = "/apis/cup.dev/v1alpha1/proposals"

	ids := func(r restResponse) string {
		t.Helper()
		var out []string
		list, ok := r.json(t)["proposals"].([]any)
		if !ok {
			t.Fatalf("no proposals array in %s", r.body)
		}
		for _, p := range list {
			out = append(out, p.(map[string]any)["id"].(string))
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct{ query, want string }{
		{"", "12,11,10"},
		{"?state=open", "12,10"},
		{"?state=PROPOSAL_STATE_MERGED", "11"},
		{"?state=", "12,11,10"},
		{"?group=flags.cup.dev&plural=flags&namespace=default&name=new-checkout", "12"},
		{"?namespace=staging&state=closed", ""},
	} {
		r := f.do(t, "GET", path+tc.query, "")
		if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s = %d %s", tc.query, r.status, r.body)
		}
		if got := ids(r); got != tc.want {
			t.Fatalf("GET %s = %s, want %s", tc.query, got, tc.want)
		}
	}
	if r := f.do(t, "GET", path+"?state=closed", ""); string(r.body) != `{"proposals":[]}` {
		t.Fatalf("an empty list = %s", r.body)
	}

	one := f.do(t, "GET", path+"/12", "")
	m := one.json(t)
	if one.status != 200 || m["id"] != "12" || m["state"] != "PROPOSAL_STATE_OPEN" || m["createTime"] != "2026-05-01T12:00:00Z" ||
		m["branch"] != "cup/change-12" || m["url"] != "https://git.example.com/demo/pulls/12" {
		t.Fatalf("GET %s/12 = %d %s", path, one.status, one.body)
	}
	if r := f.do(t, "GET", path+"/99", ""); r.status != 404 || r.json(t)["code"] != "not_found" {
		t.Fatalf("GET %s/99 = %d %s", path, r.status, r.body)
	}
	for _, tc := range []struct{ path, field string }{
		{"/x", "id"},
		{"/..%2F1", "id"},
		{"/" + strings.Repeat("9", 21), "id"},
		{"?state=pending", "state"},
		{"?name=new-checkout", "name needs namespace and plural"},
		{"?namespace=Default", "namespace"},
	} {
		r := f.do(t, "GET", path+tc.path, "")
		if m := r.json(t); r.status != 400 || m["code"] != "invalid_argument" || !strings.Contains(m["message"].(string), tc.field) {
			t.Fatalf("GET %s%s = %d %s, want invalid_argument naming %s", path, tc.path, r.status, r.body, tc.field)
		}
	}

	// A write answers with its proposal.
	put := f.do(t, "PUT", flagsPath+"/beta-banner", `{"spec": {"enabled": true}}`)
	result, _ := put.json(t)["result"].(map[string]any)
	pr, _ := result["proposal"].(map[string]any)
	if put.status != 202 || pr["id"] != "7" || pr["state"] != "PROPOSAL_STATE_OPEN" || pr["branch"] != result["branch"] || pr["base"] != "main" {
		t.Fatalf("PUT = %d %s", put.status, put.body)
	}
}

// TestProposalsFailing: a Get answers without proposals when they cannot
// be listed; the ProposalService says why.
func TestProposalsFailing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		code connect.Code
		says string
	}{
		{"SCM down", fmt.Errorf("listing pull requests: %w", scm.ErrUnavailable), connect.CodeUnavailable, "retry later"},
		{"credentials refused", fmt.Errorf("listing pull requests: %w", scm.ErrUnauthenticated), connect.CodeUnavailable, "not yours"},
		{"no repository", fmt.Errorf("listing pull requests: %w", scm.ErrNotFound), connect.CodeUnavailable, "cup's repository"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := demoProposals()
			fake.err = tc.err
			f := newProposalFixture(t, fake)
			rs, _ := f.clients(protocols[0])
			got, err := rs.Get(t.Context(), connect.NewRequest(getReq("new-checkout", "")))
			if err != nil || got.Msg.Resource.GetMetadata().GetName() != "new-checkout" || len(got.Msg.Proposals) != 0 {
				t.Fatalf("Get = %v, %v; want the resource without proposals", got, err)
			}
			_, err = f.proposalClient(protocols[0]).ListProposals(t.Context(), connect.NewRequest(&cupv1alpha1.ListProposalsRequest{}))
			wantCode(t, err, tc.code)
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %v does not say %q", err, tc.says)
			}
		})
	}
}

func TestProposalsWithoutSCM(t *testing.T) {
	t.Parallel()
	eachProtocol(t, func(t *testing.T, f *fixture, p protocol) {
		ps := f.proposalClient(p)
		ctx := t.Context()
		_, err := ps.ListProposals(ctx, connect.NewRequest(&cupv1alpha1.ListProposalsRequest{}))
		wantCode(t, err, connect.CodeFailedPrecondition)
		if !strings.Contains(err.Error(), "no SCM is configured") {
			t.Fatalf("error %v does not say why", err)
		}
		_, err = ps.GetProposal(ctx, connect.NewRequest(&cupv1alpha1.GetProposalRequest{Id: "1"}))
		wantCode(t, err, connect.CodeFailedPrecondition)
		rs, _ := f.clients(p)
		got, err := rs.Get(ctx, connect.NewRequest(getReq("new-checkout", "")))
		if err != nil || len(got.Msg.Proposals) != 0 {
			t.Fatalf("Get = %v, %v", got, err)
		}
		put, err := rs.Put(ctx, connect.NewRequest(putReq(flag(t, "beta-banner", true, nil))))
		if err != nil || put.Msg.Result.Proposal != nil {
			t.Fatalf("Put = %v, %v; want no proposal", put, err)
		}
	})
	f := newFixture(t)
	for _, path := range []string{"/apis/cup.dev/v1alpha1/proposals", "/apis/cup.dev/v1alpha1/proposals/1"} {
		r := f.do(t, "GET", path, "")
		if m := r.json(t); r.status != 400 || m["code"] != "failed_precondition" || !strings.Contains(m["message"].(string), "no SCM is configured") {
			t.Fatalf("GET %s = %d %s", path, r.status, r.body)
		}
	}
}

func TestReservedGroup(t *testing.T) {
	t.Parallel()
	src, err := memsource.Open(map[string][]byte{"x": []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	types := demoTypes(t)
	typ := *types[0]
	typ.Group, typ.Plural = "cup.dev", "proposals"
	_, err = server.New(src, []*server.Type{&typ})
	if err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("New with a type in cup.dev: %v, want it refused", err)
	}
}
