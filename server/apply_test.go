package server_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/structpb"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
)

// putItem puts r, a flag of the default namespace unless ns says otherwise.
func putItem(r *cupv1alpha1.Resource, ns string) *cupv1alpha1.ApplyItem {
	g, v, p, _, n := flagRef(r.GetMetadata().GetName())
	return &cupv1alpha1.ApplyItem{Operation: &cupv1alpha1.ApplyItem_Put{Put: &cupv1alpha1.ApplyPut{
		Group: g, Version: v, Plural: p, Namespace: ns, Name: n, Resource: r,
	}}}
}

// deleteItem deletes the flag name in ns.
func deleteItem(name, ns string) *cupv1alpha1.ApplyItem {
	g, v, p, _, n := flagRef(name)
	return &cupv1alpha1.ApplyItem{Operation: &cupv1alpha1.ApplyItem_Delete{Delete: &cupv1alpha1.ApplyDelete{
		Group: g, Version: v, Plural: p, Namespace: ns, Name: n,
	}}}
}

func service(t *testing.T, name, image string) *cupv1alpha1.ApplyItem {
	t.Helper()
	spec, err := structpb.NewStruct(map[string]any{"image": image, "replicas": 2})
	if err != nil {
		t.Fatal(err)
	}
	return &cupv1alpha1.ApplyItem{Operation: &cupv1alpha1.ApplyItem_Put{Put: &cupv1alpha1.ApplyPut{
		Group: "apps.cup.dev", Version: "v1alpha1", Plural: "services", Namespace: "staging", Name: name,
		Resource: &cupv1alpha1.Resource{Metadata: &cupv1alpha1.ObjectMeta{Name: name}, Spec: spec},
	}}}
}

func apply(t *testing.T, rs cupv1alpha1connect.ResourceServiceClient, req *cupv1alpha1.ApplyRequest) (*cupv1alpha1.ApplyResponse, error) {
	t.Helper()
	res, err := rs.Apply(t.Context(), connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	return res.Msg, nil
}

func outcomes(res *cupv1alpha1.ApplyResponse) string {
	var out []string
	for _, it := range res.GetItems() {
		o := strings.ToLower(strings.TrimPrefix(it.GetOutcome().String(), "WRITE_OUTCOME_"))
		if it.GetCreated() {
			o += "+created"
		}
		out = append(out, o)
	}
	return strings.Join(out, " ")
}

// wantItemError checks that err has code and that its message names the
// item as prefix says, and for InvalidArgument that a field violation does.
func wantItemError(t *testing.T, err error, code connect.Code, prefix string) {
	t.Helper()
	wantCode(t, err, code)
	var ce *connect.Error
	if !errors.As(err, &ce) || !strings.HasPrefix(ce.Message(), prefix) {
		t.Fatalf("error %v does not begin with %q", err, prefix)
	}
	if code != connect.CodeInvalidArgument {
		return
	}
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if br, ok := v.(*errdetails.BadRequest); derr == nil && ok {
			for _, fv := range br.GetFieldViolations() {
				if strings.HasPrefix(fv.GetField(), prefix) {
					return
				}
			}
			t.Fatalf("no field violation of %q in %v", prefix, br)
		}
	}
	t.Fatalf("no BadRequest detail in %v", err)
}

func TestApplyOneCommit(t *testing.T) {
	t.Parallel()
	eachProtocol(t, func(t *testing.T, f *fixture, p protocol) {
		rs, _ := f.clients(p)
		before, commits := f.head(t), f.commits(t, "main")
		same, err := rs.Get(t.Context(), connect.NewRequest(getReq("new-checkout", "")))
		if err != nil {
			t.Fatal(err)
		}
		unchanged := same.Msg.Resource
		unchanged.Metadata.ResourceVersion = ""
		res, err := apply(t, rs, &cupv1alpha1.ApplyRequest{Items: []*cupv1alpha1.ApplyItem{
			putItem(flag(t, "beta-banner", true, nil), "default"),
			putItem(flag(t, "beta-banner", false, nil), "staging"),
			service(t, "cache", "redis:7"),
			deleteItem("dark-mode", "default"),
			putItem(unchanged, "default"),
		}})
		if err != nil {
			t.Fatal(err)
		}
		r := res.Result
		if r.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED || r.BaseCommit != before || r.Commit != f.head(t) || len(r.Changes) != 4 {
			t.Fatalf("result %v, want one commit on %s changing 4 files", r, before)
		}
		if got := outcomes(res); got != "committed+created committed+created committed+created committed unchanged" {
			t.Fatalf("outcomes %q", got)
		}
		log, err := f.repo.Log("main")
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != commits+1 || log[0].ID != r.Commit {
			t.Fatalf("%d commits, want %d: one for the batch", len(log), commits+1)
		}
		if msg := log[0].Message; !strings.HasPrefix(msg, "Apply 5 resources\n\nput Flag default/beta-banner (flags.cup.dev/v1alpha1 flags)\n") ||
			!strings.Contains(msg, "delete Flag default/dark-mode") || !strings.Contains(msg, "put Service staging/cache (apps.cup.dev/v1alpha1 services)") {
			t.Fatalf("commit message %q", msg)
		}
		// Each put answers the resource as a Get reads it.
		got, err := rs.Get(t.Context(), connect.NewRequest(&cupv1alpha1.GetRequest{Group: "apps.cup.dev", Version: "v1alpha1", Plural: "services", Namespace: "staging", Name: "cache"}))
		if err != nil {
			t.Fatal(err)
		}
		if v := res.Items[2].Resource.GetMetadata().GetResourceVersion(); v == "" || v != got.Msg.Resource.GetMetadata().GetResourceVersion() || got.Msg.Commit != r.Commit {
			t.Fatalf("item resource_version %q, Get %q at %s", v, got.Msg.Resource.GetMetadata().GetResourceVersion(), got.Msg.Commit)
		}
		if res.Items[3].Resource != nil {
			t.Fatalf("a delete answers a resource: %v", res.Items[3])
		}
		_, err = rs.Get(t.Context(), connect.NewRequest(getReq("dark-mode", "")))
		wantCode(t, err, connect.CodeNotFound)

		// The same batch again changes nothing and writes nothing.
		again, err := apply(t, rs, &cupv1alpha1.ApplyRequest{Items: []*cupv1alpha1.ApplyItem{
			putItem(flag(t, "beta-banner", true, nil), "default"),
			putItem(unchanged, "default"),
		}})
		if err != nil {
			t.Fatal(err)
		}
		if again.Result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED || again.Result.Commit != "" ||
			outcomes(again) != "unchanged unchanged" || f.head(t) != r.Commit {
			t.Fatalf("unchanged batch: %v", again)
		}
	})
}

func TestApplyAllOrNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rs, _ := f.clients(protocols[0])
	head := f.head(t)
	good := putItem(flag(t, "beta-banner", true, nil), "default")
	bad := flag(t, "bad", true, nil)
	bad.Spec.Fields["enabled"] = structpb.NewStringValue("yes-please")
	renamed := putItem(flag(t, "x", true, nil), "default")
	renamed.GetPut().Name = "y"
	unknown := deleteItem("x", "default")
	unknown.GetDelete().Plural = "widgets"
	badName := deleteItem("x", "default")
	badName.GetDelete().Name = "Not_A_Name"
	for _, tc := range []struct {
		name   string
		items  []*cupv1alpha1.ApplyItem
		code   connect.Code
		prefix string
	}{
		{"schema", []*cupv1alpha1.ApplyItem{good, deleteItem("search-v2", "default"), putItem(bad, "default")},
			connect.CodeInvalidArgument, "items[2].put.resource.spec.enabled"},
		{"missing delete", []*cupv1alpha1.ApplyItem{good, deleteItem("nope", "default"), deleteItem("search-v2", "default")},
			connect.CodeNotFound, "items[1] (flags.flags.cup.dev default/nope)"},
		{"name disagrees", []*cupv1alpha1.ApplyItem{good, renamed}, connect.CodeInvalidArgument, "items[1].put.resource.metadata.name"},
		{"unknown type", []*cupv1alpha1.ApplyItem{good, unknown}, connect.CodeNotFound, "items[1].delete: no resource type \"widgets\""},
		{"bad name", []*cupv1alpha1.ApplyItem{good, badName}, connect.CodeInvalidArgument, "items[1].delete.name"},
		{"duplicate", []*cupv1alpha1.ApplyItem{good, deleteItem("search-v2", "default"), putItem(flag(t, "beta-banner", false, nil), "default")},
			connect.CodeInvalidArgument, "items[2].put"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := apply(t, rs, &cupv1alpha1.ApplyRequest{Items: tc.items})
			wantItemError(t, err, tc.code, tc.prefix)
			if got := f.head(t); got != head {
				t.Fatalf("a failed batch moved main from %s to %s", head, got)
			}
		})
	}
	_, err := rs.Get(t.Context(), connect.NewRequest(getReq("beta-banner", "")))
	wantCode(t, err, connect.CodeNotFound)
	_, err = apply(t, rs, &cupv1alpha1.ApplyRequest{Items: []*cupv1alpha1.ApplyItem{good, putItem(flag(t, "beta-banner", false, nil), "default")}})
	if err == nil || !strings.Contains(err.Error(), "is items[0] too") {
		t.Fatalf("duplicate: %v", err)
	}
	// Every item counts against the proto's limit.
	many := make([]*cupv1alpha1.ApplyItem, 10001)
	for i := range many {
		many[i] = deleteItem(fmt.Sprintf("f%d", i), "default")
	}
	_, err = apply(t, rs, &cupv1alpha1.ApplyRequest{Items: many})
	wantItemError(t, err, connect.CodeInvalidArgument, "items")
	_, err = apply(t, rs, &cupv1alpha1.ApplyRequest{})
	wantItemError(t, err, connect.CodeInvalidArgument, "items")
}

func TestApplyPreconditionsAndCreate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rs, _ := f.clients(protocols[1])
	got, err := rs.Get(t.Context(), connect.NewRequest(getReq("dark-mode", "")))
	if err != nil {
		t.Fatal(err)
	}
	version := got.Msg.Resource.GetMetadata().GetResourceVersion()
	head := f.head(t)
	stale := deleteItem("dark-mode", "default")
	stale.GetDelete().ResourceVersion = "0123abcd"
	_, err = apply(t, rs, &cupv1alpha1.ApplyRequest{Items: []*cupv1alpha1.ApplyItem{putItem(flag(t, "beta-banner", true, nil), "default"), stale}})
	wantItemError(t, err, connect.CodeAborted, `items[1] (flags.flags.cup.dev default/dark-mode): precondition failed: flag "dark-mode" has resource_version "`+version+`", not "0123abcd"`)

	exists := putItem(flag(t, "search-v2", true, nil), "default")
	exists.GetPut().Create = true
	_, err = apply(t, rs, &cupv1alpha1.ApplyRequest{Items: []*cupv1alpha1.ApplyItem{putItem(flag(t, "beta-banner", true, nil), "default"), exists}})
	wantItemError(t, err, connect.CodeAlreadyExists, `items[1] (flags.flags.cup.dev default/search-v2): flag "search-v2" already exists in namespace "default"`)

	both := putItem(flag(t, "beta-banner", true, nil), "default")
	both.GetPut().Create, both.GetPut().ResourceVersion = true, version
	_, err = apply(t, rs, &cupv1alpha1.ApplyRequest{Items: []*cupv1alpha1.ApplyItem{both}})
	wantItemError(t, err, connect.CodeInvalidArgument, "items[0].put.resource_version")
	if f.head(t) != head {
		t.Fatal("a failed batch moved main")
	}

	fresh := putItem(flag(t, "beta-banner", true, nil), "default")
	fresh.GetPut().Create = true
	current := deleteItem("dark-mode", "default")
	current.GetDelete().ResourceVersion = version
	gone := deleteItem("nope", "default")
	gone.GetDelete().IgnoreNotFound = true
	res, err := apply(t, rs, &cupv1alpha1.ApplyRequest{Items: []*cupv1alpha1.ApplyItem{fresh, current, gone}, Message: "Create and delete"})
	if err != nil {
		t.Fatal(err)
	}
	if outcomes(res) != "committed+created committed unchanged" || f.head(t) != res.Result.Commit || f.commits(t, "main") != f.commits(t, head)+1 {
		t.Fatalf("got %v", res)
	}
	// A batch of nothing but missing resources to ignore writes nothing.
	res, err = apply(t, rs, &cupv1alpha1.ApplyRequest{Items: []*cupv1alpha1.ApplyItem{gone}})
	if err != nil || res.Result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED || outcomes(res) != "unchanged" {
		t.Fatalf("got %v, %v", res, err)
	}

	// Put's create: AlreadyExists when the resource exists.
	put := putReq(flag(t, "search-v2", true, nil))
	put.Create = true
	_, err = rs.Put(t.Context(), connect.NewRequest(put))
	wantCode(t, err, connect.CodeAlreadyExists)
	put = putReq(flag(t, "brand-new", true, nil))
	put.Create = true
	if _, err := rs.Put(t.Context(), connect.NewRequest(put)); err != nil {
		t.Fatal(err)
	}
	log, err := f.repo.Log("main")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(log[0].Message, "Create Flag default/brand-new") {
		t.Fatalf("message %q", log[0].Message)
	}
	_, err = rs.Put(t.Context(), connect.NewRequest(put))
	wantCode(t, err, connect.CodeAlreadyExists)
}

func TestApplyIdempotentAndDryRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rs, _ := f.clients(protocols[2])
	items := []*cupv1alpha1.ApplyItem{putItem(flag(t, "beta-banner", true, nil), "default"), deleteItem("dark-mode", "staging")}
	head := f.head(t)

	dry, err := apply(t, rs, &cupv1alpha1.ApplyRequest{Items: items, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_DRY_RUN || len(dry.Result.Changes) != 2 || dry.Result.Commit != "" ||
		outcomes(dry) != "dry_run+created dry_run" || dry.Items[0].Resource.GetMetadata().GetResourceVersion() == "" || f.head(t) != head {
		t.Fatalf("dry run: %v", dry)
	}
	for _, c := range dry.Result.Changes {
		if c.Diff == "" {
			t.Fatalf("dry run change without diff: %v", c)
		}
	}

	first, err := apply(t, rs, &cupv1alpha1.ApplyRequest{Items: items, IdempotencyKey: "batch-1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := apply(t, rs, &cupv1alpha1.ApplyRequest{Items: items, IdempotencyKey: "batch-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Result.Replayed || again.Result.Commit != first.Result.Commit || f.head(t) != first.Result.Commit ||
		again.Items[0].Resource.GetMetadata().GetResourceVersion() != first.Items[0].Resource.GetMetadata().GetResourceVersion() {
		t.Fatalf("retry: %v, first %v", again, first)
	}
	if f.commits(t, "main") != f.commits(t, head)+1 {
		t.Fatal("a retry wrote again")
	}
	_, err = apply(t, rs, &cupv1alpha1.ApplyRequest{Items: items[:1], IdempotencyKey: "batch-1"})
	wantCode(t, err, connect.CodeFailedPrecondition)
}

func TestApplyMessageIsBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rs, _ := f.clients(protocols[0])
	items := make([]*cupv1alpha1.ApplyItem, 60)
	for i := range items {
		items[i] = putItem(flag(t, fmt.Sprintf("f%02d", i), true, nil), "default")
	}
	res, err := apply(t, rs, &cupv1alpha1.ApplyRequest{Items: items})
	if err != nil {
		t.Fatal(err)
	}
	log, err := f.repo.Log("main")
	if err != nil {
		t.Fatal(err)
	}
	msg := log[0].Message
	if log[0].ID != res.Result.Commit || !strings.HasPrefix(msg, "Apply 60 resources\n\n") || strings.Count(msg, "\nput Flag ") != 50 ||
		!strings.Contains(msg, "put Flag default/f49 ") || strings.Contains(msg, "f50") || !strings.Contains(msg, "\nand 10 more") {
		t.Fatalf("message %q", msg)
	}
}

func TestApplyAuthorizesEachItem(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	rs, _, _ := f.clientsAs(protocols[0], tokenOf("alice"))
	head := f.head(t)
	_, err := apply(t, rs, &cupv1alpha1.ApplyRequest{Items: []*cupv1alpha1.ApplyItem{
		putItem(flag(t, "beta-banner", true, nil), "staging"),
		deleteItem("new-checkout", "staging"),
		putItem(flag(t, "beta-banner", true, nil), "default"),
	}})
	wantItemError(t, err, connect.CodePermissionDenied, "items[2].put: ")
	if f.head(t) != head {
		t.Fatal("a refused batch moved main")
	}
	res, err := apply(t, rs, &cupv1alpha1.ApplyRequest{Items: []*cupv1alpha1.ApplyItem{
		putItem(flag(t, "beta-banner", true, nil), "staging"),
		deleteItem("new-checkout", "staging"),
	}})
	if err != nil || res.Result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED {
		t.Fatalf("got %v, %v", res, err)
	}
}

func TestRESTCreate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	body := `{"metadata": {"name": "beta-banner", "labels": {"team": "web"}}, "spec": {"enabled": true, "rollout": 12}}`
	r := f.do(t, "POST", flagsPath, body)
	if r.status != http.StatusAccepted {
		t.Fatalf("POST = %d %s", r.status, r.body)
	}
	if !strings.Contains(string(r.body), `"rollout":12`) {
		t.Fatalf("POST answered %s", r.body)
	}
	r = f.do(t, "POST", flagsPath, body)
	if r.status != http.StatusConflict || r.json(t)["code"] != "already_exists" {
		t.Fatalf("POST of an existing resource = %d %s", r.status, r.body)
	}
	r = f.do(t, "POST", flagsPath, `{"spec": {"enabled": true}}`)
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "metadata.name") {
		t.Fatalf("POST without a name = %d %s", r.status, r.body)
	}
	r = f.do(t, "POST", flagsPath+"?resourceVersion=abc", body)
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "resourceVersion") {
		t.Fatalf("POST with resourceVersion = %d %s", r.status, r.body)
	}
}
