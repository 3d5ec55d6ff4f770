package server_test

import (
	"net/http"
	"strings"
	"testing"
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
