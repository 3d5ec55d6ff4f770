package rbac_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/internal/rbac"
)

// problems returns the problems of an *rbac.Error with file names relative
// to dir, failing the test for any other error.
func problems(t *testing.T, dir string, err error) []string {
	t.Helper()
	var e *rbac.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *rbac.Error", err, err)
	}
	if !errors.Is(err, rbac.ErrInvalid) {
		t.Errorf("errors.Is(err, ErrInvalid) = false")
	}
	out := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		rel, rerr := filepath.Rel(dir, p.File)
		if rerr != nil {
			t.Fatal(rerr)
		}
		p.File = filepath.ToSlash(rel)
		out[i] = p.String()
	}
	return out
}

func diffLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

const header = "apiVersion: cup.dev/v1alpha1\n"

// Valid resources to build cases from.
const (
	viewer = header + `kind: ClusterRole
metadata: {name: viewer}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: [get]}]
`
	editor = header + `kind: Role
metadata: {name: editor, namespace: production}
rules: [{apiGroups: [flipt.io], resources: [flags], verbs: [put]}]
`
)

func TestLoadProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name: "apiVersion",
			files: map[string]string{"p.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: a}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: [get]}]
---
kind: ClusterRole
metadata: {name: b}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: [get]}]
---
apiVersion: 1
kind: ClusterRole
metadata: {name: c}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: [get]}]
`},
			want: []string{
				`p.yaml:1: ClusterRole "a": apiVersion: unknown apiVersion "rbac.authorization.k8s.io/v1" (want cup.dev/v1alpha1)`,
				`p.yaml:6: ClusterRole "b": apiVersion is required (cup.dev/v1alpha1)`,
				`p.yaml:10: ClusterRole "c": apiVersion: expected string, got number`,
			},
		},
		{
			name: "kind",
			files: map[string]string{"p.yaml": header + `kind: ServiceAccount
metadata: {name: a}
---
` + header + `metadata: {name: b}
---
- a list
`},
			want: []string{
				`p.yaml:2: kind: unknown kind "ServiceAccount" (want Role, ClusterRole, RoleBinding or ClusterRoleBinding)`,
				`p.yaml:5: kind is required (Role, ClusterRole, RoleBinding or ClusterRoleBinding)`,
				`p.yaml:8: expected a resource (an object), got array`,
			},
		},
		{
			name: "unknown fields and wrong types",
			files: map[string]string{"p.yaml": header + `kind: Role
metadata:
  name: editor
  namespace: production
  uid: 1234
spec: {}
rules:
- apiGroups: [flipt.io]
  resources: flags
  verb: [get]
  Verbs: [put]
---
` + header + `kind: RoleBinding
metadata: {name: editors, namespace: production}
subjects:
- kind: User
  name: alice
  apiGroup: rbac.authorization.k8s.io
roleRef:
  kind: Role
  name: yes
`},
			want: []string{
				`p.yaml:6: Role "production/editor": unknown field "metadata.uid" (want name, namespace, labels, annotations)`,
				`p.yaml:7: Role "production/editor": unknown field "spec" (rules, subjects and roleRef sit at the top level, as in Kubernetes)`,
				`p.yaml:10: Role "production/editor": rules[0].resources: expected array, got string`,
				`p.yaml:11: Role "production/editor": unknown field "rules[0].verb" (did you mean "verbs"?)`,
				`p.yaml:12: Role "production/editor": unknown field "rules[0].Verbs" (did you mean "verbs"?)`,
				`p.yaml:20: RoleBinding "production/editors": unknown field "subjects[0].apiGroup" (policy resources name roles and subjects without an API group; remove it)`,
				`p.yaml:23: RoleBinding "production/editors": roleRef.name: expected string, got boolean (in YAML, quote words such as yes, no, on, off, y and n, which are booleans otherwise)`,
			},
		},
		{
			name: "metadata",
			files: map[string]string{"p.yaml": header + `kind: Role
metadata: {namespace: production}
rules: [{apiGroups: [flipt.io], resources: [flags], verbs: [put]}]
---
` + header + `kind: Role
metadata:
  name: editor
rules: [{apiGroups: [flipt.io], resources: [flags], verbs: [put]}]
---
` + header + `kind: RoleBinding
metadata:
  name: editors
  namespace: Production
subjects: [{kind: User, name: alice}]
roleRef: {kind: ClusterRole, name: viewer}
---
` + header + `kind: ClusterRole
metadata:
  name: my viewer
  namespace: production
rules: [{apiGroups: ["*"], resources: ["*"], verbs: [get]}]
---
` + viewer},
			want: []string{
				`p.yaml:3: Role: metadata.name is required`,
				`p.yaml:8: Role "editor": metadata.namespace is required: a Role belongs to one namespace (a ClusterRole applies to all)`,
				`p.yaml:16: RoleBinding "Production/editors": metadata.namespace: "Production" is not a namespace: want a DNS label (lowercase letters, digits and '-', at most 63 characters)`,
				`p.yaml:23: ClusterRole "production/my viewer": metadata.name: "my viewer" must not contain spaces or control characters`,
				`p.yaml:24: ClusterRole "production/my viewer": metadata.namespace: a ClusterRole has no namespace; remove metadata.namespace`,
			},
		},
		{
			name: "rules",
			files: map[string]string{"p.yaml": header + `kind: ClusterRole
metadata: {name: empty}
rules: []
---
` + header + `kind: ClusterRole
metadata: {name: bad}
rules:
- apiGroups: []
  resources: []
  verbs: []
- apiGroups: ["", Flipt.io, "*", flipt.io]
  resources: [flags/status, Flags, "*", flags]
  verbs: [get, patch, Create, deletecollection, escalate, "*"]
  resourceNames: [checkout, "", "My Flag"]
`},
			want: []string{
				`p.yaml:4: ClusterRole "empty": rules must list at least one rule`,
				`p.yaml:10: ClusterRole "bad": rules[0].apiGroups must list at least one API group, e.g. flipt.io ("*" for all)`,
				`p.yaml:11: ClusterRole "bad": rules[0].resources must list at least one resource's plural, e.g. flags ("*" for all)`,
				`p.yaml:12: ClusterRole "bad": rules[0].verbs must list at least one verb (get, list, watch, put, delete or "*")`,
				`p.yaml:13: ClusterRole "bad": rules[1].apiGroups[0]: "" is not an API group: want a DNS subdomain, e.g. flipt.io, or "*" for all`,
				`p.yaml:13: ClusterRole "bad": rules[1].apiGroups[1]: "Flipt.io" is not an API group: want a DNS subdomain, e.g. flipt.io, or "*" for all`,
				`p.yaml:14: ClusterRole "bad": rules[1].resources[0]: "flags/status" is not a resource: want a type's plural, a lowercase DNS label such as flags, or "*" for all`,
				`p.yaml:14: ClusterRole "bad": rules[1].resources[1]: "Flags" is not a resource: want a type's plural, a lowercase DNS label such as flags, or "*" for all`,
				`p.yaml:15: ClusterRole "bad": rules[1].verbs[1]: unknown verb "patch" (want get, list, watch, put, delete or "*"; put creates and updates)`,
				`p.yaml:15: ClusterRole "bad": rules[1].verbs[2]: unknown verb "Create" (want get, list, watch, put, delete or "*"; put creates and updates)`,
				`p.yaml:15: ClusterRole "bad": rules[1].verbs[3]: unknown verb "deletecollection" (want get, list, watch, put, delete or "*"; delete one resource at a time)`,
				`p.yaml:15: ClusterRole "bad": rules[1].verbs[4]: unknown verb "escalate" (want get, list, watch, put, delete or "*")`,
				`p.yaml:16: ClusterRole "bad": rules[1].resourceNames[1]: "" is not a resource name: want a DNS subdomain (lowercase letters, digits, '-' and '.')`,
				`p.yaml:16: ClusterRole "bad": rules[1].resourceNames[2]: "My Flag" is not a resource name: want a DNS subdomain (lowercase letters, digits, '-' and '.')`,
			},
		},
		{
			name: "subjects",
			files: map[string]string{"p.yaml": viewer + "---\n" + header + `kind: ClusterRoleBinding
metadata: {name: none}
roleRef: {kind: ClusterRole, name: viewer}
---
` + header + `kind: ClusterRoleBinding
metadata: {name: bad}
subjects:
- kind: ServiceAccount
  name: deployer
- kind: user
  name: alice
- name: bob
- kind: Group
  name: ""
roleRef: {kind: ClusterRole, name: viewer}
`},
			want: []string{
				`p.yaml:6: ClusterRoleBinding "none": subjects must list at least one User or Group`,
				`p.yaml:15: ClusterRoleBinding "bad": subjects[0].kind: unknown subject kind "ServiceAccount" (want User or Group)`,
				`p.yaml:17: ClusterRoleBinding "bad": subjects[1].kind: unknown subject kind "user" (want User or Group)`,
				`p.yaml:19: ClusterRoleBinding "bad": subjects[2].kind is required (User or Group)`,
				`p.yaml:21: ClusterRoleBinding "bad": subjects[3].name is required`,
			},
		},
		{
			name: "roleRef",
			files: map[string]string{
				"a.yaml": viewer + "---\n" + editor + "---\n" + header + `kind: Role
metadata: {name: broken, namespace: production}
rules: []
`,
				"b.yaml": header + `kind: RoleBinding
metadata: {name: no-kind, namespace: production}
subjects: [{kind: User, name: alice}]
roleRef: {name: editor}
---
` + header + `kind: RoleBinding
metadata: {name: bad-kind, namespace: production}
subjects: [{kind: User, name: alice}]
roleRef: {kind: Group, name: editor}
---
` + header + `kind: RoleBinding
metadata: {name: no-name, namespace: production}
subjects: [{kind: User, name: alice}]
roleRef:
  kind: Role
---
` + header + `kind: RoleBinding
metadata: {name: missing-role, namespace: production}
subjects: [{kind: User, name: alice}]
roleRef:
  kind: Role
  name: editr
---
` + header + `kind: RoleBinding
metadata: {name: other-namespace, namespace: staging}
subjects: [{kind: User, name: alice}]
roleRef:
  kind: Role
  name: editor
---
` + header + `kind: RoleBinding
metadata: {name: missing-cluster-role, namespace: staging}
subjects: [{kind: User, name: alice}]
roleRef:
  kind: ClusterRole
  name: editor
---
` + header + `kind: ClusterRoleBinding
metadata: {name: to-role}
subjects: [{kind: User, name: alice}]
roleRef:
  kind: Role
  name: editor
---
` + header + `kind: RoleBinding
metadata: {name: to-broken-role, namespace: production}
subjects: [{kind: User, name: alice}]
roleRef: {kind: Role, name: broken}
---
` + header + `kind: RoleBinding
metadata: {name: fine, namespace: production}
subjects: [{kind: User, name: alice}]
roleRef: {kind: ClusterRole, name: viewer}
`,
			},
			want: []string{
				`a.yaml:14: Role "production/broken": rules must list at least one rule`,
				`b.yaml:5: RoleBinding "production/no-kind": roleRef.kind is required (Role or ClusterRole)`,
				`b.yaml:11: RoleBinding "production/bad-kind": roleRef.kind: unknown kind "Group" (want Role or ClusterRole)`,
				`b.yaml:17: RoleBinding "production/no-name": roleRef.name is required`,
				`b.yaml:26: RoleBinding "production/missing-role": roleRef.name: no Role "editr" in namespace "production"`,
				`b.yaml:34: RoleBinding "staging/other-namespace": roleRef.name: no Role "editor" in namespace "staging" (a RoleBinding can refer only to a Role in its own namespace)`,
				`b.yaml:42: RoleBinding "staging/missing-cluster-role": roleRef.name: no ClusterRole "editor"`,
				`b.yaml:49: ClusterRoleBinding "to-role": roleRef.kind: a ClusterRoleBinding cannot refer to a Role, only to a ClusterRole (bind a Role with a RoleBinding in its namespace)`,
			},
		},
		{
			name: "duplicates",
			files: map[string]string{
				"a.yaml": viewer + "---\n" + editor + "---\n" + header + `kind: Role
metadata: {name: editor, namespace: staging}
rules: [{apiGroups: [flipt.io], resources: [flags], verbs: [put]}]
---
` + header + `kind: RoleBinding
metadata: {name: b, namespace: production}
subjects: [{kind: User, name: alice}]
roleRef: {kind: Role, name: editor}
---
` + header + `kind: ClusterRoleBinding
metadata: {name: b}
subjects: [{kind: User, name: alice}]
roleRef: {kind: ClusterRole, name: viewer}
`,
				"b.yaml": viewer + "---\n" + editor + "---\n" + header + `kind: ClusterRole
metadata: {name: editor}
rules: [{apiGroups: [flipt.io], resources: [flags], verbs: [put]}]
---
` + header + `kind: RoleBinding
metadata: {name: b, namespace: production}
subjects: [{kind: User, name: bob}]
roleRef: {kind: Role, name: editor}
---
` + header + `kind: RoleBinding
metadata: {name: b, namespace: staging}
subjects: [{kind: User, name: bob}]
roleRef: {kind: Role, name: editor}
---
` + header + `kind: ClusterRoleBinding
metadata: {name: b}
subjects: [{kind: User, name: alice}]
roleRef: {kind: ClusterRole, name: viewer}
`,
			},
			want: []string{
				`b.yaml:3: ClusterRole "viewer": metadata.name: ClusterRole is already defined at DIR/a.yaml:3`,
				`b.yaml:8: Role "production/editor": metadata.name: Role is already defined at DIR/a.yaml:8`,
				`b.yaml:18: RoleBinding "production/b": metadata.name: RoleBinding is already defined at DIR/a.yaml:18`,
				`b.yaml:30: ClusterRoleBinding "b": metadata.name: ClusterRoleBinding is already defined at DIR/a.yaml:24`,
			},
		},
		{
			name: "layout",
			files: map[string]string{"p.yaml": `# A policy.
--- # the first document
apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata:
  # its name
  "name": x
  labels: {team: platform}
rules:
  -
    apiGroups:
      - "*"
    resources:
      - '*'
    verbs:
      - get

      - gte   # a typo
  - apiGroups: ["*"]
    resources: ["*"]
    verbs:
    - list
    - lsit
...
`},
			want: []string{
				`p.yaml:18: ClusterRole "x": rules[0].verbs[1]: unknown verb "gte" (want get, list, watch, put, delete or "*")`,
				`p.yaml:23: ClusterRole "x": rules[1].verbs[1]: unknown verb "lsit" (want get, list, watch, put, delete or "*")`,
			},
		},
		{
			name: "invalid YAML",
			files: map[string]string{"p.yaml": viewer + "---\n" + header + `kind: Role
metadata:
  name: a
 namespace: b
---
` + header + `kind: Role
kind: ClusterRole
`},
			want: []string{
				`p.yaml:9: invalid YAML: did not find expected key`,
				`p.yaml:14: invalid YAML: key "kind" already set in map`,
			},
		},
		{
			name: "JSON",
			files: map[string]string{
				"a.json": `{
  "apiVersion": "cup.dev/v1alpha1",
  "kind": "ClusterRole",
  "metadata": {"name": "viewer"},
  "rules": [
    {
      "apiGroups": ["*"],
      "resources": ["*"],
      "verbs": ["get", "gte"]
    }
  ]
}
`,
				"b.json": `[
  {"apiVersion": "cup.dev/v1alpha1", "kind": "ClusterRoleBinding",
   "metadata": {"name": "ok"}, "subjects": [{"kind": "User", "name": "alice"}],
   "roleRef": {"kind": "ClusterRole", "name": "viewer"}},
  {"apiVersion": "cup.dev/v1alpha1", "kind": "ClusterRoleBinding",
   "metadata": {"name": "bad", "name": "worse"},
   "subjects": [{"kind": "User", "name": "alice"}],
   "roleRef": {"kind": "ClusterRole",
               "name": "nothing"}}
]
`,
				"c.json": "{\n  \"kind\": \"Role\",\n  \"metadata\": {\n",
				"d.json": "  \n",
				"e.json": `"a string"`,
			},
			want: []string{
				`a.json:9: ClusterRole "viewer": rules[0].verbs[1]: unknown verb "gte" (want get, list, watch, put, delete or "*")`,
				`b.json:6: duplicate key "[1].metadata.name"`,
				`b.json:9: ClusterRoleBinding "worse": roleRef.name: no ClusterRole "nothing"`,
				`c.json:4: invalid JSON: unexpected end of JSON input`,
				`d.json: empty file; a JSON file holds a resource or an array of resources`,
				`e.json:1: expected a resource (an object), got string`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writeFiles(t, tt.files)
			_, err := rbac.Load(dir)
			got := problems(t, dir, err)
			for i := range got {
				got[i] = strings.ReplaceAll(got[i], dir+string(filepath.Separator), "DIR/")
			}
			diffLines(t, got, tt.want)
		})
	}
}

// TestErrorMessage pins the text of an *Error with one problem and with
// several.
func TestErrorMessage(t *testing.T) {
	t.Parallel()
	one := &rbac.Error{Problems: []rbac.Problem{{File: "p.yaml", Line: 3, Message: "Role: metadata.name is required"}}}
	if got, want := one.Error(), "invalid RBAC policy: p.yaml:3: Role: metadata.name is required"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	two := &rbac.Error{Problems: []rbac.Problem{{File: "p.yaml", Line: 3, Message: "a"}, {File: "q.json", Message: "b"}}}
	if got, want := two.Error(), "invalid RBAC policy: 2 problems:\n\tp.yaml:3: a\n\tq.json: b"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLoadDirectory(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"1-roles.yaml": viewer + "---\n" + editor,
		"2-bindings.yml": header + `kind: RoleBinding
metadata: {name: editors, namespace: production}
subjects: [{kind: Group, name: editors}]
roleRef: {kind: Role, name: editor}
`,
		"3-everyone.json": `{"apiVersion": "cup.dev/v1alpha1", "kind": "ClusterRoleBinding",
 "metadata": {"name": "everyone"}, "subjects": [{"kind": "Group", "name": "system:authenticated"}],
 "roleRef": {"kind": "ClusterRole", "name": "viewer"}}`,
		// Not read: other extensions, hidden files, subdirectories.
		"README.md":          "not a policy",
		"policy.yaml.orig":   "not: [valid",
		".editing.yaml":      "not: [valid",
		"old/policy.yaml":    "not: [valid",
		"dir.yaml/inner.txt": "a directory named like a policy file",
	})
	p, err := rbac.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	get := auth.Attributes{Verb: auth.VerbGet, Group: "flipt.io", Plural: "flags", Namespace: "staging", Name: "x"}
	put := auth.Attributes{Verb: auth.VerbPut, Group: "flipt.io", Plural: "flags", Namespace: "production", Name: "x"}
	if !p.Allowed(user("anyone"), get) {
		t.Error("the JSON file's binding does not apply")
	}
	if !p.Allowed(user("ed", "editors"), put) {
		t.Error("the .yml file's binding does not apply")
	}
	if p.Allowed(user("anyone"), put) {
		t.Error("put allowed to anyone")
	}

	// A single file may have any extension; it is read as YAML unless it
	// ends in .json.
	single := filepath.Join(dir, "policy.conf")
	if err := os.WriteFile(single, []byte(viewer), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.Load(single); err != nil {
		t.Error(err)
	}
}

func TestLoadSymlinks(t *testing.T) {
	t.Parallel()
	// As in a Kubernetes ConfigMap volume: the files are links into a
	// hidden directory.
	dir := writeFiles(t, map[string]string{"..data/policy.yaml": viewer})
	if err := os.Symlink(filepath.Join("..data", "policy.yaml"), filepath.Join(dir, "policy.yaml")); err != nil {
		t.Skip("no symbolic links:", err)
	}
	if _, err := rbac.Load(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "..data", "policy.yaml"), []byte("kind: Nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.Load(dir); !errors.Is(err, rbac.ErrInvalid) {
		t.Errorf("after changing the link's target: error = %v, want ErrInvalid", err)
	}
}

func TestLoadNotFound(t *testing.T) {
	t.Parallel()
	_, err := rbac.Load(filepath.Join(t.TempDir(), "missing"))
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, rbac.ErrInvalid) {
		t.Errorf("error = %v, want one wrapping fs.ErrNotExist and not ErrInvalid", err)
	}
}
