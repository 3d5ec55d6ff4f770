package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/auth/authtest"
	"github.com/cup-dev/cup/internal/auth/oidc"
)

// testPolicy grants:
//   - group viewers: get and list flags in default (a ClusterRole bound in
//     one namespace);
//   - group editors: every verb on flags in staging (a Role);
//   - user carol: everything everywhere, proposals included;
//   - user dave: get and put of the flag new-checkout in default only;
//   - user eve: nothing (a valid token, no binding).
const testPolicy = `
apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata: {name: flag-viewer}
rules:
- apiGroups: [flags.cup.dev]
  resources: [flags]
  verbs: [get, list]
---
apiVersion: cup.dev/v1alpha1
kind: RoleBinding
metadata: {name: flag-viewers, namespace: default}
subjects: [{kind: Group, name: viewers}]
roleRef: {kind: ClusterRole, name: flag-viewer}
---
apiVersion: cup.dev/v1alpha1
kind: Role
metadata: {name: flag-editor, namespace: staging}
rules:
- apiGroups: [flags.cup.dev]
  resources: [flags]
  verbs: [get, list, put, delete]
---
apiVersion: cup.dev/v1alpha1
kind: RoleBinding
metadata: {name: editors, namespace: staging}
subjects: [{kind: Group, name: editors}]
roleRef: {kind: Role, name: flag-editor}
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata: {name: admin}
rules:
- apiGroups: ["*"]
  resources: ["*"]
  verbs: ["*"]
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRoleBinding
metadata: {name: admins}
subjects: [{kind: User, name: carol}]
roleRef: {kind: ClusterRole, name: admin}
---
apiVersion: cup.dev/v1alpha1
kind: Role
metadata: {name: one-flag, namespace: default}
rules:
- apiGroups: [flags.cup.dev]
  resources: [flags]
  verbs: [get, put]
  resourceNames: [new-checkout]
---
apiVersion: cup.dev/v1alpha1
kind: RoleBinding
metadata: {name: dave-one-flag, namespace: default}
subjects: [{kind: User, name: dave}]
roleRef: {kind: Role, name: one-flag}
`

// testUsers are the users of the tokens file, with their groups.
var testUsers = map[string][]string{
	"alice": {"editors"},
	"bob":   {"viewers"},
	"carol": nil,
	"dave":  nil,
	"eve":   nil,
}

// tokenOf is the bearer token of a user in the tokens file.
func tokenOf(user string) string { return "cup-test-token-" + user + "-0123456789abcdef" }

// writeAuthFiles writes the policy and a tokens file (hashes only) into a
// temporary directory.
func writeAuthFiles(t *testing.T) (policy, tokens string) {
	t.Helper()
	dir := t.TempDir()
	policy = filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(testPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("tokens:\n")
	for user, groups := range testUsers {
		sum := sha256.Sum256([]byte(tokenOf(user)))
		g, _ := json.Marshal(groups)
		if groups == nil {
			g = []byte("[]")
		}
		fmt.Fprintf(&b, "- sha256: %s\n  user: %s\n  groups: %s\n", hex.EncodeToString(sum[:]), user, g)
	}
	tokens = filepath.Join(dir, "tokens.yaml")
	if err := os.WriteFile(tokens, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return policy, tokens
}

// newAuthFixture serves the demo with the test policy and tokens, and
// optionally an OIDC issuer.
func newAuthFixture(t *testing.T, edit ...func(*app.Auth)) *fixture {
	t.Helper()
	policy, tokens := writeAuthFiles(t)
	return newAppFixture(t, func(o *app.Options) {
		o.Auth = app.Auth{PolicyPath: policy, TokensFile: tokens}
		for _, e := range edit {
			e(&o.Auth)
		}
	})
}

// bearer makes a client option that sends token.
func bearer(token string) connect.ClientOption {
	return connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if token != "" {
				req.Header().Set("Authorization", "Bearer "+token)
			}
			return next(ctx, req)
		}
	}))
}

func (f *fixture) clientsAs(p protocol, token string) (cupv1alpha1connect.ResourceServiceClient, cupv1alpha1connect.DiscoveryServiceClient, cupv1alpha1connect.ProposalServiceClient) {
	hc := p.httpClient()
	opts := append([]connect.ClientOption{bearer(token)}, p.opts...)
	return cupv1alpha1connect.NewResourceServiceClient(hc, f.url, opts...),
		cupv1alpha1connect.NewDiscoveryServiceClient(hc, f.url, opts...),
		cupv1alpha1connect.NewProposalServiceClient(hc, f.url, opts...)
}

// matrix is who may do what to the flag new-checkout (which every
// namespace of the demo has), by user, verb and namespace.
var matrix = map[string]map[string][]string{
	// user: verb: namespaces where allowed
	"alice": {"get": {"staging"}, "list": {"staging"}, "put": {"staging"}, "delete": {"staging"}},
	"bob":   {"get": {"default"}, "list": {"default"}},
	"carol": {"get": {"default", "staging", "production"}, "list": {"default", "staging", "production"}, "put": {"default", "staging", "production"}, "delete": {"default", "staging", "production"}},
	"dave":  {"get": {"default"}, "put": {"default"}},
	"eve":   {},
}

var (
	matrixVerbs      = []string{"get", "list", "put", "delete"}
	matrixNamespaces = []string{"default", "staging", "production"}
)

func allowedIn(user, verb, ns string) bool {
	for _, n := range matrix[user][verb] {
		if n == ns {
			return true
		}
	}
	return false
}

// flagIn is a valid new-checkout flag for namespace ns.
func flagIn(t *testing.T, ns string) *cupv1alpha1.PutRequest {
	req := putReq(flag(t, "new-checkout", true, nil))
	req.Namespace = ns
	req.DryRun = true
	return req
}

func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			for user := range matrix {
				rs, _, _ := f.clientsAs(p, tokenOf(user))
				for _, verb := range matrixVerbs {
					for _, ns := range matrixNamespaces {
						var err error
						ctx := t.Context()
						switch verb {
						case "get":
							req := getReq("new-checkout", "")
							req.Namespace = ns
							_, err = rs.Get(ctx, connect.NewRequest(req))
						case "list":
							req := listReq("", 0, "")
							req.Namespace = ns
							_, err = rs.List(ctx, connect.NewRequest(req))
						case "put":
							_, err = rs.Put(ctx, connect.NewRequest(flagIn(t, ns)))
						case "delete":
							req := deleteReq("new-checkout")
							req.Namespace, req.DryRun = ns, true
							_, err = rs.Delete(ctx, connect.NewRequest(req))
						}
						if allowedIn(user, verb, ns) {
							if err != nil {
								t.Errorf("%s %s in %s: %v, want allowed", user, verb, ns, err)
							}
							continue
						}
						if connect.CodeOf(err) != connect.CodePermissionDenied {
							t.Errorf("%s %s in %s: %v, want permission_denied", user, verb, ns, err)
							continue
						}
						msg := err.Error()
						if !strings.Contains(msg, fmt.Sprintf("%q may not %s flags.flags.cup.dev", user, verb)) || !strings.Contains(msg, fmt.Sprintf("namespace %q", ns)) {
							t.Errorf("%s %s in %s: message %q does not say who may not do what", user, verb, ns, msg)
						}
					}
				}
			}
		})
	}
}

func TestAuthorizationMatrixREST(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	body, err := protojson.Marshal(flag(t, "new-checkout", true, nil))
	if err != nil {
		t.Fatal(err)
	}
	for user := range matrix {
		for _, verb := range matrixVerbs {
			for _, ns := range matrixNamespaces {
				collection := "/apis/flags.cup.dev/v1alpha1/namespaces/" + ns + "/flags"
				var r restResponse
				auth := []string{"Authorization", "Bearer " + tokenOf(user)}
				switch verb {
				case "get":
					r = f.do(t, "GET", collection+"/new-checkout", "", auth...)
				case "list":
					r = f.do(t, "GET", collection, "", auth...)
				case "put":
					r = f.do(t, "PUT", collection+"/new-checkout?dryRun=true", string(body), auth...)
				case "delete":
					r = f.do(t, "DELETE", collection+"/new-checkout?dryRun=true", "", auth...)
				}
				if allowedIn(user, verb, ns) {
					if r.status >= 300 {
						t.Errorf("REST %s %s in %s = %d %s, want allowed", user, verb, ns, r.status, r.body)
					}
					continue
				}
				if r.status != http.StatusForbidden || r.json(t)["code"] != "permission_denied" {
					t.Errorf("REST %s %s in %s = %d %s, want 403 permission_denied", user, verb, ns, r.status, r.body)
				}
			}
		}
	}
}

// TestDiscoveryShowsWhatTheCallerMayUse: discovery lists only the types a
// caller may use at all, and a type it may not use is not found.
func TestDiscoveryShowsWhatTheCallerMayUse(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	want := map[string]string{
		"bob":   "flags.flags.cup.dev",
		"dave":  "flags.flags.cup.dev",
		"eve":   "",
		"carol": "bundles.flags.cup.dev,configlayers.config.cup.dev,flagbundles.flags.cup.dev,flags.flags.cup.dev,segments.flags.cup.dev,serviceconfigs.config.cup.dev,services.apps.cup.dev",
	}
	for user, w := range want {
		_, ds, _ := f.clientsAs(protocols[0], tokenOf(user))
		res, err := ds.ListDefinitions(t.Context(), connect.NewRequest(&cupv1alpha1.ListDefinitionsRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range res.Msg.Definitions {
			got = append(got, d.Name)
		}
		if strings.Join(got, ",") != w {
			t.Errorf("%s: ListDefinitions = %v, want %s", user, got, w)
		}
		r := f.do(t, "GET", "/apis", "", "Authorization", "Bearer "+tokenOf(user))
		var rest cupv1alpha1.ListDefinitionsResponse
		if err := protojson.Unmarshal(r.body, &rest); err != nil || len(rest.Definitions) != len(got) {
			t.Errorf("%s: GET /apis = %d %s", user, r.status, r.body)
		}
	}
	_, ds, _ := f.clientsAs(protocols[0], tokenOf("bob"))
	_, err := ds.GetDefinition(t.Context(), connect.NewRequest(&cupv1alpha1.GetDefinitionRequest{Group: "apps.cup.dev", Name: "services"}))
	wantCode(t, err, connect.CodeNotFound)
}

func TestProposalsNeedAClusterWideGrant(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	_, _, ps := f.clientsAs(protocols[0], tokenOf("bob"))
	_, err := ps.ListProposals(t.Context(), connect.NewRequest(&cupv1alpha1.ListProposalsRequest{}))
	wantCode(t, err, connect.CodePermissionDenied)
	// carol may: the demo has no SCM, which is the next thing she hears.
	_, _, ps = f.clientsAs(protocols[0], tokenOf("carol"))
	_, err = ps.ListProposals(t.Context(), connect.NewRequest(&cupv1alpha1.ListProposalsRequest{}))
	wantCode(t, err, connect.CodeFailedPrecondition)
}

// TestWritesRecordTheCaller: a write's commit names who asked for it, and
// another user's repeat of an idempotency key does not replay it.
func TestWritesRecordTheCaller(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	rs, _, _ := f.clientsAs(protocols[0], tokenOf("alice"))
	req := flagIn(t, "staging")
	req.DryRun = false
	req.IdempotencyKey = "alice-1"
	res, err := rs.Put(t.Context(), connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	log, err := f.repo.Log(res.Msg.Result.Commit)
	if err != nil {
		t.Fatal(err)
	}
	if msg := log[0].Message; !strings.Contains(msg, "\nRequested-by: alice\n") {
		t.Fatalf("commit message %q does not name the caller", msg)
	}
	// The same request and key from carol is a different request, and her
	// key is her own: it neither replays alice's write nor is refused.
	rs, _, _ = f.clientsAs(protocols[0], tokenOf("carol"))
	got, err := rs.Put(t.Context(), connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	if r := got.Msg.Result; r.Replayed || r.Commit == res.Msg.Result.Commit {
		t.Fatalf("carol's write with alice's key = %v, want her own outcome", r)
	}
}

// carolToken is a token from is for carol, a viewer, changed by edit
// (unless nil) and signed with key.
func carolToken(t *testing.T, is *authtest.Issuer, key authtest.Key, edit func(map[string]any)) string {
	t.Helper()
	now := time.Now()
	claims := is.Claims()
	claims["sub"], claims["groups"] = "carol", []string{"viewers"}
	claims["nbf"], claims["exp"] = now.Unix(), now.Add(time.Hour).Unix()
	if edit != nil {
		edit(claims)
	}
	return authtest.Sign(t, key, claims)
}

// TestUnauthenticated: every way credentials can be wrong is
// Unauthenticated, over Connect, gRPC and REST, and says nothing about the
// repository; a valid caller the policy does not allow is PermissionDenied.
func TestUnauthenticated(t *testing.T) {
	t.Parallel()
	is := authtest.NewIssuer(t)
	f := newAuthFixture(t, func(a *app.Auth) {
		a.OIDC = oidc.Config{IssuerURL: is.URL(), Audience: authtest.Audience, HTTPClient: is.Client()}
	})
	key, other := is.Key(), authtest.NewKey(t, is.Key().ID)
	head := f.head(t)
	tests := []struct {
		name, authorization string
		want                connect.Code
	}{
		{"missing", "", connect.CodeUnauthenticated},
		{"malformed", "Bearer", connect.CodeUnauthenticated},
		{"other scheme", "Basic YWxpY2U6c2VjcmV0", connect.CodeUnauthenticated},
		{"unknown static token", "Bearer cup-test-token-mallory", connect.CodeUnauthenticated},
		{"not a JWT", "Bearer a.b.c", connect.CodeUnauthenticated},
		{"expired", "Bearer " + carolToken(t, is, key, func(c map[string]any) {
			c["exp"] = time.Now().Add(-time.Hour).Unix()
			c["iat"] = time.Now().Add(-2 * time.Hour).Unix()
			c["nbf"] = c["iat"]
		}), connect.CodeUnauthenticated},
		{"wrong audience", "Bearer " + carolToken(t, is, key, func(c map[string]any) { c["aud"] = "another-api" }), connect.CodeUnauthenticated},
		{"wrong issuer", "Bearer " + carolToken(t, is, key, func(c map[string]any) { c["iss"] = "https://evil.example" }), connect.CodeUnauthenticated},
		{"wrong signature", "Bearer " + carolToken(t, is, other, nil), connect.CodeUnauthenticated},
		{"valid JWT, not allowed", "Bearer " + carolToken(t, is, key, func(c map[string]any) { c["sub"], c["groups"] = "mallory", []string{} }), connect.CodePermissionDenied},
		{"valid static token, not allowed", "Bearer " + tokenOf("eve"), connect.CodePermissionDenied},
	}
	leaks := []string{f.app.Repository(), head, head[:7], "dark-mode", "production", "flags/"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, p := range protocols {
				rs, _ := f.clients(p)
				req := connect.NewRequest(getReq("new-checkout", ""))
				req.Header().Set("Authorization", tt.authorization)
				_, err := rs.Get(t.Context(), req)
				wantCode(t, err, tt.want)
				for _, l := range leaks {
					if strings.Contains(err.Error(), l) {
						t.Errorf("%s: error %q tells %q", p.name, err, l)
					}
				}
			}
			r := f.do(t, "GET", flagsPath+"/new-checkout", "", "Authorization", tt.authorization)
			wantStatus := http.StatusUnauthorized
			if tt.want == connect.CodePermissionDenied {
				wantStatus = http.StatusForbidden
			}
			if r.status != wantStatus {
				t.Errorf("REST = %d %s, want %d", r.status, r.body, wantStatus)
			}
			if wantStatus == http.StatusUnauthorized && r.header.Get("WWW-Authenticate") == "" {
				t.Error("REST 401 without WWW-Authenticate")
			}
			for _, l := range leaks {
				if strings.Contains(string(r.body), l) {
					t.Errorf("REST body %s tells %q", r.body, l)
				}
			}
		})
	}
	// A valid JWT of a user the policy allows reads; health needs nothing.
	req := connect.NewRequest(getReq("new-checkout", ""))
	req.Header().Set("Authorization", "Bearer "+carolToken(t, is, key, nil))
	rs, _ := f.clients(protocols[0])
	if _, err := rs.Get(t.Context(), req); err != nil {
		t.Fatalf("Get with a valid JWT: %v", err)
	}
	for _, path := range []string{"/healthz", "/readyz", "/version"} {
		if r := f.do(t, "GET", path, ""); r.status != http.StatusOK {
			t.Errorf("GET %s without credentials = %d %s", path, r.status, r.body)
		}
	}
	// The index names the served types: it needs credentials as /apis does.
	if r := f.do(t, "GET", "/", ""); r.status != http.StatusUnauthorized {
		t.Errorf("GET / without credentials = %d %s, want 401", r.status, r.body)
	}
}

// TestDiffsOfSharedFilesStayPrivate: the demo's segments share one file a
// namespace, so a write's diff would show a caller who may write one
// segment every other segment of the namespace. With a policy in force,
// such diffs are left out; a flag's file holds the flag alone, and its diff
// is shown.
func TestDiffsOfSharedFilesStayPrivate(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t)
	token := "Bearer " + tokenOf("carol")
	segment := f.do(t, "PUT", "/apis/flags.cup.dev/v1alpha1/namespaces/staging/segments/qa?dryRun=true",
		`{"spec": {"description": "Testers.", "rules": [{"attribute": "role", "values": ["qa"]}]}}`, "Authorization", token)
	if segment.status != http.StatusOK || strings.Contains(string(segment.body), "internal") || !strings.Contains(string(segment.body), "omitted") {
		t.Fatalf("dry-run PUT of a segment = %d %s, want a result whose diff is omitted", segment.status, segment.body)
	}
	flag := f.do(t, "PUT", flagsPath+"/new-checkout?dryRun=true", `{"spec": {"enabled": true}}`, "Authorization", token)
	if flag.status != http.StatusOK || !strings.Contains(string(flag.body), `+++ b/`) {
		t.Fatalf("dry-run PUT of a flag = %d %s, want its diff", flag.status, flag.body)
	}
	// Without a policy everyone may read everything: the diff is shown.
	open := newAppFixture(t)
	segment = open.do(t, "PUT", "/apis/flags.cup.dev/v1alpha1/namespaces/staging/segments/qa?dryRun=true",
		`{"spec": {"description": "Testers.", "rules": [{"attribute": "role", "values": ["qa"]}]}}`)
	if segment.status != http.StatusOK || !strings.Contains(string(segment.body), `+++ b/`) {
		t.Fatalf("dry-run PUT of a segment without a policy = %d %s, want its diff", segment.status, segment.body)
	}
}
