package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/server"
)

const flagsPath = "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags"

type restResponse struct {
	status int
	header http.Header
	body   []byte
}

func (f *fixture) do(t *testing.T, method, path, body string, header ...string) restResponse {
	t.Helper()
	r := servertest.Do(t, method, f.url+path, body, header...)
	return restResponse{status: r.Status, header: r.Header, body: []byte(r.Body)}
}

func (r restResponse) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

func itemNames(t *testing.T, m map[string]any) string {
	t.Helper()
	var out []string
	items, _ := m["items"].([]any)
	for _, it := range items {
		out = append(out, it.(map[string]any)["metadata"].(map[string]any)["name"].(string))
	}
	return strings.Join(out, ",")
}

func TestREST(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	initial := f.head(t)

	apis := f.do(t, "GET", "/apis", "")
	if apis.status != 200 || !strings.Contains(string(apis.body), `"name":"flags.flags.cup.dev"`) {
		t.Fatalf("GET /apis = %d %s", apis.status, apis.body)
	}

	get := f.do(t, "GET", flagsPath+"/new-checkout", "")
	if get.status != 200 || get.header.Get("Cup-Commit") != initial || get.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET = %d %v %s", get.status, get.header, get.body)
	}
	r := get.json(t)
	md := r["metadata"].(map[string]any)
	if r["apiVersion"] != "flags.cup.dev/v1alpha1" || r["kind"] != "Flag" || md["name"] != "new-checkout" ||
		r["spec"].(map[string]any)["rollout"] != float64(50) || get.header.Get("ETag") != `"`+md["resourceVersion"].(string)+`"` {
		t.Fatalf("GET body = %s", get.body)
	}
	etag := get.header.Get("ETag")

	list := f.do(t, "GET", flagsPath+"?labelSelector=team+in+(payments,web)", "")
	if m := list.json(t); list.status != 200 || itemNames(t, m) != "dark-mode,new-checkout" || m["revision"] != initial || m["continue"] != nil {
		t.Fatalf("GET list = %d %s", list.status, list.body)
	}
	page1 := f.do(t, "GET", flagsPath+"?limit=1", "").json(t)
	if itemNames(t, page1) != "dark-mode" || page1["continue"] == "" {
		t.Fatalf("page 1 = %v", page1)
	}
	page2 := f.do(t, "GET", flagsPath+"?limit=1&continue="+page1["continue"].(string), "").json(t)
	if itemNames(t, page2) != "new-checkout" {
		t.Fatalf("page 2 = %v", page2)
	}

	// PUT: create answers 202 with the result; the same again answers 204.
	body := `{"metadata": {"labels": {"team": "web"}}, "spec": {"enabled": true, "rollout": 10}}`
	put := f.do(t, "PUT", flagsPath+"/beta-banner", body)
	if put.status != 202 {
		t.Fatalf("PUT = %d %s", put.status, put.body)
	}
	pm := put.json(t)
	result := pm["result"].(map[string]any)
	if result["outcome"] != "WRITE_OUTCOME_COMMITTED" || result["commit"] != f.head(t) || put.header.Get("Cup-Commit") != f.head(t) {
		t.Fatalf("PUT body = %s", put.body)
	}
	if again := f.do(t, "PUT", flagsPath+"/beta-banner", body); again.status != 204 || len(again.body) != 0 {
		t.Fatalf("PUT unchanged = %d %s", again.status, again.body)
	}

	// Dry run answers 200 with the diff and writes nothing.
	head := f.head(t)
	dry := f.do(t, "PUT", flagsPath+"/beta-banner?dryRun=true", `{"spec": {"enabled": false}}`)
	if dry.status != 200 || !strings.Contains(string(dry.body), "WRITE_OUTCOME_DRY_RUN") || !strings.Contains(string(dry.body), `+  enabled: false`) || f.head(t) != head {
		t.Fatalf("PUT dry run = %d %s", dry.status, dry.body)
	}

	// Preconditions through If-Match: stale is 409 Aborted.
	stale := f.do(t, "PUT", flagsPath+"/new-checkout", `{"spec": {"enabled": false}}`, "If-Match", `"0123abcd"`)
	if stale.status != 409 || stale.json(t)["code"] != "aborted" {
		t.Fatalf("stale PUT = %d %s", stale.status, stale.body)
	}
	ok := f.do(t, "PUT", flagsPath+"/new-checkout?message=Turn+off+checkout", `{"metadata":{"labels":{"team":"payments"}},"spec": {"enabled": false}}`, "If-Match", etag)
	if ok.status != 202 {
		t.Fatalf("PUT with If-Match = %d %s", ok.status, ok.body)
	}

	del := f.do(t, "DELETE", flagsPath+"/beta-banner", "")
	if del.status != 202 || !strings.Contains(string(del.body), "FILE_OPERATION_DELETE") {
		t.Fatalf("DELETE = %d %s", del.status, del.body)
	}
	if gone := f.do(t, "GET", flagsPath+"/beta-banner", ""); gone.status != 404 || gone.json(t)["code"] != "not_found" {
		t.Fatalf("GET deleted = %d %s", gone.status, gone.body)
	}
	if old := f.do(t, "GET", flagsPath+"/new-checkout?revision="+initial, ""); old.status != 200 || old.header.Get("ETag") != etag {
		t.Fatalf("GET at initial = %d %s", old.status, old.body)
	}

	for _, p := range []string{"/healthz", "/readyz"} {
		if h := f.do(t, "GET", p, ""); h.status != 200 {
			t.Fatalf("%s = %d %s", p, h.status, h.body)
		}
	}
}

// TestBadInput sends hostile and wrong requests over REST and Connect. Each
// must fail with the right code, name what was wrong, and leave the
// repository exactly as it was.
func TestBadInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	long := strings.Repeat("a", 300)
	huge := `{"spec": {"description": "` + strings.Repeat("x", 20<<20) + `", "enabled": true}}`

	rest := []struct {
		name, method, path, body string
		status                   int
		code, mention            string
	}{
		{"dot-dot name", "PUT", flagsPath + "/..%2F..%2Fetc", `{"spec":{"enabled":true}}`, 400, "invalid_argument", "name"},
		{"slash in name", "PUT", flagsPath + "/a%2Fb", `{"spec":{"enabled":true}}`, 400, "invalid_argument", "name"},
		{"NUL in name", "PUT", flagsPath + "/a%00b", `{"spec":{"enabled":true}}`, 400, "invalid_argument", "name"},
		{"300-character name", "PUT", flagsPath + "/" + long, `{"spec":{"enabled":true}}`, 400, "invalid_argument", "name"},
		{"upper-case name", "GET", flagsPath + "/Bad", "", 400, "invalid_argument", "name"},
		{"dot-dot namespace", "GET", "/apis/flags.cup.dev/v1alpha1/namespaces/..%2F/flags", "", 400, "invalid_argument", "namespace"},
		{"invalid JSON", "PUT", flagsPath + "/x", `{"spec": `, 400, "invalid_argument", "body"},
		{"unknown field", "PUT", flagsPath + "/x", `{"spec": {"enabled": true}, "status": {}}`, 400, "invalid_argument", "body"},
		{"schema: wrong type", "PUT", flagsPath + "/x", `{"spec": {"enabled": "yes"}}`, 400, "invalid_argument", "resource.spec.enabled"},
		{"schema: missing required", "PUT", flagsPath + "/x", `{"spec": {"rollout": 5}}`, 400, "invalid_argument", "resource.spec"},
		{"schema: out of range", "PUT", flagsPath + "/x", `{"spec": {"enabled": true, "rollout": 101}}`, 400, "invalid_argument", "resource.spec.rollout"},
		{"schema: extra property", "PUT", flagsPath + "/x", `{"spec": {"enabled": true, "colour": "red"}}`, 400, "invalid_argument", "colour"},
		{"schema: nested", "PUT", flagsPath + "/x", `{"spec": {"enabled": true, "variants": [{"key": "BAD KEY"}]}}`, 400, "invalid_argument", "resource.spec.variants[0].key"},
		{"unknown group", "GET", "/apis/nope.cup.dev/v1alpha1/namespaces/default/flags", "", 404, "not_found", "nope.cup.dev"},
		{"unknown version", "GET", "/apis/flags.cup.dev/v9/namespaces/default/flags/x", "", 404, "not_found", "v9"},
		{"unknown plural", "PUT", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flogs/x", `{"spec":{"enabled":true}}`, 404, "not_found", "flogs"},
		{"name mismatch", "PUT", flagsPath + "/x", `{"metadata": {"name": "y"}, "spec": {"enabled": true}}`, 400, "invalid_argument", "resource.metadata.name"},
		{"namespace mismatch", "PUT", flagsPath + "/x", `{"metadata": {"namespace": "staging"}, "spec": {"enabled": true}}`, 400, "invalid_argument", "resource.metadata.namespace"},
		{"kind mismatch", "PUT", flagsPath + "/x", `{"kind": "Service", "spec": {"enabled": true}}`, 400, "invalid_argument", "resource.kind"},
		{"apiVersion mismatch", "PUT", flagsPath + "/x", `{"apiVersion": "apps.cup.dev/v1alpha1", "spec": {"enabled": true}}`, 400, "invalid_argument", "resource.api_version"},
		{"bad label key", "PUT", flagsPath + "/x", `{"metadata": {"labels": {"-bad": "x"}}, "spec": {"enabled": true}}`, 400, "invalid_argument", "labels"},
		{"bad label value", "PUT", flagsPath + "/x", `{"metadata": {"labels": {"team": "a b"}}, "spec": {"enabled": true}}`, 400, "invalid_argument", "labels"},
		{"20 MiB body", "PUT", flagsPath + "/x", huge, 429, "resource_exhausted", "limit"},
		{"bad selector", "GET", flagsPath + "?labelSelector=team+in+(", "", 400, "invalid_argument", "labelSelector"},
		{"bad limit", "GET", flagsPath + "?limit=ten", "", 400, "invalid_argument", "limit"},
		{"negative limit", "GET", flagsPath + "?limit=-1", "", 400, "invalid_argument", "limit: -1"},
		{"forged continue", "GET", flagsPath + "?continue=bm9wZQ", "", 400, "invalid_argument", "page_token"},
		{"revision with ..", "GET", flagsPath + "?revision=main..x", "", 400, "invalid_argument", "revision"},
		{"unknown revision", "GET", flagsPath + "?revision=no-such-branch", "", 404, "not_found", "no-such-branch"},
		{"bad dryRun", "PUT", flagsPath + "/x?dryRun=maybe", `{"spec":{"enabled":true}}`, 400, "invalid_argument", "dryRun"},
		{"precondition on missing", "PUT", flagsPath + "/x?resourceVersion=00ff", `{"spec":{"enabled":true}}`, 409, "aborted", "does not exist"},
		{"delete missing", "DELETE", flagsPath + "/x", "", 404, "not_found", "x"},
		{"write to a commit id", "PUT", flagsPath + "/x?revision=" + f.head(t), `{"spec":{"enabled":true}}`, 400, "failed_precondition", "branch"},
		{"space in idempotency key", "PUT", flagsPath + "/x?idempotencyKey=a+b", `{"spec":{"enabled":true}}`, 400, "invalid_argument", "idempotencyKey: "},
		{"129-character idempotency key", "DELETE", flagsPath + "/x?idempotencyKey=" + strings.Repeat("k", 129), "", 400, "invalid_argument", "idempotencyKey: "},
		{"NUL in idempotency key", "PUT", flagsPath + "/x?idempotencyKey=a%00b", `{"spec":{"enabled":true}}`, 400, "invalid_argument", "idempotencyKey: "},
		{"change set with ..", "PUT", flagsPath + "/x?changeSet=..%2Fx", `{"spec":{"enabled":true}}`, 400, "invalid_argument", "changeSet: "},
		{"change set cup/..", "DELETE", flagsPath + "/x?changeSet=cup/..", "", 400, "invalid_argument", "changeSet: "},
		{"NUL in change set", "PUT", flagsPath + "/x?changeSet=cup/a%00b", `{"spec":{"enabled":true}}`, 400, "invalid_argument", "changeSet: "},
		{"unknown change set", "PUT", flagsPath + "/x?changeSet=cup/nope", `{"spec":{"enabled":true}}`, 404, "not_found", "cup/nope"},
		{"delete in unknown change set", "DELETE", flagsPath + "/dark-mode?changeSet=cup/nope", "", 404, "not_found", "cup/nope"},
	}
	before, refs := f.head(t), f.refs(t)
	for _, tc := range rest {
		t.Run("REST/"+tc.name, func(t *testing.T) {
			r := f.do(t, tc.method, tc.path, tc.body)
			if r.status != tc.status {
				t.Fatalf("status = %d, want %d: %.300s", r.status, tc.status, r.body)
			}
			m := r.json(t)
			if m["code"] != tc.code || !strings.Contains(m["message"].(string), tc.mention) {
				t.Fatalf("body = %.500s, want code %s mentioning %q", r.body, tc.code, tc.mention)
			}
			if f.head(t) != before || !slices.Equal(f.refs(t), refs) {
				t.Fatal("the repository changed")
			}
		})
	}

	rs, _ := f.clients(protocols[0])
	connectCases := []struct {
		name    string
		call    func(context.Context) error
		code    connect.Code
		mention string
	}{
		{"dot-dot name", func(ctx context.Context) error {
			_, err := rs.Put(ctx, connect.NewRequest(putReq(flag(t, "../x", true, nil))))
			return err
		}, connect.CodeInvalidArgument, "name"},
		{"NUL name", func(ctx context.Context) error {
			_, err := rs.Get(ctx, connect.NewRequest(getReq("a\x00b", "")))
			return err
		}, connect.CodeInvalidArgument, "name"},
		{"missing resource", func(ctx context.Context) error {
			_, err := rs.Put(ctx, connect.NewRequest(&cupv1alpha1.PutRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags", Namespace: "default", Name: "x"}))
			return err
		}, connect.CodeInvalidArgument, "resource"},
		{"schema violation", func(ctx context.Context) error {
			req := putReq(flag(t, "x", true, nil))
			req.Resource.Spec.Fields["enabled"] = structpb.NewStringValue("yes")
			_, err := rs.Put(ctx, connect.NewRequest(req))
			return err
		}, connect.CodeInvalidArgument, "resource.spec"},
		{"huge message", func(ctx context.Context) error {
			req := putReq(flag(t, "x", true, nil))
			req.Message = strings.Repeat("m", 5<<20)
			_, err := rs.Put(ctx, connect.NewRequest(req))
			return err
		}, connect.CodeResourceExhausted, ""},
		{"space in idempotency key", putWith(t, rs, func(r *cupv1alpha1.PutRequest) { r.IdempotencyKey = "a b" }), connect.CodeInvalidArgument, "idempotency_key"},
		{"129-character idempotency key", deleteWith(rs, func(r *cupv1alpha1.DeleteRequest) { r.IdempotencyKey = strings.Repeat("k", 129) }), connect.CodeInvalidArgument, "idempotency_key"},
		{"NUL in idempotency key", putWith(t, rs, func(r *cupv1alpha1.PutRequest) { r.IdempotencyKey = "a\x00b" }), connect.CodeInvalidArgument, "idempotency_key"},
		{"change set ../x", putWith(t, rs, func(r *cupv1alpha1.PutRequest) { r.ChangeSet = "../x" }), connect.CodeInvalidArgument, "change_set"},
		{"NUL in change set", deleteWith(rs, func(r *cupv1alpha1.DeleteRequest) { r.ChangeSet = "cup/a\x00b" }), connect.CodeInvalidArgument, "change_set"},
		{"unknown change set", deleteWith(rs, func(r *cupv1alpha1.DeleteRequest) { r.ChangeSet = "cup/nope" }), connect.CodeNotFound, "cup/nope"},
		{"unknown type", func(ctx context.Context) error {
			_, err := rs.List(ctx, connect.NewRequest(&cupv1alpha1.ListRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "nope", Namespace: "default"}))
			return err
		}, connect.CodeNotFound, "nope"},
	}
	for _, tc := range connectCases {
		t.Run("Connect/"+tc.name, func(t *testing.T) {
			err := tc.call(t.Context())
			wantCode(t, err, tc.code)
			if !strings.Contains(connect.CodeOf(err).String()+err.Error(), tc.mention) {
				t.Fatalf("error %v does not mention %q", err, tc.mention)
			}
			if f.head(t) != before || !slices.Equal(f.refs(t), refs) {
				t.Fatal("the repository changed")
			}
		})
	}
}

func TestMaxRequestBytesIsConfigurable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, servertest.WithServerOptions(server.WithMaxRequestBytes(1024)))
	body := `{"spec": {"description": "` + strings.Repeat("x", 2000) + `", "enabled": true}}`
	r := f.do(t, "PUT", flagsPath+"/x", body)
	if r.status != 429 || !bytes.Contains(r.body, []byte("1024 bytes")) {
		t.Fatalf("PUT of 2 KiB with a 1 KiB limit = %d %s", r.status, r.body)
	}
	if ok := f.do(t, "PUT", flagsPath+"/x", `{"spec": {"enabled": true}}`); ok.status != 202 {
		t.Fatalf("small PUT = %d %s", ok.status, ok.body)
	}
}

// putWith returns a call of Put for a valid flag, changed by edit.
func putWith(t *testing.T, rs cupv1alpha1connect.ResourceServiceClient, edit func(*cupv1alpha1.PutRequest)) func(context.Context) error {
	req := putReq(flag(t, "x", true, nil))
	edit(req)
	return func(ctx context.Context) error {
		_, err := rs.Put(ctx, connect.NewRequest(req))
		return err
	}
}

// deleteWith returns a call of Delete for an existing flag, changed by edit.
func deleteWith(rs cupv1alpha1connect.ResourceServiceClient, edit func(*cupv1alpha1.DeleteRequest)) func(context.Context) error {
	req := deleteReq("dark-mode")
	edit(req)
	return func(ctx context.Context) error {
		_, err := rs.Delete(ctx, connect.NewRequest(req))
		return err
	}
}

func TestRESTWrongMethod(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct{ method, path, allow string }{
		{"POST", flagsPath + "/dark-mode", "GET, PUT, PATCH, DELETE"},
		{"PUT", flagsPath, "GET, POST"},
		{"DELETE", "/apis", "GET"},
		{"PUT", "/apis/cup.dev/v1alpha1/proposals/7", "GET"},
		{"PUT", flagsPath + "/dark-mode/status", "GET"},
		{"POST", flagsPath + "/dark-mode/history", "GET"},
		{"DELETE", "/apis/cup.dev/v1alpha1/dependencygraph", "GET"},
	} {
		r := f.do(t, tc.method, tc.path, "{}")
		if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != tc.allow || r.json(t)["code"] != "unimplemented" {
			t.Errorf("%s %s = %d Allow %q %s, want 405 allowing %s", tc.method, tc.path, r.status, r.header.Get("Allow"), r.body, tc.allow)
		}
	}
	for _, path := range []string{"/apis/flags.cup.dev", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/a/b", "/apis//v1alpha1/namespaces/default/flags"} {
		if r := f.do(t, "GET", path, ""); r.status != http.StatusNotFound || r.json(t)["code"] != "not_found" {
			t.Errorf("GET %s = %d %s, want a JSON 404", path, r.status, r.body)
		}
	}
}

// TestRESTRefusesUnknownQueryParameters: a parameter the REST form does not
// take, or one given twice, is refused before anything is read or written,
// naming the parameter; a misspelt dryRun must not write.
func TestRESTRefusesUnknownQueryParameters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head := f.head(t)
	body := `{"spec":{"enabled":true}}`
	for _, tc := range []struct {
		method, path, body, field string
	}{
		{"GET", flagsPath + "/new-checkout?pad=" + strings.Repeat("x", 4096), "", "pad"},
		{"GET", flagsPath + "?revison=main", "", "revison"},
		{"GET", "/apis?x=1", "", "x"},
		{"PUT", flagsPath + "/new-checkout?dry_run=true", body, "dry_run"},
		{"PUT", flagsPath + "/new-checkout?dryRun=true&dryRun=false", body, "dryRun"},
		{"DELETE", flagsPath + "/new-checkout?dryrun=true", "", "dryrun"},
		{"GET", "/apis/cup.dev/v1alpha1/proposals?status=open", "", "status"},
		{"GET", flagsPath + "?limit=%zz", "", "query"},
	} {
		res := f.do(t, tc.method, tc.path, tc.body)
		if res.status != http.StatusBadRequest || !strings.Contains(string(res.body), `"INVALID_ARGUMENT"`) && !strings.Contains(string(res.body), `"invalid_argument"`) {
			t.Errorf("%s %.80s = %d %s, want 400 INVALID_ARGUMENT", tc.method, tc.path, res.status, res.body)
			continue
		}
		if !strings.Contains(string(res.body), tc.field) {
			t.Errorf("%s %.80s: %s does not name %q", tc.method, tc.path, res.body, tc.field)
		}
	}
	if got := f.head(t); got != head {
		t.Fatalf("a refused request moved the branch from %s to %s", head, got)
	}
	if res := f.do(t, "GET", flagsPath+"/new-checkout?revision="+head, ""); res.status != 200 {
		t.Fatalf("GET with a known parameter = %d %s", res.status, res.body)
	}
}
