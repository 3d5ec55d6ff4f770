package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/server"
)

// TestLimitAboveMaximum: a page larger than the server gives is the
// caller's mistake, whatever the number, on every form: 400 naming the field
// as the caller wrote it, never 429, which clients retry.
func TestLimitAboveMaximum(t *testing.T) {
	t.Parallel()
	f := newFixture(t, servertest.WithServerOptions(server.WithMaxListPage(2)))
	for _, n := range []string{"3", "100001", "2147483647"} {
		res := f.do(t, "GET", flagsPath+"?limit="+n, "")
		if res.status != http.StatusBadRequest || !strings.Contains(string(res.body), "limit: ") ||
			!strings.Contains(string(res.body), "at most 2") || strings.Contains(string(res.body), "page_size") {
			t.Errorf("GET ?limit=%s = %d %s, want 400 naming limit and the maximum 2", n, res.status, res.body)
		}
	}
	for _, p := range protocols {
		rs, _ := f.clients(p)
		for _, n := range []int32{3, 100001} {
			_, err := rs.List(t.Context(), connect.NewRequest(listReq("", n, "")))
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "page_size: ") ||
				!strings.Contains(err.Error(), "at most 2") {
				t.Errorf("%s: List(page_size %d) = %v, want InvalidArgument naming page_size and the maximum 2", p.name, n, err)
			}
		}
	}
}

// TestValidationMessages: a request that breaks the proto's rules is told
// in the caller's words: the field as they wrote it (a REST query parameter
// or header, a Connect field path), the value they sent, and what it must
// be; once per field, never as a regular expression.
func TestValidationMessages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rs, _ := f.clients(protocols[0])
	for _, tc := range []struct {
		name string
		call func() (int, string) // HTTP status or Connect code, and message
		want []string             // each appears exactly once
	}{
		{"rest if-match", func() (int, string) {
			return rest(f.do(t, "DELETE", flagsPath+"/dark-mode", "", "If-Match", `"x"`))
		}, []string{`If-Match: "x" must be a resourceVersion`}},
		{"rest resourceVersion", func() (int, string) {
			return rest(f.do(t, "DELETE", flagsPath+"/dark-mode?resourceVersion=XYZ", ""))
		}, []string{`resourceVersion: "XYZ" must be a resourceVersion`}},
		{"rest name", func() (int, string) {
			return rest(f.do(t, "PUT", flagsPath+"/Bad_Name", `{"metadata":{"name":"Bad_Name"},"spec":{"enabled":true,"rollout":1}}`))
		}, []string{`name: "Bad_Name" must be a DNS subdomain`}},
		{"rest namespace", func() (int, string) {
			return rest(f.do(t, "GET", "/apis/flags.cup.dev/v1alpha1/namespaces/Default/flags/dark-mode", ""))
		}, []string{`namespace: "Default" must be a DNS label`}},
		{"rest revision", func() (int, string) {
			return rest(f.do(t, "GET", flagsPath+"/dark-mode?revision=a..b", ""))
		}, []string{`revision: "a..b" must be a branch, tag or commit`}},
		{"rest change set and idempotency key", func() (int, string) {
			return rest(f.do(t, "DELETE", flagsPath+"/dark-mode?changeSet=-x", "", "Idempotency-Key", "a b"))
		}, []string{`changeSet: "-x" must be`, `Idempotency-Key: "a b" must be`}},
		{"rest label", func() (int, string) {
			return rest(f.do(t, "PUT", flagsPath+"/x", `{"metadata":{"labels":{"team":"-web-"}},"spec":{"enabled":true,"rollout":1}}`))
		}, []string{`resource.metadata.labels["team"]: "-web-" must be a label value`}},
		{"connect name", func() (int, string) {
			r := getReq("Bad_Name", "")
			_, err := rs.Get(t.Context(), connect.NewRequest(r))
			return int(connect.CodeOf(err)), err.Error()
		}, []string{`name: "Bad_Name" must be a DNS subdomain`}},
		{"connect resource_version", func() (int, string) {
			r := putReq(flag(t, "x", true, nil))
			r.ResourceVersion = "x"
			_, err := rs.Put(t.Context(), connect.NewRequest(r))
			return int(connect.CodeOf(err)), err.Error()
		}, []string{`resource_version: "x" must be a resourceVersion`}},
		{"connect metadata", func() (int, string) {
			r := putReq(flag(t, "x", true, map[string]string{"-bad": "v"}))
			r.Resource.Metadata.Name = "X"
			r.Resource.Metadata.ResourceVersion = "nothex"
			_, err := rs.Put(t.Context(), connect.NewRequest(r))
			return int(connect.CodeOf(err)), err.Error()
		}, []string{`resource.metadata.name: "X" must be a DNS subdomain`, `resource.metadata.labels["-bad"]: "-bad" must be a label key`,
			`resource.metadata.resource_version: "nothex" must be a resourceVersion`}},
		{"connect group version plural", func() (int, string) {
			r := getReq("x", "")
			r.Group, r.Version, r.Plural = "Flags", "V1", ""
			_, err := rs.Get(t.Context(), connect.NewRequest(r))
			return int(connect.CodeOf(err)), err.Error()
		}, []string{`group: "Flags" must be a DNS subdomain`, `version: "V1" must be a DNS label`, `plural: must not be empty`}},
		{"connect idempotency key", func() (int, string) {
			r := putReq(flag(t, "x", true, nil))
			r.IdempotencyKey = strings.Repeat("k", 129)
			_, err := rs.Put(t.Context(), connect.NewRequest(r))
			return int(connect.CodeOf(err)), err.Error()
		}, []string{`idempotency_key: "kkkk`, `is 129 characters, more than 128`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := tc.call()
			if code != http.StatusBadRequest && code != int(connect.CodeInvalidArgument) {
				t.Fatalf("got %d %s, want invalid_argument", code, msg)
			}
			for _, w := range tc.want {
				if n := strings.Count(msg, w); n != 1 {
					t.Errorf("message %s holds %q %d times, want once", msg, w, n)
				}
			}
			for _, bad := range []string{"regex", "^[", "value length", "does not match"} {
				if strings.Contains(msg, bad) {
					t.Errorf("message %s speaks of %q", msg, bad)
				}
			}
		})
	}
}

// rest is a REST answer's status and message.
func rest(r restResponse) (int, string) {
	var e struct{ Message string }
	_ = json.Unmarshal(r.body, &e)
	return r.status, e.Message
}
