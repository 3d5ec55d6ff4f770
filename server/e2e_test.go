package server_test

import (
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"google.golang.org/protobuf/types/known/structpb"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/source"
)

// fixture is a server on 127.0.0.1 serving a fresh copy of the demo
// repository over HTTP/1.1 and h2c: by default with the unit-level harness
// (newFixture), or wired by internal/app (newAppFixture).
type fixture struct {
	app *app.App // nil for a server wired without internal/app
	url string
	// src is the source the server serves.
	src source.Source
	// repo is the repository src is over.
	repo repository
	// proposing is the source of a fixture from newProposalFixture.
	proposing *proposingSource
}

// newAppFixture is a cupd wired by internal/app, serving a copy of the
// demo repository on disk, WASM controller included.
func newAppFixture(t *testing.T, opts ...func(*app.Options)) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the whole application, WASM included; skipped with -short")
	}
	o := app.Options{Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})), WASMRuntime: wasmRuntime(t)}
	for _, f := range opts {
		f(&o)
	}
	a, err := app.Open(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	url := servertest.Serve(t, a.Handler())
	return &fixture{app: a, url: url, src: a.Source(), repo: diskRepository(a.Repository())}
}

// readRefList lists every reference of the repository at dir.
func readRefList(dir string) ([]string, error) {
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return nil, err
	}
	it, err := repo.References()
	if err != nil {
		return nil, err
	}
	var out []string
	_ = it.ForEach(func(r *plumbing.Reference) error {
		out = append(out, r.String())
		return nil
	})
	return out, nil
}

type protocol struct {
	name string
	opts []connect.ClientOption
	h2c  bool
}

var protocols = []protocol{
	{name: "connect"},
	{name: "connect-json", opts: []connect.ClientOption{connect.WithProtoJSON()}},
	{name: "grpc", opts: []connect.ClientOption{connect.WithGRPC()}, h2c: true},
	{name: "grpc-web", opts: []connect.ClientOption{connect.WithGRPCWeb()}},
}

func (p protocol) httpClient() *http.Client {
	if !p.h2c {
		return http.DefaultClient
	}
	protos := new(http.Protocols)
	protos.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: protos}}
}

func (f *fixture) clients(p protocol) (cupv1alpha1connect.ResourceServiceClient, cupv1alpha1connect.DiscoveryServiceClient) {
	hc := p.httpClient()
	return cupv1alpha1connect.NewResourceServiceClient(hc, f.url, p.opts...),
		cupv1alpha1connect.NewDiscoveryServiceClient(hc, f.url, p.opts...)
}

// eachProtocol runs test in parallel for each protocol, with a fixture of
// its own.
func eachProtocol(t *testing.T, test func(t *testing.T, f *fixture, p protocol)) {
	t.Helper()
	eachProtocolWith(t, func(t *testing.T) *fixture { return newFixture(t) }, test)
}

// eachProtocolWith is eachProtocol with fixtures from newFixture.
func eachProtocolWith(t *testing.T, newFixture func(t *testing.T) *fixture, test func(t *testing.T, f *fixture, p protocol)) {
	t.Helper()
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			test(t, newFixture(t), p)
		})
	}
}

func flagRef(name string) (string, string, string, string, string) {
	return "flags.cup.dev", "v1alpha1", "flags", "default", name
}

func getReq(name, rev string) *cupv1alpha1.GetRequest {
	g, v, p, ns, n := flagRef(name)
	return &cupv1alpha1.GetRequest{Group: g, Version: v, Plural: p, Namespace: ns, Name: n, Revision: rev}
}

func listReq(selector string, size int32, token string) *cupv1alpha1.ListRequest {
	g, v, p, ns, _ := flagRef("")
	return &cupv1alpha1.ListRequest{Group: g, Version: v, Plural: p, Namespace: ns, LabelSelector: selector, PageSize: size, PageToken: token}
}

func flag(t *testing.T, name string, enabled bool, labels map[string]string) *cupv1alpha1.Resource {
	t.Helper()
	spec, err := structpb.NewStruct(map[string]any{"enabled": enabled, "rollout": 10})
	if err != nil {
		t.Fatal(err)
	}
	return &cupv1alpha1.Resource{Metadata: &cupv1alpha1.ObjectMeta{Name: name, Labels: labels}, Spec: spec}
}

func putReq(r *cupv1alpha1.Resource) *cupv1alpha1.PutRequest {
	g, v, p, ns, n := flagRef(r.GetMetadata().GetName())
	return &cupv1alpha1.PutRequest{Group: g, Version: v, Plural: p, Namespace: ns, Name: n, Resource: r}
}

func deleteReq(name string) *cupv1alpha1.DeleteRequest {
	g, v, p, ns, n := flagRef(name)
	return &cupv1alpha1.DeleteRequest{Group: g, Version: v, Plural: p, Namespace: ns, Name: n}
}

func names(items []*cupv1alpha1.Resource) []string {
	out := make([]string, 0, len(items))
	for _, r := range items {
		out = append(out, r.GetMetadata().GetName())
	}
	return out
}

func wantCode(t *testing.T, err error, code connect.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", code)
	}
	if got := connect.CodeOf(err); got != code {
		t.Fatalf("got code %v (%v), want %v", got, err, code)
	}
}

var commitID = regexp.MustCompile(`^[0-9a-f]{40}$`)

func TestProtocols(t *testing.T) {
	t.Parallel()
	eachProtocol(t, func(t *testing.T, f *fixture, p protocol) {
		rs, ds := f.clients(p)
		ctx := t.Context()
		initial := f.head(t)

		// Discovery.
		defs, err := ds.ListDefinitions(ctx, connect.NewRequest(&cupv1alpha1.ListDefinitionsRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		var defNames []string
		for _, d := range defs.Msg.Definitions {
			defNames = append(defNames, d.Name)
		}
		if got, want := strings.Join(defNames, ","), "bundles.flags.cup.dev,configlayers.config.cup.dev,flagbundles.flags.cup.dev,flags.flags.cup.dev,serviceconfigs.config.cup.dev,services.apps.cup.dev"; got != want {
			t.Fatalf("definitions = %s, want %s", got, want)
		}
		def, err := ds.GetDefinition(ctx, connect.NewRequest(&cupv1alpha1.GetDefinitionRequest{Group: "flags.cup.dev", Name: "fl"}))
		if err != nil {
			t.Fatal(err)
		}
		if def.Msg.Definition.Names.Kind != "Flag" || def.Msg.Definition.Versions[0].Schema.GetFields()["properties"] == nil {
			t.Fatalf("GetDefinition(fl) = %v", def.Msg.Definition)
		}

		// Get.
		got, err := rs.Get(ctx, connect.NewRequest(getReq("new-checkout", "")))
		if err != nil {
			t.Fatal(err)
		}
		r := got.Msg.Resource
		if r.ApiVersion != "flags.cup.dev/v1alpha1" || r.Kind != "Flag" || r.Metadata.Namespace != "default" ||
			r.Metadata.Labels["team"] != "payments" || !r.Spec.Fields["enabled"].GetBoolValue() ||
			r.Metadata.ResourceVersion == "" || got.Msg.Commit != initial {
			t.Fatalf("Get = %v at %s", r, got.Msg.Commit)
		}
		originalVersion := r.Metadata.ResourceVersion

		// List, with selectors.
		for _, tc := range []struct{ selector, want string }{
			{"", "dark-mode,new-checkout,search-v2"},
			{"team in (payments,web)", "dark-mode,new-checkout"},
			{"team notin (payments)", "dark-mode,search-v2"},
			{"team!=web", "new-checkout,search-v2"},
			{"team=search", "search-v2"},
			{"team==search", "search-v2"},
			{"team", "dark-mode,new-checkout,search-v2"},
			{"!team", ""},
		} {
			l, err := rs.List(ctx, connect.NewRequest(listReq(tc.selector, 0, "")))
			if err != nil {
				t.Fatalf("List(%q): %v", tc.selector, err)
			}
			if got := strings.Join(names(l.Msg.Items), ","); got != tc.want || l.Msg.Commit != initial || l.Msg.NextPageToken != "" {
				t.Fatalf("List(%q) = %s at %s (next %q), want %s", tc.selector, got, l.Msg.Commit, l.Msg.NextPageToken, tc.want)
			}
		}

		// Pages: the first page pins the commit, so a write between pages does not shift them.
		p1, err := rs.List(ctx, connect.NewRequest(listReq("", 2, "")))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(names(p1.Msg.Items), ","); got != "dark-mode,new-checkout" || p1.Msg.NextPageToken == "" {
			t.Fatalf("page 1 = %s, next %q", got, p1.Msg.NextPageToken)
		}

		// Put: create.
		created, err := rs.Put(ctx, connect.NewRequest(putReq(flag(t, "beta-banner", true, map[string]string{"team": "web"}))))
		if err != nil {
			t.Fatal(err)
		}
		res := created.Msg.Result
		if res.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED || !commitID.MatchString(res.Commit) ||
			res.BaseCommit != initial || res.Branch != "main" || len(res.Changes) != 1 ||
			res.Changes[0].Path != "flags/default/beta-banner.yaml" || res.Changes[0].Operation != cupv1alpha1.FileOperation_FILE_OPERATION_CREATE {
			t.Fatalf("Put(create) = %v", res)
		}
		if f.head(t) != res.Commit {
			t.Fatalf("branch is at %s, want %s", f.head(t), res.Commit)
		}
		p2, err := rs.List(ctx, connect.NewRequest(listReq("", 2, p1.Msg.NextPageToken)))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(names(p2.Msg.Items), ","); got != "search-v2" || p2.Msg.NextPageToken != "" || p2.Msg.Commit != initial {
			t.Fatalf("page 2 = %s at %s, next %q", got, p2.Msg.Commit, p2.Msg.NextPageToken)
		}
		afterCreate, err := rs.Get(ctx, connect.NewRequest(getReq("beta-banner", "")))
		if err != nil {
			t.Fatal(err)
		}
		if afterCreate.Msg.Resource.Metadata.ResourceVersion != created.Msg.Resource.Metadata.ResourceVersion {
			t.Fatalf("stored version %s, put answered %s", afterCreate.Msg.Resource.Metadata.ResourceVersion, created.Msg.Resource.Metadata.ResourceVersion)
		}

		// Put: unchanged.
		same, err := rs.Put(ctx, connect.NewRequest(putReq(flag(t, "beta-banner", true, map[string]string{"team": "web"}))))
		if err != nil {
			t.Fatal(err)
		}
		if same.Msg.Result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED || same.Msg.Result.Commit != "" || f.head(t) != res.Commit {
			t.Fatalf("Put(unchanged) = %v", same.Msg.Result)
		}

		// Put: stale precondition, then the right one.
		stale := putReq(flag(t, "beta-banner", false, nil))
		stale.ResourceVersion = originalVersion
		_, err = rs.Put(ctx, connect.NewRequest(stale))
		wantCode(t, err, connect.CodeAborted)
		fresh := putReq(flag(t, "beta-banner", false, nil))
		fresh.ResourceVersion = created.Msg.Resource.Metadata.ResourceVersion
		updated, err := rs.Put(ctx, connect.NewRequest(fresh))
		if err != nil {
			t.Fatal(err)
		}
		if updated.Msg.Result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED || updated.Msg.Result.Changes[0].Operation != cupv1alpha1.FileOperation_FILE_OPERATION_UPDATE {
			t.Fatalf("Put(update) = %v", updated.Msg.Result)
		}
		afterUpdate := f.head(t)

		// Dry run: the diff, and nothing written.
		dry := putReq(flag(t, "new-checkout", false, map[string]string{"team": "payments"}))
		dry.DryRun = true
		d, err := rs.Put(ctx, connect.NewRequest(dry))
		if err != nil {
			t.Fatal(err)
		}
		if d.Msg.Result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_DRY_RUN || d.Msg.Result.Commit != "" ||
			len(d.Msg.Result.Changes) != 1 || !strings.Contains(d.Msg.Result.Changes[0].Diff, "-  enabled: true") ||
			!strings.Contains(d.Msg.Result.Changes[0].Diff, "+  enabled: false") {
			t.Fatalf("Put(dry run) = %v", d.Msg.Result)
		}
		if f.head(t) != afterUpdate {
			t.Fatal("dry run moved the branch")
		}

		// Delete, then it is gone, and a second delete is NotFound.
		del, err := rs.Delete(ctx, connect.NewRequest(deleteReq("beta-banner")))
		if err != nil {
			t.Fatal(err)
		}
		if del.Msg.Result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED || del.Msg.Result.Changes[0].Operation != cupv1alpha1.FileOperation_FILE_OPERATION_DELETE {
			t.Fatalf("Delete = %v", del.Msg.Result)
		}
		_, err = rs.Get(ctx, connect.NewRequest(getReq("beta-banner", "")))
		wantCode(t, err, connect.CodeNotFound)
		_, err = rs.Delete(ctx, connect.NewRequest(deleteReq("beta-banner")))
		wantCode(t, err, connect.CodeNotFound)

		// Reads at an older commit and at a tag.
		old, err := rs.Get(ctx, connect.NewRequest(getReq("beta-banner", afterUpdate)))
		if err != nil {
			t.Fatal(err)
		}
		if old.Msg.Commit != afterUpdate || old.Msg.Resource.Spec.Fields["enabled"].GetBoolValue() {
			t.Fatalf("Get at %s = %v", afterUpdate, old.Msg.Resource)
		}
		if _, err := f.repo.Tag("v1.0.0", initial, "first\n"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.repo.Tag("v1.0.0-light", initial, ""); err != nil {
			t.Fatal(err)
		}
		for _, tag := range []string{"v1.0.0", "v1.0.0-light", "refs/tags/v1.0.0-light", initial, initial[:10]} {
			l, err := rs.List(ctx, connect.NewRequest(&cupv1alpha1.ListRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags", Namespace: "default", Revision: tag}))
			if err != nil {
				t.Fatalf("List at %s: %v", tag, err)
			}
			if got := strings.Join(names(l.Msg.Items), ","); got != "dark-mode,new-checkout,search-v2" || l.Msg.Commit != initial {
				t.Fatalf("List at %s = %s at %s", tag, got, l.Msg.Commit)
			}
		}
		_, err = rs.Put(ctx, connect.NewRequest(&cupv1alpha1.PutRequest{
			Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags", Namespace: "default", Name: "x",
			Resource: flag(t, "x", true, nil), Revision: "v1.0.0-light",
		}))
		wantCode(t, err, connect.CodeFailedPrecondition)
	})
}
