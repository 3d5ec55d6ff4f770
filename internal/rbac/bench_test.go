package rbac_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cup-dev/cup/auth"
)

// benchPolicy has 206 roles and bindings: in each of 100 namespaces a Role
// and a RoleBinding for the namespace's team, and cluster-wide a viewer
// role for everyone and an admin role for one user.
func benchPolicy() string {
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, `apiVersion: cup.dev/v1alpha1
kind: Role
metadata: {name: editor, namespace: ns-%[1]d}
rules:
- {apiGroups: [flipt.io], resources: [flags, segments], verbs: [put, delete]}
- {apiGroups: [apps.example.com], resources: [services], verbs: [put], resourceNames: [api, web]}
---
apiVersion: cup.dev/v1alpha1
kind: RoleBinding
metadata: {name: editors, namespace: ns-%[1]d}
subjects: [{kind: Group, name: team-%[1]d}, {kind: User, name: lead-%[1]d}]
roleRef: {kind: Role, name: editor}
---
`, i)
	}
	b.WriteString(`apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata: {name: viewer}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: [get, list, watch]}]
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRoleBinding
metadata: {name: viewers}
subjects: [{kind: Group, name: "system:authenticated"}]
roleRef: {kind: ClusterRole, name: viewer}
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata: {name: admin}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: ["*"]}]
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRoleBinding
metadata: {name: admins}
subjects: [{kind: User, name: root}]
roleRef: {kind: ClusterRole, name: admin}
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata: {name: proposal-closer}
rules: [{apiGroups: [cup.dev], resources: [proposals], verbs: [delete]}]
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRoleBinding
metadata: {name: release-managers}
subjects: [{kind: Group, name: release-managers}]
roleRef: {kind: ClusterRole, name: proposal-closer}
`)
	return b.String()
}

func BenchmarkAllowed(b *testing.B) {
	p := load(b, benchPolicy())
	member := &auth.Identity{User: "dev-42", Groups: []string{"team-3", "team-42", "team-77", "developers"}, Method: "token"}
	benchmarks := []struct {
		name string
		id   *auth.Identity
		a    auth.Attributes
		want bool
	}{
		{"role binding", member, auth.Attributes{Verb: auth.VerbPut, Group: "flipt.io", Plural: "flags", Namespace: "ns-42", Name: "checkout"}, true},
		{"named resource", member, auth.Attributes{Verb: auth.VerbPut, Group: "apps.example.com", Plural: "services", Namespace: "ns-77", Name: "web"}, true},
		{"everyone", member, auth.Attributes{Verb: auth.VerbGet, Group: "flipt.io", Plural: "flags", Namespace: "ns-5", Name: "checkout"}, true},
		{"cluster-wide user", &auth.Identity{User: "root"}, auth.Attributes{Verb: auth.VerbDelete, Group: "cup.dev", Plural: "proposals", Name: "12"}, true},
		{"denied", member, auth.Attributes{Verb: auth.VerbPut, Group: "flipt.io", Plural: "flags", Namespace: "ns-5", Name: "checkout"}, false},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			if got := p.Allowed(bm.id, bm.a); got != bm.want {
				b.Fatalf("Allowed = %v, want %v", got, bm.want)
			}
			b.ReportAllocs()
			for b.Loop() {
				p.Allowed(bm.id, bm.a)
			}
		})
	}
}

func BenchmarkVisible(b *testing.B) {
	p := load(b, benchPolicy())
	member := &auth.Identity{User: "dev-42", Groups: []string{"team-3", "team-42", "team-77", "developers"}, Method: "token"}
	b.ReportAllocs()
	for b.Loop() {
		p.Visible(member, "apps.example.com", "services")
	}
}
