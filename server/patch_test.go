package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/auth/tokens"
	"github.com/cup-dev/cup/internal/rbac"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/server"
	"github.com/cup-dev/cup/source"
)

func patchReq(name string, typ cupv1alpha1.PatchType, patch string) *cupv1alpha1.PatchRequest {
	g, v, p, ns, n := flagRef(name)
	return &cupv1alpha1.PatchRequest{Group: g, Version: v, Plural: p, Namespace: ns, Name: n, Type: typ, Patch: patch}
}

const (
	mergePatch = cupv1alpha1.PatchType_PATCH_TYPE_MERGE
	jsonPatch  = cupv1alpha1.PatchType_PATCH_TYPE_JSON
)

func TestPatch(t *testing.T) {
	t.Parallel()
	eachProtocol(t, func(t *testing.T, f *fixture, p protocol) {
		rs, _ := f.clients(p)
		ctx := t.Context()
		patch := func(req *cupv1alpha1.PatchRequest) (*cupv1alpha1.PatchResponse, error) {
			res, err := rs.Patch(ctx, connect.NewRequest(req))
			if err != nil {
				return nil, err
			}
			return res.Msg, nil
		}
		spec := func(r *cupv1alpha1.Resource) map[string]any { return r.GetSpec().AsMap() }

		// A merge patch changes what it names and keeps the rest.
		before := f.commits(t, "main")
		res, err := patch(patchReq("dark-mode", mergePatch, `{"metadata":{"labels":{"stage":"beta"}},"spec":{"enabled":true}}`))
		if err != nil {
			t.Fatal(err)
		}
		r := res.Resource
		if res.Result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED || f.commits(t, "main") != before+1 {
			t.Fatalf("merge patch = %v, %d commits", res.Result, f.commits(t, "main")-before)
		}
		if s := spec(r); s["enabled"] != true || s["rollout"] != 0.0 || s["description"] != "Dark colour scheme for the dashboard." ||
			r.Metadata.Labels["team"] != "web" || r.Metadata.Labels["stage"] != "beta" {
			t.Fatalf("merge patch stored %v", r)
		}
		got, err := rs.Get(ctx, connect.NewRequest(getReq("dark-mode", "")))
		if err != nil || got.Msg.Resource.Metadata.ResourceVersion != r.Metadata.ResourceVersion {
			t.Fatalf("Get after the patch = %v, %v; the patch answered resource_version %s", got, err, r.Metadata.ResourceVersion)
		}
		// A JSON patch, with a test that holds, and the version read as
		// precondition.
		jp := patchReq("dark-mode", jsonPatch, `[{"op":"test","path":"/spec/enabled","value":true},
			{"op":"replace","path":"/spec/rollout","value":25},{"op":"remove","path":"/metadata/labels/stage"}]`)
		jp.ResourceVersion = r.Metadata.ResourceVersion
		res, err = patch(jp)
		if err != nil {
			t.Fatal(err)
		}
		if s := spec(res.Resource); s["rollout"] != 25.0 || s["enabled"] != true || len(res.Resource.Metadata.Labels) != 1 {
			t.Fatalf("JSON patch stored %v", res.Resource)
		}
		// The same precondition again is stale now.
		_, err = patch(jp)
		wantCode(t, err, connect.CodeAborted)
		// So is a metadata.resourceVersion the patch sets.
		_, err = patch(patchReq("dark-mode", mergePatch, `{"metadata":{"resourceVersion":"`+r.Metadata.ResourceVersion+`"},"spec":{"rollout":1}}`))
		wantCode(t, err, connect.CodeAborted)
		// A patch that changes nothing writes nothing.
		res, err = patch(patchReq("dark-mode", mergePatch, `{"spec":{"rollout":25}}`))
		if err != nil || res.Result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED {
			t.Fatalf("patch to the same value = %v, %v", res, err)
		}
		// A dry run writes nothing and answers what would be stored.
		head := f.head(t)
		dry := patchReq("dark-mode", mergePatch, `{"spec":{"rollout":75}}`)
		dry.DryRun = true
		res, err = patch(dry)
		if err != nil || res.Result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_DRY_RUN || spec(res.Resource)["rollout"] != 75.0 || f.head(t) != head {
			t.Fatalf("dry run = %v, %v; head moved: %v", res, err, f.head(t) != head)
		}

		for _, tc := range []struct {
			name  string
			req   *cupv1alpha1.PatchRequest
			code  connect.Code
			names string
		}{
			{"failed test", patchReq("dark-mode", jsonPatch, `[{"op":"test","path":"/spec/enabled","value":false}]`), connect.CodeInvalidArgument, "test failed"},
			{"missing path", patchReq("dark-mode", jsonPatch, `[{"op":"remove","path":"/spec/variants"}]`), connect.CodeInvalidArgument, "/spec/variants"},
			{"unknown op", patchReq("dark-mode", jsonPatch, `[{"op":"merge","path":"/spec"}]`), connect.CodeInvalidArgument, "patch[0].op"},
			{"unknown member", patchReq("dark-mode", jsonPatch, `[{"op":"remove","path":"/spec/rollout","vaule":1}]`), connect.CodeInvalidArgument, "patch[0].vaule"},
			{"merge patch not an object", patchReq("dark-mode", mergePatch, `[]`), connect.CodeInvalidArgument, "patch"},
			{"not JSON", patchReq("dark-mode", mergePatch, `{"spec":`), connect.CodeInvalidArgument, "patch: not JSON"},
			{"rename", patchReq("dark-mode", mergePatch, `{"metadata":{"name":"light-mode"}}`), connect.CodeInvalidArgument, "metadata.name"},
			{"move", patchReq("dark-mode", jsonPatch, `[{"op":"replace","path":"/metadata/namespace","value":"staging"}]`), connect.CodeInvalidArgument, "metadata.namespace"},
			{"kind", patchReq("dark-mode", mergePatch, `{"kind":"Service"}`), connect.CodeInvalidArgument, "kind"},
			{"apiVersion removed", patchReq("dark-mode", jsonPatch, `[{"op":"remove","path":"/apiVersion"}]`), connect.CodeInvalidArgument, "apiVersion"},
			{"schema", patchReq("dark-mode", mergePatch, `{"spec":{"rollout":500}}`), connect.CodeInvalidArgument, "spec.rollout: schema violation"},
			{"unknown field", patchReq("dark-mode", mergePatch, `{"status":{}}`), connect.CodeInvalidArgument, "status"},
			{"bad label", patchReq("dark-mode", mergePatch, `{"metadata":{"labels":{"Not a key!":"x"}}}`), connect.CodeInvalidArgument, `metadata.labels["Not a key!"]`},
			{"bad label value", patchReq("dark-mode", jsonPatch, `[{"op":"add","path":"/metadata/labels/tier","value":"-x-"}]`), connect.CodeInvalidArgument, `metadata.labels["tier"]`},
			{"too many operations", patchReq("dark-mode", jsonPatch, "["+strings.Repeat(`{"op":"test","path":"/kind","value":"Flag"},`, 1000)+`{"op":"test","path":"/kind","value":"Flag"}]`), connect.CodeInvalidArgument, "1001 operations"},
			{"missing", patchReq("no-such-flag", mergePatch, `{"spec":{"enabled":true}}`), connect.CodeNotFound, "no-such-flag"},
		} {
			_, err := patch(tc.req)
			if connect.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.names) {
				t.Errorf("%s: %v, want %v naming %s", tc.name, err, tc.code, tc.names)
			}
		}
		if f.head(t) != head {
			t.Fatal("a refused patch moved the branch")
		}

		// A retry with the idempotency key replays the first patch, even
		// though applying it again would make something else.
		add := patchReq("dark-mode", jsonPatch, `[{"op":"add","path":"/spec/variants/-","value":{"key":"blue"}}]`)
		if _, err := patch(patchReq("dark-mode", mergePatch, `{"spec":{"variants":[]}}`)); err != nil {
			t.Fatal(err)
		}
		add.IdempotencyKey = "add-blue"
		first, err := patch(add)
		if err != nil {
			t.Fatal(err)
		}
		again, err := patch(add)
		if err != nil || !again.Result.Replayed || again.Result.Commit != first.Result.Commit ||
			again.Resource.Metadata.ResourceVersion != first.Resource.Metadata.ResourceVersion || f.head(t) != first.Result.Commit {
			t.Fatalf("patch repeated with its key = %v, %v; first %v", again, err, first)
		}
		add.Patch = `[{"op":"add","path":"/spec/variants/-","value":{"key":"red"}}]`
		_, err = patch(add)
		wantCode(t, err, connect.CodeFailedPrecondition)
	})
}

// TestPatchKeepsExactNumbers: the resource is patched in its JSON form, so
// numbers a float64 cannot hold survive a patch of another field.
func TestPatchKeepsExactNumbers(t *testing.T) {
	t.Parallel()
	// Bundles are JSON files, which hold any number as written.
	f := newFixture(t, servertest.WithBundles())
	rs, _ := f.clients(protocols[0])
	const path = "/apis/flags.cup.dev/v1alpha1/namespaces/default/bundles/exact"
	const big, small = "12345678901234567890", "0.1000000000000000055511151231257827"
	if res := f.do(t, "PUT", path, `{"spec":{"big":`+big+`,"small":`+small+`,"enabled":false}}`); res.status != http.StatusAccepted {
		t.Fatalf("PUT = %d %s", res.status, res.body)
	}
	want := `"spec":{"added":` + big + `1,"big":` + big + `,"enabled":true,"small":` + small + `}`
	for _, patch := range []struct {
		typ  cupv1alpha1.PatchType
		text string
	}{
		{mergePatch, `{"spec":{"enabled":true}}`},
		{jsonPatch, `[{"op":"add","path":"/spec/added","value":` + big + `1}]`},
	} {
		req := patchReq("exact", patch.typ, patch.text)
		req.Plural = "bundles"
		res, err := rs.Patch(t.Context(), connect.NewRequest(req))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Msg.Resource.SpecJson, `"big":`+big) || !strings.Contains(res.Msg.Resource.SpecJson, `"small":`+small) {
			t.Fatalf("Patch answered spec_json %s", res.Msg.Resource.SpecJson)
		}
	}
	if res := f.do(t, "GET", path, ""); !strings.Contains(string(res.body), want) {
		t.Fatalf("GET after patches = %s, want %s", res.body, want)
	}
	// A test compares numbers by value, as RFC 6902 says, and exactly:
	// 1.0 equals 1, 1234567890123456789e1 equals big, big+1 does not (a
	// float64 would not tell them apart), and objects match in any key
	// order.
	for _, tc := range []struct {
		test string
		ok   bool
	}{
		{`{"op":"test","path":"/spec/big","value":1234567890123456789e1}`, true},
		{`{"op":"test","path":"/spec/big","value":12345678901234567891}`, false},
		{`{"op":"test","path":"/spec/small","value":1000000000000000055511151231257827e-34}`, true},
		{`{"op":"test","path":"/spec/small","value":0.1}`, false},
		{`{"op":"test","path":"/spec","value":{"small":` + small + `,"enabled":true,"big":` + big + `.0,"added":` + big + `1}}`, true},
		{`{"op":"test","path":"/spec/nothing","value":1}`, false},
	} {
		req := patchReq("exact", jsonPatch, `[`+tc.test+`,{"op":"replace","path":"/spec/enabled","value":true}]`)
		req.Plural = "bundles"
		_, err := rs.Patch(t.Context(), connect.NewRequest(req))
		if tc.ok && err != nil || !tc.ok && connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("%s: %v", tc.test, err)
		}
	}
	files, err := f.repo.Files("main")
	if err != nil {
		t.Fatal(err)
	}
	if file := string(files["bundles/default/exact.json"]); !strings.Contains(file, big+"1") || !strings.Contains(file, small) {
		t.Fatalf("the file holds %s", file)
	}
}

// TestPatchAppliesToTheNewestBase: a write that lands between the patch's
// read and its write is not lost: the patch applies again on top of it.
func TestPatchAppliesToTheNewestBase(t *testing.T) {
	t.Parallel()
	var repo atomic.Pointer[fixture]
	var raced atomic.Bool
	f := newFixture(t, servertest.WithSource(func(src source.Source) source.Source {
		return racingSource{src, func() {
			if raced.CompareAndSwap(false, true) {
				if _, err := repo.Load().repo.Commit("main", map[string][]byte{"flags/default/dark-mode.yaml": []byte(
					"apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata:\n  name: dark-mode\n  namespace: default\n  labels: {team: web, owner: someone}\nspec:\n  enabled: false\n  rollout: 5\n")},
					"another writer"); err != nil {
					t.Error(err)
				}
			}
		}}
	}))
	repo.Store(f)
	rs, _ := f.clients(protocols[0])
	res, err := rs.Patch(t.Context(), connect.NewRequest(patchReq("dark-mode", mergePatch, `{"spec":{"enabled":true}}`)))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Msg.Resource
	if !raced.Load() || r.Metadata.Labels["owner"] != "someone" || r.Spec.AsMap()["rollout"] != 5.0 || r.Spec.AsMap()["enabled"] != true {
		t.Fatalf("patch after a concurrent write stored %v", r)
	}
}

// racingSource runs before at the start of every Apply, as another writer
// would between a patch's read and its write.
type racingSource struct {
	source.Source
	before func()
}

func (s racingSource) Update(ctx context.Context, req *source.UpdateRequest) (*source.UpdateResult, error) {
	apply := req.Apply
	r := *req
	r.Apply = func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
		s.before()
		return apply(ctx, base, w)
	}
	return s.Source.Update(ctx, &r)
}

func TestPatchREST(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const item = flagsPath + "/dark-mode"
	merge := []string{"Content-Type", "application/merge-patch+json"}
	res := f.do(t, "PATCH", item, `{"spec":{"rollout":30}}`, merge...)
	if res.status != http.StatusAccepted || !strings.Contains(string(res.body), `"rollout":30`) || res.header.Get("Cup-Commit") == "" {
		t.Fatalf("PATCH merge = %d %s", res.status, res.body)
	}
	etag := f.do(t, "GET", item, "").header.Get("ETag")
	if res.header.Get("ETag") != etag {
		t.Fatalf("PATCH answered ETag %q, a GET then %q", res.header.Get("ETag"), etag)
	}
	res = f.do(t, "PATCH", item, `[{"op":"replace","path":"/spec/rollout","value":40}]`,
		"Content-Type", "application/json-patch+json; charset=utf-8", "If-Match", etag)
	if res.status != http.StatusAccepted || !strings.Contains(string(res.body), `"rollout":40`) {
		t.Fatalf("PATCH json = %d %s", res.status, res.body)
	}
	// The ETag read before is stale now.
	res = f.do(t, "PATCH", item, `{"spec":{"rollout":50}}`, append(merge, "If-Match", etag)...)
	if res.status != http.StatusConflict {
		t.Fatalf("PATCH with a stale If-Match = %d %s", res.status, res.body)
	}
	head := f.head(t)
	res = f.do(t, "PATCH", item+"?dryRun=true", `{"spec":{"rollout":50}}`, merge...)
	if res.status != http.StatusOK || !strings.Contains(string(res.body), `"rollout":50`) || f.head(t) != head {
		t.Fatalf("PATCH dry run = %d %s", res.status, res.body)
	}
	res = f.do(t, "PATCH", item, `{"spec":{"rollout":40}}`, merge...)
	if res.status != http.StatusNoContent {
		t.Fatalf("PATCH changing nothing = %d %s", res.status, res.body)
	}
	for _, tc := range []struct {
		name, body string
		header     []string
		status     int
		mention    string
	}{
		{"strategic", `{"spec":{"rollout":1}}`, []string{"Content-Type", "application/strategic-merge-patch+json"}, http.StatusUnsupportedMediaType, "application/merge-patch+json"},
		{"apply", "spec: {rollout: 1}", []string{"Content-Type", "application/apply-patch+yaml"}, http.StatusUnsupportedMediaType, "server-side apply"},
		{"plain JSON", `{"spec":{"rollout":1}}`, []string{"Content-Type", "application/json"}, http.StatusUnsupportedMediaType, "application/json-patch+json"},
		{"no Content-Type", `{"spec":{"rollout":1}}`, nil, http.StatusUnsupportedMediaType, "needs a Content-Type"},
		{"empty", "", merge, http.StatusBadRequest, "body"},
		{"schema", `{"spec":{"rollout":-1}}`, merge, http.StatusBadRequest, "spec.rollout"},
		{"rename", `{"metadata":{"name":"x"}}`, merge, http.StatusBadRequest, "metadata.name"},
		{"failed test", `[{"op":"test","path":"/spec/rollout","value":1}]`, []string{"Content-Type", "application/json-patch+json"}, http.StatusBadRequest, "test failed"},
		{"unknown parameter", `{}`, merge, http.StatusBadRequest, "dryrun"},
		{"unknown member", `[{"op":"remove","path":"/spec/rollout","vaule":1}]`, []string{"Content-Type", "application/json-patch+json"}, http.StatusBadRequest, "body[0].vaule: unknown member"},
		{"not JSON", `{"spec":`, merge, http.StatusBadRequest, "body: not JSON"},
	} {
		path := item
		if tc.name == "unknown parameter" {
			path += "?dryrun=true"
		}
		res := f.do(t, "PATCH", path, tc.body, tc.header...)
		if res.status != tc.status || !strings.Contains(string(res.body), tc.mention) {
			t.Errorf("%s: PATCH = %d %s, want %d mentioning %s", tc.name, res.status, res.body, tc.status, tc.mention)
		}
	}
	if res := f.do(t, "PATCH", flagsPath+"/no-such-flag", `{}`, merge...); res.status != http.StatusNotFound {
		t.Errorf("PATCH of a missing flag = %d %s", res.status, res.body)
	}
	if f.head(t) != head {
		t.Fatal("a refused PATCH moved the branch")
	}
	// A retry with the idempotency key replays, whatever the patch would
	// make of the resource now.
	add := `[{"op":"add","path":"/spec/variants","value":[]},{"op":"add","path":"/spec/variants/-","value":{"key":"blue"}}]`
	first := f.do(t, "PATCH", item, add, "Content-Type", "application/json-patch+json", "Idempotency-Key", "blue")
	again := f.do(t, "PATCH", item+"?idempotencyKey=blue", add, "Content-Type", "application/json-patch+json")
	if first.status != http.StatusAccepted || again.status != http.StatusAccepted || again.header.Get("Idempotent-Replayed") != "true" ||
		again.header.Get("Cup-Commit") != first.header.Get("Cup-Commit") || again.header.Get("ETag") != first.header.Get("ETag") {
		t.Fatalf("PATCH twice with a key = %d %v %s, then %d %v %s", first.status, first.header, first.body, again.status, again.header, again.body)
	}
}

func TestPatchAuthorization(t *testing.T) {
	t.Parallel()
	// The test policy and tokens (auth_test.go), on the unit harness.
	policyPath, tokensPath := writeAuthFiles(t)
	policy, err := rbac.LoadFile(policyPath)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile, err := tokens.Load(tokensPath)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, servertest.WithServerOptions(server.WithAuthorization(tokenFile, policy)))
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			for _, user := range []string{"alice", "bob", "carol", "dave", "eve"} {
				rs, _, _ := f.clientsAs(p, tokenOf(user))
				for _, ns := range matrixNamespaces {
					req := patchReq("new-checkout", mergePatch, `{"spec":{"rollout":7}}`)
					req.Namespace, req.DryRun = ns, true
					_, err := rs.Patch(t.Context(), connect.NewRequest(req))
					if allowedIn(user, "put", ns) {
						if err != nil {
							t.Errorf("%s patching in %s: %v", user, ns, err)
						}
					} else if connect.CodeOf(err) != connect.CodePermissionDenied {
						t.Errorf("%s patching in %s = %v, want PermissionDenied", user, ns, err)
					}
				}
			}
		})
	}
}

// TestPatchIsLogged: a patch is logged as the write it is, with its own
// verb and procedure, over Connect and REST alike.
func TestPatchIsLogged(t *testing.T) {
	t.Parallel()
	logs := new(syncBuffer)
	f := newFixture(t, servertest.WithServerOptions(server.WithLogger(slog.New(slog.NewTextHandler(logs, nil)))))
	rs, _ := f.clients(protocols[0])
	if _, err := rs.Patch(t.Context(), connect.NewRequest(patchReq("dark-mode", mergePatch, `{"spec":{"rollout":3}}`))); err != nil {
		t.Fatal(err)
	}
	if res := f.do(t, "PATCH", flagsPath+"/dark-mode", `{"spec":{"rollout":4}}`, "Content-Type", "application/merge-patch+json"); res.status != http.StatusAccepted {
		t.Fatalf("PATCH = %d %s", res.status, res.body)
	}
	for _, form := range []string{"connect", "rest"} {
		want := regexp.MustCompile(`msg=write procedure=/cup.v1alpha1.ResourceService/Patch form=` + form +
			` verb=patch who=anonymous resource="flags.cup.dev/v1alpha1/flags default/dark-mode" commit=[0-9a-f]{40} outcome=committed`)
		if !want.MatchString(logs.String()) {
			t.Errorf("no %s patch logged as a write:\n%s", form, logs)
		}
	}
}

// TestPatchInChangeSet: a patch to a change set applies to the resource
// as the change set holds it, and leaves the served branch alone.
func TestPatchInChangeSet(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rs, _ := f.clients(protocols[0])
	ctx := t.Context()
	main := f.head(t)
	f.changeSet(t, "cup/feature")
	first := patchReq("dark-mode", mergePatch, `{"spec":{"rollout":20}}`)
	first.ChangeSet = "cup/feature"
	if _, err := rs.Patch(ctx, connect.NewRequest(first)); err != nil {
		t.Fatal(err)
	}
	// The test holds only against the change set's resource.
	second := patchReq("dark-mode", jsonPatch, `[{"op":"test","path":"/spec/rollout","value":20},{"op":"replace","path":"/spec/enabled","value":true}]`)
	second.ChangeSet = "cup/feature"
	res, err := rs.Patch(ctx, connect.NewRequest(second))
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Msg.Resource.Spec.AsMap(); s["rollout"] != 20.0 || s["enabled"] != true || res.Msg.Result.Branch != "cup/feature" ||
		f.resolve(t, "cup/feature") != res.Msg.Result.Commit || f.head(t) != main {
		t.Fatalf("patches in a change set = %v", res.Msg)
	}
	second.ChangeSet = ""
	_, err = rs.Patch(ctx, connect.NewRequest(second))
	wantCode(t, err, connect.CodeInvalidArgument)
}
