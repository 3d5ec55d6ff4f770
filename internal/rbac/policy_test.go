package rbac_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/internal/rbac"
)

// writeFiles writes files (name → content) into a new directory and
// returns it.
func writeFiles(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// load loads a policy from one YAML file holding content.
func load(t testing.TB, content string) *rbac.Policy {
	t.Helper()
	dir := writeFiles(t, map[string]string{"policy.yaml": content})
	p, err := rbac.Load(filepath.Join(dir, "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// matrixPolicy exercises every way of granting something.
const matrixPolicy = `
apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata: {name: flag-reader}
rules:
- {apiGroups: [flipt.io], resources: [flags], verbs: [get, list, watch]}
---
apiVersion: cup.dev/v1alpha1
kind: Role
metadata: {name: flag-editor, namespace: production}
rules:
- {apiGroups: [flipt.io], resources: [flags], verbs: [put, delete]}
---
apiVersion: cup.dev/v1alpha1
kind: Role
metadata: {name: checkout, namespace: production}
rules:
- {apiGroups: [flipt.io], resources: [flags], verbs: ["*"], resourceNames: [checkout]}
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata: {name: segment-reader}
rules:
- {apiGroups: ["*"], resources: [segments], verbs: [get]}
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata: {name: flipt-lister}
rules:
- {apiGroups: [flipt.io], resources: ["*"], verbs: [list]}
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata: {name: admin}
rules:
- {apiGroups: ["*"], resources: ["*"], verbs: ["*"]}
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata: {name: proposal-reader}
rules:
- {apiGroups: [cup.dev], resources: [proposals], verbs: [get, list]}
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata: {name: proposal-closer}
rules:
- {apiGroups: [cup.dev], resources: [proposals], verbs: [delete]}
---
apiVersion: cup.dev/v1alpha1
kind: RoleBinding
metadata: {name: editors, namespace: production}
subjects: [{kind: Group, name: flag-admins}]
roleRef: {kind: Role, name: flag-editor}
---
apiVersion: cup.dev/v1alpha1
kind: RoleBinding
metadata: {name: checkout, namespace: production}
subjects: [{kind: User, name: carol}]
roleRef: {kind: Role, name: checkout}
---
apiVersion: cup.dev/v1alpha1
kind: RoleBinding
metadata: {name: readers, namespace: staging}
subjects: [{kind: User, name: dave}]
roleRef: {kind: ClusterRole, name: flag-reader}
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRoleBinding
metadata: {name: readers}
subjects: [{kind: Group, name: readers}]
roleRef: {kind: ClusterRole, name: flag-reader}
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRoleBinding
metadata: {name: segment-readers}
subjects: [{kind: User, name: erin}]
roleRef: {kind: ClusterRole, name: segment-reader}
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRoleBinding
metadata: {name: listers}
subjects: [{kind: Group, name: listers}]
roleRef: {kind: ClusterRole, name: flipt-lister}
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRoleBinding
metadata: {name: admins}
subjects: [{kind: User, name: root}, {kind: Group, name: wheel}]
roleRef: {kind: ClusterRole, name: admin}
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRoleBinding
metadata: {name: everyone}
subjects: [{kind: Group, name: "system:authenticated"}]
roleRef: {kind: ClusterRole, name: proposal-reader}
---
apiVersion: cup.dev/v1alpha1
kind: RoleBinding
metadata: {name: closers, namespace: production}
subjects: [{kind: User, name: frank}]
roleRef: {kind: ClusterRole, name: proposal-closer}
`

func user(name string, groups ...string) *auth.Identity {
	return &auth.Identity{User: name, Groups: groups, Method: "token"}
}

func res(group, plural, namespace, name string) auth.Attributes {
	return auth.Attributes{Group: group, Plural: plural, Namespace: namespace, Name: name}
}

var (
	all      = auth.Verbs
	none     = []string(nil)
	readOnly = []string{auth.VerbGet, auth.VerbList, auth.VerbWatch}
)

// TestAllowed checks every verb for each identity and resource: the verbs
// in want are allowed, the others denied. A list never names a resource,
// so the list check drops the resource's name.
func TestAllowed(t *testing.T) {
	t.Parallel()
	p := load(t, matrixPolicy)
	tests := []struct {
		name string
		id   *auth.Identity
		res  auth.Attributes
		want []string
	}{
		// A Role bound to a group with a RoleBinding: its namespace only.
		{"group role in its namespace", user("bob", "flag-admins"), res("flipt.io", "flags", "production", "x"), []string{"put", "delete"}},
		{"group role in another namespace", user("bob", "flag-admins"), res("flipt.io", "flags", "staging", "x"), none},
		{"group role, other resource", user("bob", "flag-admins"), res("flipt.io", "segments", "production", "x"), none},
		{"group role, other group", user("bob", "flag-admins"), res("example.com", "flags", "production", "x"), none},
		{"group role, no namespace", user("bob", "flag-admins"), res("flipt.io", "flags", "", "x"), none},
		{"group role, not in the group", user("bob"), res("flipt.io", "flags", "production", "x"), none},
		{"group role, a user named like the group", user("flag-admins"), res("flipt.io", "flags", "production", "x"), none},
		{"group role, one of several groups", user("bob", "a", "flag-admins", "b"), res("flipt.io", "flags", "production", "x"), []string{"put", "delete"}},

		// resourceNames: get, watch, put and delete of the names only; never list.
		{"named resource", user("carol"), res("flipt.io", "flags", "production", "checkout"), []string{"get", "watch", "put", "delete"}},
		{"named resource, other name", user("carol"), res("flipt.io", "flags", "production", "payments"), none},
		{"named resource, watching all", user("carol"), res("flipt.io", "flags", "production", ""), none},
		{"named resource, other namespace", user("carol"), res("flipt.io", "flags", "staging", "checkout"), none},
		{"named resource, a group named like the user", user("mallory", "carol"), res("flipt.io", "flags", "production", "checkout"), none},

		// A ClusterRole bound with a RoleBinding: the binding's namespace only.
		{"cluster role in a role binding's namespace", user("dave"), res("flipt.io", "flags", "staging", "x"), readOnly},
		{"cluster role outside the role binding's namespace", user("dave"), res("flipt.io", "flags", "production", "x"), none},
		{"cluster role by role binding, no namespace", user("dave"), res("flipt.io", "flags", "", ""), none},
		{"cluster role by role binding, no namespace, proposals", user("frank"), res("cup.dev", "proposals", "", "7"), []string{"get", "list"}},
		{"cluster role by role binding, proposals in its namespace", user("frank"), res("cup.dev", "proposals", "production", "7"), []string{"get", "list", "delete"}},

		// A ClusterRole bound with a ClusterRoleBinding: everywhere.
		{"cluster binding", user("rita", "readers"), res("flipt.io", "flags", "production", "x"), readOnly},
		{"cluster binding, another namespace", user("rita", "readers"), res("flipt.io", "flags", "any", "x"), readOnly},
		{"cluster binding, no namespace", user("rita", "readers"), res("flipt.io", "flags", "", "x"), readOnly},
		{"cluster binding, watching all", user("rita", "readers"), res("flipt.io", "flags", "staging", ""), readOnly},
		{"cluster binding, other resource", user("rita", "readers"), res("flipt.io", "segments", "production", "x"), none},
		{"cluster binding, other group", user("rita", "readers"), res("flipt.com", "flags", "production", "x"), none},

		// Wildcards.
		{"any group", user("erin"), res("flipt.io", "segments", "production", "x"), []string{"get"}},
		{"any group, another", user("erin"), res("example.com", "segments", "", "x"), []string{"get"}},
		{"any group, other resource", user("erin"), res("flipt.io", "flags", "production", "x"), none},
		{"any resource", user("lee", "listers"), res("flipt.io", "whatever", "production", ""), []string{"list"}},
		{"any resource, other group", user("lee", "listers"), res("example.com", "flags", "production", ""), none},
		{"any verb, user", user("root"), res("example.com", "things", "production", "x"), all},
		{"any verb, group", user("ann", "wheel"), res("example.com", "things", "production", "x"), all},
		{"any verb, no namespace", user("root"), res("cup.dev", "proposals", "", "12"), all},

		// system:authenticated.
		{"everyone, proposals", user("nobody"), res("cup.dev", "proposals", "", "12"), []string{"get", "list"}},
		{"everyone, proposals in a namespace", user("nobody"), res("cup.dev", "proposals", "production", "12"), []string{"get", "list"}},
		{"everyone, flags", user("nobody"), res("flipt.io", "flags", "production", "x"), none},
		{"everyone, group given explicitly", user("nobody", rbac.GroupAuthenticated), res("cup.dev", "proposals", "", "12"), []string{"get", "list"}},
		{"everyone, no groups at all", &auth.Identity{User: "nobody"}, res("cup.dev", "proposals", "", "12"), []string{"get", "list"}},

		{"no identity", nil, res("cup.dev", "proposals", "", "12"), none},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, verb := range auth.Verbs {
				a := tt.res
				a.Verb = verb
				if verb == auth.VerbList {
					a.Name = ""
				}
				want := slices.Contains(tt.want, verb)
				if got := p.Allowed(tt.id, a); got != want {
					t.Errorf("Allowed(%+v, %+v) = %v, want %v", tt.id, a, got, want)
				}
			}
		})
	}
}

func TestAllowedDeniesUnknownVerbs(t *testing.T) {
	t.Parallel()
	p := load(t, matrixPolicy)
	for _, verb := range []string{"", "create", "update", "patch", "*", "GET"} {
		a := auth.Attributes{Verb: verb, Group: "example.com", Plural: "things", Namespace: "production", Name: "x"}
		if p.Allowed(user("root"), a) {
			t.Errorf("Allowed(root, %+v) = true, want false", a)
		}
	}
}

func TestVisible(t *testing.T) {
	t.Parallel()
	p := load(t, matrixPolicy)
	tests := []struct {
		name          string
		id            *auth.Identity
		group, plural string
		want          bool
	}{
		{"role in a namespace", user("bob", "flag-admins"), "flipt.io", "flags", true},
		{"role in a namespace, other resource", user("bob", "flag-admins"), "flipt.io", "segments", false},
		{"named resources", user("carol"), "flipt.io", "flags", true},
		{"cluster role by role binding", user("dave"), "flipt.io", "flags", true},
		{"cluster binding", user("rita", "readers"), "flipt.io", "flags", true},
		{"any group", user("erin"), "example.com", "segments", true},
		{"any group, other resource", user("erin"), "flipt.io", "flags", false},
		{"any resource", user("lee", "listers"), "flipt.io", "anything", true},
		{"any resource, other group", user("lee", "listers"), "example.com", "flags", false},
		{"everything", user("root"), "example.com", "things", true},
		{"everyone", user("nobody"), "cup.dev", "proposals", true},
		{"everyone, other resource", user("nobody"), "flipt.io", "flags", false},
		{"no identity", nil, "cup.dev", "proposals", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := p.Visible(tt.id, tt.group, tt.plural); got != tt.want {
				t.Errorf("Visible(%+v, %q, %q) = %v, want %v", tt.id, tt.group, tt.plural, got, tt.want)
			}
		})
	}
}

// TestNamedListOnly: a rule with resourceNames that grants only list
// grants nothing, and shows nothing.
func TestNamedListOnly(t *testing.T) {
	t.Parallel()
	p := load(t, `
apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata: {name: r}
rules: [{apiGroups: [flipt.io], resources: [flags], verbs: [list], resourceNames: [a]}]
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRoleBinding
metadata: {name: b}
subjects: [{kind: User, name: u}]
roleRef: {kind: ClusterRole, name: r}
`)
	for _, verb := range auth.Verbs {
		if p.Allowed(user("u"), auth.Attributes{Verb: verb, Group: "flipt.io", Plural: "flags", Namespace: "n", Name: "a"}) {
			t.Errorf("%s allowed", verb)
		}
	}
	if p.Visible(user("u"), "flipt.io", "flags") {
		t.Error("visible")
	}
}

// TestDenyWithoutBindings: roles alone grant nothing, and a nil policy
// denies too.
func TestDenyWithoutBindings(t *testing.T) {
	t.Parallel()
	empty := writeFiles(t, map[string]string{"README.md": "no policy here"})
	for name, path := range map[string]string{
		"roles only":      writeFiles(t, map[string]string{"roles.yaml": "apiVersion: cup.dev/v1alpha1\nkind: ClusterRole\nmetadata: {name: admin}\nrules: [{apiGroups: ['*'], resources: ['*'], verbs: ['*']}]\n"}),
		"empty directory": empty,
		"empty file":      writeFiles(t, map[string]string{"policy.yaml": "# nothing yet\n"}),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := rbac.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, verb := range auth.Verbs {
				if p.Allowed(user("root", rbac.GroupAuthenticated), auth.Attributes{Verb: verb, Group: "cup.dev", Plural: "proposals"}) {
					t.Errorf("%s allowed", verb)
				}
			}
			if p.Visible(user("root"), "cup.dev", "proposals") {
				t.Error("visible")
			}
		})
	}
	var nilPolicy *rbac.Policy
	if nilPolicy.Allowed(user("root"), auth.Attributes{Verb: auth.VerbGet}) || nilPolicy.Visible(user("root"), "a", "b") {
		t.Error("a nil policy allows")
	}
}
