package rbac_test

import (
	"slices"
	"testing"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/internal/rbac"
)

// TestExamplePolicy checks that the policy in examples/policy does what
// its comments say.
func TestExamplePolicy(t *testing.T) {
	t.Parallel()
	p, err := rbac.Load("../../examples/policy/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var (
		viewer = user("victor")
		editor = user("erica", "flag-editors")
		admin  = user("alice")
	)
	flags := func(namespace, name string) auth.Attributes { return res("flags.cup.dev", "flags", namespace, name) }
	tests := []struct {
		name string
		id   *auth.Identity
		res  auth.Attributes
		want []string
	}{
		{"viewer, flags", viewer, flags("production", "new-checkout"), readOnly},
		{"viewer, services", viewer, res("apps.cup.dev", "services", "default", "api"), readOnly},
		{"viewer, proposals", viewer, res("cup.dev", "proposals", "", "3"), readOnly},
		{"editor, flags in production", editor, flags("production", "new-checkout"), all},
		{"editor, flags in staging", editor, flags("staging", "new-checkout"), readOnly},
		{"editor, the named segment", editor, res("flags.cup.dev", "segments", "production", "internal"), []string{"get", "list", "watch", "put"}},
		{"editor, another segment", editor, res("flags.cup.dev", "segments", "production", "beta"), readOnly},
		{"editor, proposals", editor, res("cup.dev", "proposals", "", "3"), readOnly},
		{"admin, services", admin, res("apps.cup.dev", "services", "staging", "api"), all},
		{"admin, proposals", admin, res("cup.dev", "proposals", "", "3"), all},
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
				if got, want := p.Allowed(tt.id, a), slices.Contains(tt.want, verb); got != want {
					t.Errorf("Allowed(%+v, %+v) = %v, want %v", tt.id, a, got, want)
				}
			}
		})
	}
}
