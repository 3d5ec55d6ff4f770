package rbac_test

import (
	"fmt"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/internal/rbac"
)

func ExampleLoad() {
	policy, err := rbac.Load("../../examples/policy/policy.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	editor := &auth.Identity{User: "bob", Groups: []string{"flag-editors"}}
	flag := auth.Attributes{Verb: auth.VerbPut, Group: "flags.cup.dev", Plural: "flags", Namespace: "production", Name: "new-checkout"}
	fmt.Println("bob may put the flag in production:", policy.Allowed(editor, flag))
	flag.Namespace = "staging"
	fmt.Println("bob may put the flag in staging:", policy.Allowed(editor, flag))
	flag.Verb = auth.VerbGet
	fmt.Println("bob may get the flag in staging:", policy.Allowed(editor, flag))
	// Output:
	// bob may put the flag in production: true
	// bob may put the flag in staging: false
	// bob may get the flag in staging: true
}

func ExampleError() {
	_, err := rbac.Load("testdata/invalid.yaml")
	fmt.Println(err)
	// Output:
	// invalid RBAC policy: 2 problems:
	//	testdata/invalid.yaml:9: Role "production/flag-editor": rules[0].verbs[1]: unknown verb "update" (want get, list, watch, put, delete or "*"; put creates and updates)
	//	testdata/invalid.yaml:21: RoleBinding "staging/flag-editors": roleRef.name: no Role "flag-editor" in namespace "staging" (a RoleBinding can refer only to a Role in its own namespace)
}
