package server_test

import (
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protowire"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// TestConnectJSONRefusesUnknownFields: Connect's JSON form is read as
// strictly as the REST form. connect-go's own codec drops what it does not
// know, so a misspelt "dryrun" used to commit the write it was meant to
// stop.
func TestConnectJSONRefusesUnknownFields(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head := f.head(t)
	for _, tc := range []struct{ name, body, field string }{
		{"top level", `{"group":"flags.cup.dev","version":"v1alpha1","plural":"flags","namespace":"default","name":"typo",` +
			`"resource":{"spec":{"enabled":true,"rollout":1}},"dryrun":true}`, "dryrun"},
		{"nested", `{"group":"flags.cup.dev","version":"v1alpha1","plural":"flags","namespace":"default","name":"typo",` +
			`"resource":{"metadata":{"lables":{"team":"web"}},"spec":{"enabled":true,"rollout":1}},"dryRun":true}`, "lables"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, ct := range []string{"application/json", "application/json; charset=utf-8"} {
				res := f.do(t, "POST", "/cup.v1alpha1.ResourceService/Put", tc.body, "Content-Type", ct)
				if res.status != http.StatusBadRequest || !strings.Contains(string(res.body), "invalid_argument") ||
					!strings.Contains(string(res.body), `unknown field \"`+tc.field+`\"`) || strings.Contains(string(res.body), "proto:") {
					t.Fatalf("Put with %s (%s) = %d %s, want 400 invalid_argument naming %s", tc.field, ct, res.status, res.body, tc.field)
				}
			}
		})
	}
	if got := f.head(t); got != head {
		t.Fatalf("a refused write moved the branch from %s to %s", head, got)
	}
	// What the codec knows it still reads, in either spelling.
	res := f.do(t, "POST", "/cup.v1alpha1.ResourceService/Get",
		`{"group":"flags.cup.dev","version":"v1alpha1","plural":"flags","namespace":"default","name":"dark-mode","revision":""}`,
		"Content-Type", "application/json")
	if res.status != http.StatusOK || !strings.Contains(string(res.body), `"resourceVersion"`) {
		t.Fatalf("Get = %d %s", res.status, res.body)
	}
}

// TestBinaryFormsRefuseUnknownFields: the binary protocols keep a field
// their proto does not have rather than refuse it; cupd refuses it, naming
// where it was, as it refuses an unknown JSON field: a client newer than
// the server must not have half its request done.
func TestBinaryFormsRefuseUnknownFields(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head := f.head(t)
	for _, p := range protocols {
		if p.name == "connect-json" {
			continue // JSON has no field numbers; TestConnectJSONRefusesUnknownFields
		}
		t.Run(p.name, func(t *testing.T) {
			rs, _ := f.clients(p)
			for _, tc := range []struct {
				where string
				set   func(r *cupv1alpha1.PutRequest, unknown []byte)
			}{
				{"request", func(r *cupv1alpha1.PutRequest, u []byte) { r.ProtoReflect().SetUnknown(u) }},
				{"resource.metadata", func(r *cupv1alpha1.PutRequest, u []byte) { r.Resource.Metadata.ProtoReflect().SetUnknown(u) }},
			} {
				r := putReq(flag(t, "newer", true, nil))
				tc.set(r, protowire.AppendString(protowire.AppendTag(nil, 99, protowire.BytesType), "x"))
				_, err := rs.Put(t.Context(), connect.NewRequest(r))
				if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), tc.where+": holds field number 99") {
					t.Errorf("Put with field 99 in %s = %v, want InvalidArgument naming %s and 99", tc.where, err, tc.where)
				}
			}
		})
	}
	if got := f.head(t); got != head {
		t.Fatalf("a refused write moved the branch from %s to %s", head, got)
	}
}
