package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/server"
)

const (
	namespacesPath = "/apis/cup.dev/v1alpha1/namespaces"
	allFlagsPath   = "/apis/flags.cup.dev/v1alpha1/flags"
	// flagCounts are the demo's namespaces of flags, as namespacesText
	// has them.
	flagCounts = "default: flags.flags.cup.dev 3\nproduction: flags.flags.cup.dev 1\nstaging: flags.flags.cup.dev 2\n"
)

// demoFlags are the demo's flags across namespaces, in the order a list
// across namespaces gives them.
var demoFlags = []string{
	"default/dark-mode", "default/new-checkout", "default/search-v2",
	"production/new-checkout",
	"staging/dark-mode", "staging/new-checkout",
}

// listAll asks for the flags of every namespace.
func listAll(selector string, size int32, token string) *cupv1alpha1.ListRequest {
	req := listReq(selector, size, token)
	req.Namespace = ""
	return req
}

// qualified names items by namespace and name.
func qualified(items []*cupv1alpha1.Resource) []string {
	out := make([]string, 0, len(items))
	for _, r := range items {
		out = append(out, r.GetMetadata().GetNamespace()+"/"+r.GetMetadata().GetName())
	}
	return out
}

// listPages follows a listing across namespaces to its end, returning each
// page.
func listPages(t *testing.T, rs cupv1alpha1connect.ResourceServiceClient, first *cupv1alpha1.ListRequest) []*cupv1alpha1.ListResponse {
	t.Helper()
	var pages []*cupv1alpha1.ListResponse
	req := first
	for {
		res, err := rs.List(t.Context(), connect.NewRequest(req))
		if err != nil {
			t.Fatalf("page %d: %v", len(pages)+1, err)
		}
		pages = append(pages, res.Msg)
		if res.Msg.NextPageToken == "" {
			return pages
		}
		if len(pages) > 20 {
			t.Fatal("more than 20 pages")
		}
		req = listAll(first.LabelSelector, first.PageSize, res.Msg.NextPageToken)
	}
}

// TestListAcrossNamespaces: an empty namespace lists every namespace,
// sorted by namespace and name, in pages that end inside a namespace or at
// its edge, all at the commit the first page read, with no empty page at
// the end.
func TestListAcrossNamespaces(t *testing.T) {
	t.Parallel()
	eachProtocol(t, func(t *testing.T, f *fixture, p protocol) {
		rs, _ := f.clients(p)
		head := f.head(t)
		for size := int32(0); size <= 7; size++ {
			pages := listPages(t, rs, listAll("", size, ""))
			var got []string
			for _, pg := range pages {
				got = append(got, qualified(pg.Items)...)
				if pg.Commit != head {
					t.Errorf("size %d: a page read %s, want %s", size, pg.Commit, head)
				}
			}
			if !slices.Equal(got, demoFlags) {
				t.Errorf("size %d: %v, want %v", size, got, demoFlags)
			}
			want := 1
			if size > 0 {
				want = (len(demoFlags) + int(size) - 1) / int(size)
			}
			if len(pages) != want {
				t.Errorf("size %d: %d pages, want %d", size, len(pages), want)
			}
		}
		// Two a page: the first ends inside default, the second at
		// production's edge.
		pages := listPages(t, rs, listAll("", 2, ""))
		for i, want := range [][]string{demoFlags[:2], demoFlags[2:4], demoFlags[4:]} {
			if got := qualified(pages[i].Items); !slices.Equal(got, want) {
				t.Errorf("page %d of 2: %v, want %v", i+1, got, want)
			}
		}
		// With a selector, across namespaces.
		pages = listPages(t, rs, listAll("team=payments", 2, ""))
		if len(pages) != 2 || !slices.Equal(qualified(pages[0].Items), []string{"default/new-checkout", "production/new-checkout"}) ||
			!slices.Equal(qualified(pages[1].Items), []string{"staging/new-checkout"}) {
			t.Errorf("team=payments, two a page: %v", pages)
		}
	})
}

// TestListAcrossNamespacesPinsItsCommit: a listing continues at the
// commit its first page read while the branch moves on; a revision lists
// what it holds.
func TestListAcrossNamespacesPinsItsCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rs, _ := f.clients(protocols[0])
	initial := f.head(t)
	first, err := rs.List(t.Context(), connect.NewRequest(listAll("", 3, "")))
	if err != nil {
		t.Fatal(err)
	}
	flag := "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: aaa, namespace: %s}\nspec: {enabled: true}\n"
	moved, err := f.repo.Commit("main", map[string][]byte{
		"flags/production/aaa.yaml":    fmt.Appendf(nil, flag, "production"),
		"flags/qa/aaa.yaml":            fmt.Appendf(nil, flag, "qa"),
		"flags/default/search-v2.yaml": nil,
	}, "another writer\n")
	if err != nil {
		t.Fatal(err)
	}
	rest, err := rs.List(t.Context(), connect.NewRequest(listAll("", 3, first.Msg.NextPageToken)))
	if err != nil {
		t.Fatal(err)
	}
	if got := append(qualified(first.Msg.Items), qualified(rest.Msg.Items)...); !slices.Equal(got, demoFlags) || rest.Msg.Commit != initial || rest.Msg.NextPageToken != "" {
		t.Errorf("across a commit: %v at %s, want %v at %s", got, rest.Msg.Commit, demoFlags, initial)
	}
	now, err := rs.List(t.Context(), connect.NewRequest(listAll("", 0, "")))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"default/dark-mode", "default/new-checkout", "production/aaa", "production/new-checkout", "qa/aaa", "staging/dark-mode", "staging/new-checkout"}
	if got := qualified(now.Msg.Items); !slices.Equal(got, want) || now.Msg.Commit != moved {
		t.Errorf("after the commit: %v at %s, want %v at %s", got, now.Msg.Commit, want, moved)
	}
	old := listAll("", 0, "")
	old.Revision = initial
	then, err := rs.List(t.Context(), connect.NewRequest(old))
	if err != nil {
		t.Fatal(err)
	}
	if got := qualified(then.Msg.Items); !slices.Equal(got, demoFlags) || then.Msg.Commit != initial {
		t.Errorf("at %s: %v, want %v", initial, got, demoFlags)
	}
}

// TestListAcrossNamespacesRefusals: a page token of another listing is
// refused, naming page_token; so is a type no one serves, and one whose
// controller cannot tell its namespaces.
func TestListAcrossNamespacesRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, servertest.WithTypes(hideNamespaces("services")))
	rs, _ := f.clients(protocols[0])
	across, err := rs.List(t.Context(), connect.NewRequest(listAll("", 1, "")))
	if err != nil {
		t.Fatal(err)
	}
	one, err := rs.List(t.Context(), connect.NewRequest(listReq("", 1, "")))
	if err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]*cupv1alpha1.ListRequest{
		"a namespace's token across namespaces": listAll("", 1, one.Msg.NextPageToken),
		"a token across namespaces in one":      listReq("", 1, across.Msg.NextPageToken),
		"a token of another selector":           listAll("team=web", 1, across.Msg.NextPageToken),
	} {
		_, err := rs.List(t.Context(), connect.NewRequest(req))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "page_token:") {
			t.Errorf("%s: %v, want InvalidArgument naming page_token", name, err)
		}
	}
	unknown := listAll("", 0, "")
	unknown.Plural = "widgets"
	_, err = rs.List(t.Context(), connect.NewRequest(unknown))
	wantCode(t, err, connect.CodeNotFound)
	services := &cupv1alpha1.ListRequest{Group: "apps.cup.dev", Version: "v1alpha1", Plural: "services"}
	_, err = rs.List(t.Context(), connect.NewRequest(services))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "name a namespace") {
		t.Errorf("services across namespaces, whose controller cannot tell them: %v, want FailedPrecondition", err)
	}
	bad := listAll("", 0, "")
	bad.Namespace = "Default"
	_, err = rs.List(t.Context(), connect.NewRequest(bad))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "namespace:") {
		t.Errorf("namespace Default: %v, want InvalidArgument naming namespace", err)
	}
}

// hideNamespaces serves the types of plural with controllers that cannot
// tell which namespaces hold them (as a WASM controller cannot).
func hideNamespaces(plural string) func(testing.TB, []*server.Type) []*server.Type {
	return func(_ testing.TB, types []*server.Type) []*server.Type {
		for _, t := range types {
			if t.Plural == plural {
				t.Controller = struct{ controller.Controller }{t.Controller}
			}
		}
		return types
	}
}

// TestListAcrossNamespacesWarnings: a namespace's problems come with the
// page that reaches it, and all of them with problems.
func TestListAcrossNamespacesWarnings(t *testing.T) {
	t.Parallel()
	f := newFixture(t, servertest.WithFiles(map[string][]byte{
		"flags/production/broken.yaml": []byte("metadata: ["),
		"flags/staging/broken.yaml":    []byte("spec: ["),
		"flags/qa/broken.yaml":         []byte("kind: ["),
	}))
	rs, _ := f.clients(protocols[0])
	paths := func(ws []*cupv1alpha1.ListWarning) []string {
		var out []string
		for _, w := range ws {
			out = append(out, w.Path)
		}
		return out
	}
	pages := listPages(t, rs, listAll("", 2, ""))
	// Page 2 ends with production's last flag: qa, which holds none,
	// starts after it, with page 3.
	want := [][]string{nil, {"flags/production/broken.yaml"}, {"flags/qa/broken.yaml", "flags/staging/broken.yaml"}}
	if len(pages) != len(want) {
		t.Fatalf("%d pages, want %d", len(pages), len(want))
	}
	for i, pg := range pages {
		if got := paths(pg.Warnings); !slices.Equal(got, want[i]) || pg.MoreWarnings != 0 {
			t.Errorf("page %d (%v): warnings %v (%d more), want %v", i+1, qualified(pg.Items), got, pg.MoreWarnings, want[i])
		}
	}
	req := listAll("", 0, "")
	req.Problems = true
	res, err := rs.List(t.Context(), connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(res.Msg.Warnings); len(res.Msg.Items) != 0 || !slices.Equal(got, []string{"flags/production/broken.yaml", "flags/qa/broken.yaml", "flags/staging/broken.yaml"}) {
		t.Errorf("problems across namespaces: %v, %d items", got, len(res.Msg.Items))
	}
}

// TestListAcrossNamespacesREST: GET /apis/{group}/{version}/{plural} lists,
// with limit and continue, and with watch=true still watches; each of the
// new routes is counted as its RPC.
func TestListAcrossNamespacesREST(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	f := newFixture(t, servertest.WithServerOptions(server.WithMetrics(reg)))
	var got []string
	path := allFlagsPath + "?limit=4"
	for range 3 {
		r := f.do(t, "GET", path, "")
		m := r.json(t)
		if r.status != http.StatusOK || r.header.Get("Cup-Commit") != f.head(t) || m["revision"] != f.head(t) {
			t.Fatalf("GET %s: %d %v", path, r.status, m)
		}
		for _, it := range m["items"].([]any) {
			md := it.(map[string]any)["metadata"].(map[string]any)
			got = append(got, md["namespace"].(string)+"/"+md["name"].(string))
		}
		next, _ := m["continue"].(string)
		if next == "" {
			break
		}
		path = allFlagsPath + "?limit=4&continue=" + next
	}
	if !slices.Equal(got, demoFlags) {
		t.Errorf("REST across namespaces, 4 a page: %v, want %v", got, demoFlags)
	}
	for _, tc := range []struct{ path, field string }{
		{allFlagsPath + "?namespace=default", "namespace"},
		{allFlagsPath + "?limit=two", "limit"},
		{allFlagsPath + "?continue=xyz", "page_token"},
		{allFlagsPath + "?labelSelector=team%3D%3D%3D", "labelSelector"},
	} {
		if r := f.do(t, "GET", tc.path, ""); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), tc.field) {
			t.Errorf("GET %s: %d %s, want 400 naming %s", tc.path, r.status, r.body, tc.field)
		}
	}
	if r := f.do(t, "POST", allFlagsPath, "{}"); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "GET" {
		t.Errorf("POST %s: %d Allow %q, want 405 allowing GET", allFlagsPath, r.status, r.header.Get("Allow"))
	}
	// A watch is still a watch, counted as one; a list is counted as a list.
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "GET", f.url+allFlagsPath+"?watch=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Type   string
		Object struct {
			Metadata struct{ Namespace, Name string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&ev); err != nil || ev.Type != "ADDED" || ev.Object.Metadata.Namespace+"/"+ev.Object.Metadata.Name != demoFlags[0] {
		t.Errorf("watch across namespaces: first event %+v (%v), want %s ADDED", ev, err, demoFlags[0])
	}
	cancel()
	resp.Body.Close()
	f.do(t, "GET", namespacesPath, "")
	f.do(t, "POST", accessReviewsPath, `{}`)
	// The watch may still be ending: it is counted as started.
	for _, tc := range []struct {
		metric string
		labels map[string]string
		want   float64
	}{
		{"cup_server_handled_total", map[string]string{"procedure": "/cup.v1alpha1.ResourceService/List", "form": "rest", "code": "ok"}, 2},
		{"cup_server_started_total", map[string]string{"procedure": "/cup.v1alpha1.ResourceService/Watch", "form": "rest"}, 1},
		{"cup_server_handled_total", map[string]string{"procedure": "/cup.v1alpha1.DiscoveryService/ListNamespaces", "form": "rest", "code": "ok"}, 1},
		{"cup_server_handled_total", map[string]string{"procedure": "/cup.v1alpha1.DiscoveryService/CheckAccess", "form": "rest", "code": "ok"}, 1},
	} {
		if got := series(t, reg, tc.metric, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.metric, tc.labels, got, tc.want)
		}
	}
}

// TestListNamespaces: each namespace holding resources, with the count of
// each type, for every type or one, at a revision; over Connect and REST.
func TestListNamespaces(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t, servertest.WithFiles(map[string][]byte{
		"flags/qa/broken.yaml": []byte("kind: ["), // a namespace of no resource
	}), servertest.WithTypes(hideNamespaces("serviceconfigs")))
	initial := srv.Head(t)
	flags := &cupv1alpha1.ListNamespacesRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags"}
	for _, p := range servertest.Protocols {
		ds := srv.Clients(p).Discovery
		res, err := ds.ListNamespaces(t.Context(), connect.NewRequest(&cupv1alpha1.ListNamespacesRequest{}))
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		// Types by group, then plural; serviceconfigs, whose namespaces
		// cannot be told, are left out.
		want := "default: services.apps.cup.dev 3, configlayers.config.cup.dev 4, bundles.flags.cup.dev 1, flagbundles.flags.cup.dev 1, flags.flags.cup.dev 3\n" +
			"org: configlayers.config.cup.dev 1\n" +
			"production: bundles.flags.cup.dev 1, flagbundles.flags.cup.dev 1, flags.flags.cup.dev 1\n" +
			"staging: services.apps.cup.dev 1, configlayers.config.cup.dev 2, bundles.flags.cup.dev 1, flagbundles.flags.cup.dev 1, flags.flags.cup.dev 2\n"
		if got := namespacesText(res.Msg); got != want || res.Msg.Commit != initial {
			t.Errorf("%s, every type, at %s:\n%s\nwant\n%s", p.Name, res.Msg.Commit, got, want)
		}
		res, err = ds.ListNamespaces(t.Context(), connect.NewRequest(flags))
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		want = flagCounts
		if got := namespacesText(res.Msg); got != want {
			t.Errorf("%s, flags:\n%s\nwant\n%s", p.Name, got, want)
		}
		if tc := res.Msg.Namespaces[0].Types[0]; tc.Kind != "Flag" || tc.Version != "v1alpha1" {
			t.Errorf("%s: %v, want kind Flag, version v1alpha1", p.Name, tc)
		}
	}
	moved, err := srv.Repo.Commit("main", map[string][]byte{
		"flags/qa/ready.yaml": []byte("apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: ready, namespace: qa}\nspec: {enabled: true}\n"),
	}, "another writer\n")
	if err != nil {
		t.Fatal(err)
	}
	ds := srv.Clients(servertest.Protocols[0]).Discovery
	for _, tc := range []struct{ rev, commit, want string }{
		{"", moved, "default: flags.flags.cup.dev 3\nproduction: flags.flags.cup.dev 1\nqa: flags.flags.cup.dev 1\nstaging: flags.flags.cup.dev 2\n"},
		{initial, initial, flagCounts},
		{"main~1", initial, flagCounts},
	} {
		req := &cupv1alpha1.ListNamespacesRequest{Group: flags.Group, Version: flags.Version, Plural: flags.Plural, Revision: tc.rev}
		res, err := ds.ListNamespaces(t.Context(), connect.NewRequest(req))
		if err != nil {
			t.Fatal(err)
		}
		if got := namespacesText(res.Msg); got != tc.want || res.Msg.Commit != tc.commit {
			t.Errorf("revision %q, at %s:\n%s\nwant, at %s:\n%s", tc.rev, res.Msg.Commit, got, tc.commit, tc.want)
		}
	}

	// Refusals.
	for _, tc := range []struct {
		req   *cupv1alpha1.ListNamespacesRequest
		code  connect.Code
		field string
	}{
		{&cupv1alpha1.ListNamespacesRequest{Group: "flags.cup.dev"}, connect.CodeInvalidArgument, "group, version and plural go together"},
		{&cupv1alpha1.ListNamespacesRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "Flags"}, connect.CodeInvalidArgument, "plural:"},
		{&cupv1alpha1.ListNamespacesRequest{Revision: "a..b"}, connect.CodeInvalidArgument, "revision:"},
		{&cupv1alpha1.ListNamespacesRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "widgets"}, connect.CodeNotFound, "widgets"},
		{&cupv1alpha1.ListNamespacesRequest{Revision: "no-such-branch"}, connect.CodeNotFound, "no-such-branch"},
		{&cupv1alpha1.ListNamespacesRequest{Group: "config.cup.dev", Version: "v1alpha1", Plural: "serviceconfigs"}, connect.CodeFailedPrecondition, "name a namespace"},
	} {
		_, err := ds.ListNamespaces(t.Context(), connect.NewRequest(tc.req))
		if connect.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%v: %v, want %v naming %s", tc.req, err, tc.code, tc.field)
		}
	}

	// REST.
	r := srv.Do(t, "GET", namespacesPath+"?group=flags.cup.dev&version=v1alpha1&plural=flags&revision="+initial, "")
	var res cupv1alpha1.ListNamespacesResponse
	if r.Status != http.StatusOK || r.Header.Get("Cup-Commit") != initial || protojson.Unmarshal([]byte(r.Body), &res) != nil ||
		res.Commit != initial || namespacesText(&res) != flagCounts {
		t.Errorf("GET %s: %d %s", namespacesPath, r.Status, r.Body)
	}
	if !strings.Contains(r.Body, `"name":"default"`) || !strings.Contains(r.Body, `"count":3`) {
		t.Errorf("GET %s: %s is not in protojson's form", namespacesPath, r.Body)
	}
	if r := srv.Do(t, "GET", namespacesPath, ""); r.Status != http.StatusOK || r.Header.Get("Cup-Commit") != moved {
		t.Errorf("GET %s: %d %s", namespacesPath, r.Status, r.Body)
	}
	for _, tc := range []struct {
		method, path string
		status       int
		want         string
	}{
		{"GET", namespacesPath + "?namespace=default", 400, "namespace"},
		{"GET", namespacesPath + "?plural=flags", 400, "go together"},
		{"GET", namespacesPath + "?group=flags.cup.dev&version=v1alpha1&plural=widgets", 404, "widgets"},
		{"POST", namespacesPath, 405, "use GET"},
	} {
		if r := srv.Do(t, tc.method, tc.path, ""); r.Status != tc.status || !strings.Contains(r.Body, tc.want) {
			t.Errorf("%s %s: %d %s, want %d naming %s", tc.method, tc.path, r.Status, r.Body, tc.status, tc.want)
		}
	}
}

// namespacesText is res's namespaces, a line each.
func namespacesText(res *cupv1alpha1.ListNamespacesResponse) string {
	var b strings.Builder
	for _, ns := range res.Namespaces {
		var types []string
		for _, tc := range ns.Types {
			types = append(types, fmt.Sprintf("%s.%s %d", tc.Plural, tc.Group, tc.Count))
		}
		fmt.Fprintf(&b, "%s: %s\n", ns.Name, strings.Join(types, ", "))
	}
	return b.String()
}

// TestAcrossNamespacesUnderPolicy: a list across namespaces and
// ListNamespaces leave out the namespaces the caller may not list; a
// caller who may do nothing with a type is denied the list, and does not
// find the type's namespaces.
func TestAcrossNamespacesUnderPolicy(t *testing.T) {
	t.Parallel()
	srv := newPolicyFixture(t)
	open := servertest.Start(t)
	everything, err := open.Clients(servertest.Protocols[0]).Discovery.ListNamespaces(t.Context(), connect.NewRequest(&cupv1alpha1.ListNamespacesRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	const notFound = "not found"
	flags := &cupv1alpha1.ListNamespacesRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags"}
	for _, tc := range []struct {
		user   string
		listed []string // nil: denied
		all    string   // ListNamespaces of every type
		flags  string   // of flags
	}{
		{"alice", demoFlags[4:], "staging: flags.flags.cup.dev 2\n", "staging: flags.flags.cup.dev 2\n"},
		{"bob", demoFlags[:3], "default: flags.flags.cup.dev 3\n", "default: flags.flags.cup.dev 3\n"},
		{"carol", demoFlags, namespacesText(everything.Msg), "default: flags.flags.cup.dev 3\nproduction: flags.flags.cup.dev 1\nstaging: flags.flags.cup.dev 2\n"},
		{"dave", []string{}, "", ""}, // may get a flag, list none
		{"eve", nil, "", notFound},
	} {
		clients := srv.Clients(servertest.Protocols[0], bearer(tc.user))
		got := []string{}
		res, err := clients.Resources.List(t.Context(), connect.NewRequest(listAll("", 1, "")))
		for err == nil {
			got = append(got, qualified(res.Msg.Items)...)
			if res.Msg.NextPageToken == "" {
				break
			}
			res, err = clients.Resources.List(t.Context(), connect.NewRequest(listAll("", 1, res.Msg.NextPageToken)))
		}
		switch {
		case tc.listed == nil && connect.CodeOf(err) != connect.CodePermissionDenied:
			t.Errorf("%s lists flags across namespaces: %v, %v; want PermissionDenied", tc.user, got, err)
		case tc.listed != nil && (err != nil || !slices.Equal(got, tc.listed)):
			t.Errorf("%s lists flags across namespaces: %v, %v; want %v", tc.user, got, err, tc.listed)
		}
		all, err := clients.Discovery.ListNamespaces(t.Context(), connect.NewRequest(&cupv1alpha1.ListNamespacesRequest{}))
		if err != nil {
			t.Fatalf("%s: %v", tc.user, err)
		}
		if got := namespacesText(all.Msg); got != tc.all || all.Msg.Commit != srv.Head(t) {
			t.Errorf("%s, every type, at %s:\n%s\nwant\n%s", tc.user, all.Msg.Commit, got, tc.all)
		}
		one, err := clients.Discovery.ListNamespaces(t.Context(), connect.NewRequest(flags))
		switch {
		case tc.flags == notFound:
			if connect.CodeOf(err) != connect.CodeNotFound || !strings.Contains(err.Error(), "is served") {
				t.Errorf("%s, flags: %v, %v; want NotFound, as for a type not served", tc.user, one, err)
			}
		case err != nil:
			t.Errorf("%s, flags: %v", tc.user, err)
		case namespacesText(one.Msg) != tc.flags:
			t.Errorf("%s, flags:\n%s\nwant\n%s", tc.user, namespacesText(one.Msg), tc.flags)
		}
	}
	// REST, and without credentials.
	if r := srv.Do(t, "GET", allFlagsPath, "", "Authorization", "Bearer alice"); r.Status != http.StatusOK ||
		strings.Contains(r.Body, `"namespace":"default"`) || !strings.Contains(r.Body, `"namespace":"staging"`) {
		t.Errorf("GET %s as alice: %d %s, want staging's flags only", allFlagsPath, r.Status, r.Body)
	}
	if r := srv.Do(t, "GET", namespacesPath, "", "Authorization", "Bearer bob"); r.Status != http.StatusOK ||
		!strings.Contains(r.Body, `"name":"default"`) || strings.Contains(r.Body, `"name":"staging"`) {
		t.Errorf("GET %s as bob: %d %s, want default only", namespacesPath, r.Status, r.Body)
	}
	for _, path := range []string{allFlagsPath, namespacesPath} {
		if r := srv.Do(t, "GET", path, ""); r.Status != http.StatusUnauthorized {
			t.Errorf("GET %s without credentials: %d %s, want 401", path, r.Status, r.Body)
		}
	}
}
