package server_test

import (
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/cup-dev/cup/internal/servertest"
)

// TestInvalidUTF8FileIsNamed: JSON is UTF-8, so a file holding other bytes
// cannot be served as it is, and replacing them would change the content
// under the caller's feet: a Get answers FailedPrecondition naming the file
// on every form, a list leaves it out with a warning naming it, and neither
// is JSON that is not JSON.
func TestInvalidUTF8FileIsNamed(t *testing.T) {
	t.Parallel()
	const services = "/apis/apps.cup.dev/v1alpha1/namespaces/default/services"
	for _, tc := range []struct{ name, path, file string }{
		{"yaml spec", "flags/default/latin1.yaml", "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata:\n  name: latin1\n  namespace: default\nspec:\n  description: \"caf\xe9\"\n  enabled: true\n  rollout: 1\n"},
		{"yaml annotation", "flags/default/latin1.yaml", "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata:\n  name: latin1\n  namespace: default\n  annotations:\n    note: \"caf\xe9\"\nspec:\n  enabled: true\n  rollout: 1\n"},
		{"json spec", "services/default/latin1.json", `{"apiVersion": "apps.cup.dev/v1alpha1", "kind": "Service", "metadata": {"name": "latin1", "namespace": "default"}, "spec": {"image": "caf` + "\xe9" + `", "replicas": 1}}`},
		{"json annotation", "services/default/latin1.json", `{"apiVersion": "apps.cup.dev/v1alpha1", "kind": "Service", "metadata": {"name": "latin1", "namespace": "default", "annotations": {"note": "caf` + "\xe9" + `"}}, "spec": {"image": "cafe", "replicas": 1}}`},
		{"json label key", "services/default/latin1.json", `{"apiVersion": "apps.cup.dev/v1alpha1", "kind": "Service", "metadata": {"name": "latin1", "namespace": "default", "labels": {"caf` + "\xe9" + `": "x"}}, "spec": {"image": "cafe", "replicas": 1}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			collection, g := flagsPath, getReq("latin1", "")
			if strings.HasPrefix(tc.path, "services/") {
				collection = services
				g.Group, g.Plural = "apps.cup.dev", "services"
			}
			f := newFixture(t, servertest.WithFiles(map[string][]byte{tc.path: []byte(tc.file)}))
			res := f.do(t, "GET", collection+"/latin1", "")
			if m := res.json(t); res.status != http.StatusBadRequest || m["code"] != "failed_precondition" ||
				!strings.Contains(m["message"].(string), tc.path) || !strings.Contains(m["message"].(string), "UTF-8") {
				t.Errorf("GET %s/latin1 = %d %q, want failed_precondition naming %s and UTF-8", collection, res.status, res.body, tc.path)
			}
			// A list leaves the file out, with a warning naming it.
			res = f.do(t, "GET", collection, "")
			if res.status != http.StatusOK || strings.Contains(string(res.body), `"name":"latin1"`) ||
				!strings.Contains(res.header.Get("Warning"), tc.path) || !strings.Contains(res.header.Get("Warning"), "UTF-8") {
				t.Errorf("GET %s = %d %v %q, want 200 without latin1 and a warning naming %s and UTF-8", collection, res.status, res.header["Warning"], res.body, tc.path)
			}
			for _, p := range protocols {
				rs, _ := f.clients(p)
				_, err := rs.Get(t.Context(), connect.NewRequest(g))
				if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), tc.path) {
					t.Errorf("%s: Get = %v, want FailedPrecondition naming %s", p.name, err, tc.path)
				}
			}
		})
	}
}
