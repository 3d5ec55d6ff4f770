package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/cup-dev/cup/auth"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/rbac"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/server"
)

const accessReviewsPath = "/apis/cup.dev/v1alpha1/accessreviews"

// usersAuthn takes "Bearer <user>" for each user of testUsers, with the
// user's groups.
type usersAuthn struct{}

func (usersAuthn) Authenticate(r *http.Request) (*auth.Identity, error) {
	user, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	groups, ok := testUsers[user]
	if !ok {
		return nil, auth.Unauthenticatedf("no such user")
	}
	return &auth.Identity{User: user, Groups: groups, Method: auth.MethodToken}, nil
}

// newPolicyFixture serves the demo under testPolicy (internal/rbac), with
// the users of testUsers, each authenticated by the bearer token that is
// its name.
func newPolicyFixture(t *testing.T, opts ...servertest.Option) *servertest.Server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(testPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	policy, err := rbac.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return servertest.Start(t, append(opts, servertest.WithServerOptions(server.WithAuthorization(usersAuthn{}, policy)))...)
}

// accessChecks are checks of flags and services in default and staging, of
// proposals, and of a type nobody serves.
var accessChecks = []*cupv1alpha1.AccessCheck{
	{Verb: "put", Group: "flags.cup.dev", Plural: "flags", Namespace: "staging", Name: "dark-mode"},
	{Verb: "list", Group: "flags.cup.dev", Plural: "flags", Namespace: "default"},
	{Verb: "get", Group: "flags.cup.dev", Plural: "flags", Namespace: "default", Name: "new-checkout"},
	{Verb: "get", Group: "flags.cup.dev", Plural: "flags", Namespace: "default", Name: "dark-mode"},
	{Verb: "list", Group: "flags.cup.dev", Plural: "flags"},
	{Verb: "list", Group: "apps.cup.dev", Plural: "services", Namespace: "default"},
	{Verb: "list", Group: "cup.dev", Plural: "proposals"},
	{Verb: "delete", Group: "nothing.example.com", Plural: "widgets", Namespace: "default", Name: "w"},
}

// TestCheckAccess: under a policy each check is the policy's answer, a
// type nobody serves included, and the caller is who the server takes it
// for; without one every check is allowed and nobody is named.
func TestCheckAccess(t *testing.T) {
	t.Parallel()
	srv := newPolicyFixture(t)
	for user, want := range map[string][]bool{
		"alice": {true, false, false, false, false, false, false, false},
		"bob":   {false, true, true, true, false, false, false, false},
		"carol": {true, true, true, true, true, true, true, true},
		"dave":  {false, false, true, false, false, false, false, false},
		"eve":   make([]bool, len(accessChecks)),
	} {
		for _, p := range servertest.Protocols {
			res, err := srv.Clients(p, bearer(user)).Discovery.CheckAccess(t.Context(),
				connect.NewRequest(&cupv1alpha1.CheckAccessRequest{Checks: accessChecks}))
			if err != nil {
				t.Fatalf("%s over %s: %v", user, p.Name, err)
			}
			m := res.Msg
			if !slices.Equal(m.Allowed, want) || m.User != user || !slices.Equal(m.Groups, testUsers[user]) || m.Method != "token" || !m.Policy {
				t.Errorf("%s over %s: %v, want allowed %v for %s %v by token under a policy", user, p.Name, m, want, user, testUsers[user])
			}
		}
	}
	_, err := srv.Clients(servertest.Protocols[0]).Discovery.CheckAccess(t.Context(),
		connect.NewRequest(&cupv1alpha1.CheckAccessRequest{Checks: accessChecks}))
	wantCode(t, err, connect.CodeUnauthenticated)

	// REST: the same answer, every field present.
	r := srv.Do(t, "POST", accessReviewsPath, `{"checks": [{"verb": "put", "group": "flags.cup.dev", "plural": "flags", "namespace": "staging"},
		{"verb": "put", "group": "flags.cup.dev", "plural": "flags", "namespace": "default"}]}`, "Authorization", "Bearer alice")
	if r.Status != http.StatusOK || !sameJSON(t, []byte(r.Body), []byte(`{"user":"alice","groups":["editors"],"method":"token","policy":true,"allowed":[true,false]}`)) {
		t.Errorf("POST %s as alice: %d %s", accessReviewsPath, r.Status, r.Body)
	}
	if r := srv.Do(t, "POST", accessReviewsPath, "", "Authorization", "Bearer eve"); r.Status != http.StatusOK ||
		!sameJSON(t, []byte(r.Body), []byte(`{"user":"eve","groups":[],"method":"token","policy":true,"allowed":[]}`)) {
		t.Errorf("POST %s as eve without a body: %d %s, want who eve is", accessReviewsPath, r.Status, r.Body)
	}
	if r := srv.Do(t, "POST", accessReviewsPath, `{"checks": []}`); r.Status != http.StatusUnauthorized {
		t.Errorf("POST %s without credentials: %d %s, want 401", accessReviewsPath, r.Status, r.Body)
	}
}

func TestCheckAccessWithoutPolicy(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	for _, p := range servertest.Protocols {
		res, err := srv.Clients(p).Discovery.CheckAccess(t.Context(), connect.NewRequest(&cupv1alpha1.CheckAccessRequest{Checks: accessChecks}))
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if m := res.Msg; m.Policy || m.User != "" || m.Method != "" || len(m.Groups) != 0 || len(m.Allowed) != len(accessChecks) || slices.Contains(m.Allowed, false) {
			t.Errorf("%s: %v, want every check allowed, no policy and nobody", p.Name, m)
		}
	}
	r := srv.Do(t, "POST", accessReviewsPath, `{"checks": [{"verb": "watch", "group": "nothing.example.com", "plural": "widgets"}]}`)
	if r.Status != http.StatusOK || !sameJSON(t, []byte(r.Body), []byte(`{"user":"","groups":[],"method":"","policy":false,"allowed":[true]}`)) {
		t.Errorf("POST %s: %d %s", accessReviewsPath, r.Status, r.Body)
	}
}

// TestCheckAccessRefusesBadChecks: a bad check is InvalidArgument naming
// it, over Connect and REST; the REST form refuses fields the request does
// not have, query parameters, and other methods.
func TestCheckAccessRefusesBadChecks(t *testing.T) {
	t.Parallel()
	srv := servertest.Start(t)
	good := func() *cupv1alpha1.AccessCheck {
		return &cupv1alpha1.AccessCheck{Verb: "get", Group: "flags.cup.dev", Plural: "flags"}
	}
	for _, tc := range []struct {
		edit  func(c *cupv1alpha1.AccessCheck)
		field string
	}{
		{func(c *cupv1alpha1.AccessCheck) { c.Verb = "patch" }, "checks[1].verb"},
		{func(c *cupv1alpha1.AccessCheck) { c.Group = "" }, "checks[1].group"},
		{func(c *cupv1alpha1.AccessCheck) { c.Plural = "Flags" }, "checks[1].plural"},
		{func(c *cupv1alpha1.AccessCheck) { c.Namespace = "a/b" }, "checks[1].namespace"},
		{func(c *cupv1alpha1.AccessCheck) { c.Name = "-x" }, "checks[1].name"},
	} {
		bad := good()
		tc.edit(bad)
		_, err := srv.Clients(servertest.Protocols[0]).Discovery.CheckAccess(t.Context(),
			connect.NewRequest(&cupv1alpha1.CheckAccessRequest{Checks: []*cupv1alpha1.AccessCheck{good(), bad}}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("check %v: %v, want InvalidArgument naming %s", bad, err, tc.field)
		}
	}
	many := make([]*cupv1alpha1.AccessCheck, 257)
	for i := range many {
		many[i] = good()
	}
	_, err := srv.Clients(servertest.Protocols[0]).Discovery.CheckAccess(t.Context(), connect.NewRequest(&cupv1alpha1.CheckAccessRequest{Checks: many}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "checks:") {
		t.Errorf("257 checks: %v, want InvalidArgument naming checks", err)
	}

	for _, tc := range []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"POST", accessReviewsPath, `{"checks": [{"verb": "get", "group": "flags.cup.dev", "plural": "flags", "namespaces": "x"}]}`, 400, `unknown field \"namespaces\"`},
		{"POST", accessReviewsPath, `{"checks": [{"verb": "patch", "group": "flags.cup.dev", "plural": "flags"}]}`, 400, "checks[0].verb"},
		{"POST", accessReviewsPath, `{"checks": {}}`, 400, "body"},
		{"POST", accessReviewsPath, `[`, 400, "body"},
		{"POST", accessReviewsPath + "?user=bob", `{}`, 400, "user"},
		{"GET", accessReviewsPath, "", 405, "use POST"},
		{"PUT", accessReviewsPath, `{}`, 405, "use POST"},
	} {
		r := srv.Do(t, tc.method, tc.path, tc.body)
		if r.Status != tc.status || !strings.Contains(r.Body, tc.want) {
			t.Errorf("%s %s %s: %d %s, want %d naming %s", tc.method, tc.path, tc.body, r.Status, r.Body, tc.status, tc.want)
		}
		if r.Status == http.StatusMethodNotAllowed && r.Header.Get("Allow") != "POST" {
			t.Errorf("%s %s: Allow %q, want POST", tc.method, tc.path, r.Header.Get("Allow"))
		}
		var e struct{ Code string }
		if err := json.Unmarshal([]byte(r.Body), &e); err != nil || e.Code == "" {
			t.Errorf("%s %s: %s is not the REST form's error", tc.method, tc.path, r.Body)
		}
	}
}
