package server_test

import (
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
)

// The demo's Segments are served by the WASM example controller
// (examples/controllers/flagfile), which keeps a namespace's segments in
// one YAML file. These tests run the API's round trip through it.

const segmentsFile = "segments.flags.cup.dev/default.yaml"

func segmentReq(name string) (string, string, string, string, string) {
	return "flags.cup.dev", "v1alpha1", "segments", "default", name
}

func segment(t *testing.T, name, description string, labels map[string]string) *cupv1alpha1.Resource {
	t.Helper()
	spec, err := structpb.NewStruct(map[string]any{"description": description,
		"rules": []any{map[string]any{"attribute": "plan", "values": []any{"enterprise"}}}})
	if err != nil {
		t.Fatal(err)
	}
	return &cupv1alpha1.Resource{Metadata: &cupv1alpha1.ObjectMeta{Name: name, Labels: labels}, Spec: spec}
}

func TestWASMKind(t *testing.T) {
	t.Parallel()
	eachProtocolWith(t, func(t *testing.T) *fixture { return newAppFixture(t) }, func(t *testing.T, f *fixture, p protocol) {
		rs, _ := f.clients(p)
		ctx := t.Context()
		initial := f.head(t)
		g, v, pl, ns, _ := segmentReq("")

		got, err := rs.Get(ctx, connect.NewRequest(&cupv1alpha1.GetRequest{Group: g, Version: v, Plural: pl, Namespace: ns, Name: "beta-testers"}))
		if err != nil {
			t.Fatal(err)
		}
		if r := got.Msg.Resource; r.Kind != "Segment" || r.Metadata.Labels["team"] != "growth" ||
			r.Spec.Fields["description"].GetStringValue() != "Customers on the beta programme." || r.Metadata.ResourceVersion == "" {
			t.Fatalf("Get = %v", r)
		}
		_, err = rs.Get(ctx, connect.NewRequest(&cupv1alpha1.GetRequest{Group: g, Version: v, Plural: pl, Namespace: ns, Name: "nobody"}))
		wantCode(t, err, connect.CodeNotFound)

		for _, tc := range []struct{ selector, want string }{
			{"", "beta-testers,internal"},
			{"team=platform", "internal"},
			{"team!=platform", "beta-testers"},
		} {
			l, err := rs.List(ctx, connect.NewRequest(&cupv1alpha1.ListRequest{Group: g, Version: v, Plural: pl, Namespace: ns, LabelSelector: tc.selector}))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(names(l.Msg.Items), ","); got != tc.want {
				t.Errorf("List(%q) = %s, want %s", tc.selector, got, tc.want)
			}
		}

		// A put rewrites one entry of the shared file and keeps the others.
		before := readFile(t, f, segmentsFile)
		put, err := rs.Put(ctx, connect.NewRequest(&cupv1alpha1.PutRequest{Group: g, Version: v, Plural: pl, Namespace: ns, Name: "vip",
			Resource: segment(t, "vip", "Big accounts.", map[string]string{"team": "sales"})}))
		if err != nil {
			t.Fatal(err)
		}
		res := put.Msg.Result
		if res.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED || len(res.Changes) != 1 || res.Changes[0].Path != segmentsFile {
			t.Fatalf("Put = %v", res)
		}
		after := readFile(t, f, segmentsFile)
		if !strings.HasPrefix(after, before) || !strings.Contains(after, "vip:") {
			t.Errorf("the put did not append one entry and keep the others:\n%s", after)
		}

		// The same put again changes nothing.
		again, err := rs.Put(ctx, connect.NewRequest(&cupv1alpha1.PutRequest{Group: g, Version: v, Plural: pl, Namespace: ns, Name: "vip",
			Resource: segment(t, "vip", "Big accounts.", map[string]string{"team": "sales"})}))
		if err != nil || again.Msg.Result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED {
			t.Fatalf("repeat Put = %v, %v", again, err)
		}

		// A schema violation is refused before the module runs.
		bad := segment(t, "bad", "x", nil)
		bad.Spec.Fields["rules"] = structpb.NewStringValue("not a list")
		_, err = rs.Put(ctx, connect.NewRequest(&cupv1alpha1.PutRequest{Group: g, Version: v, Plural: pl, Namespace: ns, Name: "bad", Resource: bad}))
		wantCode(t, err, connect.CodeInvalidArgument)

		// Delete, and reads at an older commit still see the first state.
		if _, err := rs.Delete(ctx, connect.NewRequest(&cupv1alpha1.DeleteRequest{Group: g, Version: v, Plural: pl, Namespace: ns, Name: "internal"})); err != nil {
			t.Fatal(err)
		}
		l, err := rs.List(ctx, connect.NewRequest(&cupv1alpha1.ListRequest{Group: g, Version: v, Plural: pl, Namespace: ns}))
		if err != nil || strings.Join(names(l.Msg.Items), ",") != "beta-testers,vip" {
			t.Fatalf("List after delete = %v, %v", l, err)
		}
		old, err := rs.List(ctx, connect.NewRequest(&cupv1alpha1.ListRequest{Group: g, Version: v, Plural: pl, Namespace: ns, Revision: initial}))
		if err != nil || strings.Join(names(old.Msg.Items), ",") != "beta-testers,internal" {
			t.Fatalf("List at the first commit = %v, %v", old, err)
		}
	})
}

func TestWASMKindREST(t *testing.T) {
	t.Parallel()
	f := newAppFixture(t)
	base := "/apis/flags.cup.dev/v1alpha1/namespaces/staging/segments"
	if r := f.do(t, "GET", base+"/internal", ""); r.status != 200 || !strings.Contains(string(r.body), `"email_domain"`) {
		t.Fatalf("GET = %d %s", r.status, r.body)
	}
	if r := f.do(t, "PUT", base+"/qa", `{"spec": {"description": "Testers.", "rules": [{"attribute": "role", "values": ["qa"]}]}}`); r.status != 202 {
		t.Fatalf("PUT = %d %s", r.status, r.body)
	}
	if r := f.do(t, "GET", base, ""); r.status != 200 || !strings.Contains(string(r.body), `"name":"internal"`) || !strings.Contains(string(r.body), `"name":"qa"`) {
		t.Fatalf("LIST = %d %s", r.status, r.body)
	}
	if r := f.do(t, "DELETE", base+"/nobody", ""); r.status != 404 {
		t.Fatalf("DELETE of a missing segment = %d %s", r.status, r.body)
	}
}

// readFile reads a file of the demo repository's default branch.
func readFile(t *testing.T, f *fixture, name string) string {
	t.Helper()
	files, err := f.repo.Files("main")
	if err != nil {
		t.Fatal(err)
	}
	return string(files[name])
}

// TestWASMKindWatch: a type whose controller maps no paths (the WASM
// segments) is watched by comparing the namespace's listings at each
// commit; across namespaces it is refused, since its controller cannot
// tell which exist.
func TestWASMKindWatch(t *testing.T) {
	t.Parallel()
	f := newAppFixture(t)
	p := protocols[0]
	client := cupv1alpha1connect.NewResourceServiceClient(p.httpClient(), f.url, p.opts...)
	no := false
	req := &cupv1alpha1.WatchRequest{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "segments", Namespace: "staging", SendInitialEvents: &no}
	s, err := client.Watch(t.Context(), connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Receive() || s.Msg().GetType() != cupv1alpha1.WatchEventType_WATCH_EVENT_TYPE_BOOKMARK {
		t.Fatalf("first event %v, %v; want the starting BOOKMARK", s.Msg(), s.Err())
	}
	if r := f.do(t, "PUT", "/apis/flags.cup.dev/v1alpha1/namespaces/staging/segments/qa", `{"spec": {"description": "Testers.", "rules": [{"attribute": "role", "values": ["qa"]}]}}`); r.status != 202 {
		t.Fatalf("PUT = %d %s", r.status, r.body)
	}
	if !s.Receive() {
		t.Fatal(s.Err())
	}
	if ev := s.Msg(); ev.GetType() != cupv1alpha1.WatchEventType_WATCH_EVENT_TYPE_ADDED || ev.GetResource().GetMetadata().GetName() != "qa" {
		t.Fatalf("after the put: %v", ev)
	}
	req.Namespace = ""
	all, err := client.Watch(t.Context(), connect.NewRequest(req))
	if err == nil {
		for all.Receive() {
		}
		err = all.Err()
	}
	if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "name a namespace") {
		t.Fatalf("watch of segments across namespaces: %v, want FailedPrecondition asking for a namespace", err)
	}
}
