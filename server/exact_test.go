package server_test

import (
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// TestProtoFormsKeepExactNumbers: a google.protobuf.Struct holds every
// number as a float64, so the proto forms carried 9007199254740993 as
// 9007199254740992 under the resourceVersion the REST form shows it exactly
// with. Such a spec now travels in spec_json, on reads and writes, and
// reads back unchanged.
func TestProtoFormsKeepExactNumbers(t *testing.T) {
	t.Parallel()
	f := newPermissiveFixture(t)
	const spec = `{"big":12345678901234567890,"enabled":true,"odd":9007199254740993,"small":0.1}`
	if res := f.do(t, "PUT", flagsPath+"/exact", `{"spec":`+spec+`}`); res.status != http.StatusAccepted {
		t.Fatalf("PUT = %d %.300s", res.status, res.body)
	}
	etag := f.do(t, "GET", flagsPath+"/exact", "").header.Get("ETag")
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			rs, _ := f.clients(p)
			ctx := t.Context()
			got, err := rs.Get(ctx, connect.NewRequest(getReq("exact", "")))
			if err != nil {
				t.Fatal(err)
			}
			r := got.Msg.Resource
			if r.SpecJson != spec || r.Spec != nil || `"`+r.Metadata.ResourceVersion+`"` != etag {
				t.Fatalf("Get = spec %v, spec_json %s, resourceVersion %s; want spec_json %s and no spec, resourceVersion %s", r.Spec, r.SpecJson, r.Metadata.ResourceVersion, spec, etag)
			}
			// A spec a Struct holds exactly still comes as one.
			plain, err := rs.Get(ctx, connect.NewRequest(getReq("dark-mode", "")))
			if err != nil {
				t.Fatal(err)
			}
			if plain.Msg.Resource.Spec == nil || plain.Msg.Resource.SpecJson != "" {
				t.Fatalf("Get(dark-mode) = %v, want spec and no spec_json", plain.Msg.Resource)
			}
			// What was read, written back, changes nothing.
			back, err := rs.Put(ctx, connect.NewRequest(putReq(r)))
			if err != nil {
				t.Fatal(err)
			}
			if back.Msg.Result.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED {
				t.Fatalf("Put of what Get returned = %v, want unchanged", back.Msg.Result)
			}
			// A write in spec_json is stored as written.
			name := "exact-" + p.name
			w := &cupv1alpha1.Resource{Metadata: &cupv1alpha1.ObjectMeta{Name: name}, SpecJson: `{"n": 9007199254740995, "m": 0.5}`}
			put, err := rs.Put(ctx, connect.NewRequest(putReq(w)))
			if err != nil {
				t.Fatal(err)
			}
			if put.Msg.Resource.SpecJson != `{"m":0.5,"n":9007199254740995}` {
				t.Fatalf("Put answered spec_json %q", put.Msg.Resource.SpecJson)
			}
			if res := f.do(t, "GET", flagsPath+"/"+name, ""); !strings.Contains(string(res.body), `"spec":{"m":0.5,"n":9007199254740995}`) {
				t.Fatalf("REST GET after a Put in spec_json = %s", res.body)
			}
			// Both at once is a mistake.
			both := &cupv1alpha1.Resource{Metadata: &cupv1alpha1.ObjectMeta{Name: name}, SpecJson: `{}`, Spec: &structpb.Struct{}}
			_, err = rs.Put(ctx, connect.NewRequest(putReq(both)))
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "resource.spec_json") {
				t.Fatalf("Put of spec and spec_json = %v, want InvalidArgument naming resource.spec_json", err)
			}
			bad := &cupv1alpha1.Resource{Metadata: &cupv1alpha1.ObjectMeta{Name: name}, SpecJson: `[1]`}
			_, err = rs.Put(ctx, connect.NewRequest(putReq(bad)))
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "resource.spec_json: must be a JSON object") {
				t.Fatalf("Put of spec_json [1] = %v, want InvalidArgument naming resource.spec_json", err)
			}
		})
	}
	// The JSON form of the message carries the spec as a string, which no
	// JSON parser rounds.
	res := f.do(t, "POST", "/cup.v1alpha1.ResourceService/Get",
		`{"group":"flags.cup.dev","version":"v1alpha1","plural":"flags","namespace":"default","name":"exact"}`, "Content-Type", "application/json")
	var got cupv1alpha1.GetResponse
	if err := protojson.Unmarshal(res.body, &got); err != nil || got.Resource.GetSpecJson() != spec {
		t.Fatalf("Connect JSON Get = %s (%v)", res.body, err)
	}
}
