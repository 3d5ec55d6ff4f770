package rbac

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cup-dev/cup/internal/document"
)

// apiVersion is the apiVersion of every policy resource.
const apiVersion = "cup.dev/v1alpha1"

// Kinds of policy resource.
const (
	kindRole               = "Role"
	kindClusterRole        = "ClusterRole"
	kindRoleBinding        = "RoleBinding"
	kindClusterRoleBinding = "ClusterRoleBinding"
)

// Kinds of subject.
const (
	subjectUser  = "User"
	subjectGroup = "Group"
)

// Load reads the policy at path, a file or a directory of files (see the
// package documentation), and checks it completely.
//
// A policy that is wrong returns an [*Error] listing every problem; one
// that cannot be read returns another error, wrapping fs.ErrNotExist when
// path does not exist. A directory without policy files gives a policy
// that denies everything.
func Load(path string) (*Policy, error) {
	files, err := readFiles(path)
	if err != nil {
		return nil, err
	}
	return parse(files)
}

// file is a policy file's path and content.
type file struct {
	path string
	data []byte
}

// readFiles reads the file at path, or the policy files in the directory at
// path.
func readFiles(path string) ([]file, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading RBAC policy: %w", err)
	}
	if !st.IsDir() {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading RBAC policy: %w", err)
		}
		return []file{{path: path, data: data}}, nil
	}
	entries, err := os.ReadDir(path) // sorted by name
	if err != nil {
		return nil, fmt.Errorf("reading RBAC policy: %w", err)
	}
	var files []file
	for _, e := range entries {
		name := e.Name()
		switch filepath.Ext(name) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		if strings.HasPrefix(name, ".") {
			continue
		}
		p := filepath.Join(path, name)
		// Stat follows symbolic links, as in a mounted Kubernetes ConfigMap.
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading RBAC policy: %w", err)
		}
		if !st.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading RBAC policy: %w", err)
		}
		files = append(files, file{path: p, data: data})
	}
	return files, nil
}

// Document types: what a file may hold, field by field. checkShape rejects
// anything else before a document is decoded into them.
type (
	objectMeta struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	}
	policyRule struct {
		APIGroups     []string `json:"apiGroups"`
		Resources     []string `json:"resources"`
		Verbs         []string `json:"verbs"`
		ResourceNames []string `json:"resourceNames"`
	}
	roleDoc struct {
		APIVersion string       `json:"apiVersion"`
		Kind       string       `json:"kind"`
		Metadata   objectMeta   `json:"metadata"`
		Rules      []policyRule `json:"rules"`
	}
	subject struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	}
	roleRef struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	}
	bindingDoc struct {
		APIVersion string     `json:"apiVersion"`
		Kind       string     `json:"kind"`
		Metadata   objectMeta `json:"metadata"`
		Subjects   []subject  `json:"subjects"`
		RoleRef    roleRef    `json:"roleRef"`
	}
)

// roleKey identifies a Role or ClusterRole; namespace is empty for a
// ClusterRole.
type roleKey struct {
	kind, namespace, name string
}

func (k roleKey) String() string {
	if k.namespace == "" {
		return fmt.Sprintf("%s %q", k.kind, k.name)
	}
	return fmt.Sprintf("%s %q", k.kind, k.namespace+"/"+k.name)
}

// location is where a resource or field is.
type location struct {
	file string
	line int
}

func (l location) String() string { return fmt.Sprintf("%s:%d", l.file, l.line) }

// role is a loaded Role or ClusterRole.
type role struct {
	roleKey
	rules []rule
	at    location // of metadata.name
}

// rule is a checked policy rule.
type rule struct {
	groups, plurals []string
	verbs           verbSet
	names           []string
}

// binding is a loaded RoleBinding or ClusterRoleBinding.
type binding struct {
	kind, namespace, name string
	subjects              []subject
	ref                   roleRef
	at                    location // of metadata.name
	refAt                 location // of roleRef.name
	label                 string
}

// roleKey returns the key of the role b refers to.
func (b *binding) roleKey() roleKey {
	k := roleKey{kind: b.ref.Kind, name: b.ref.Name}
	if k.kind == kindRole {
		k.namespace = b.namespace
	}
	return k
}

// loader accumulates resources and problems while reading files.
type loader struct {
	problems problemList
	roles    []*role
	bindings []*binding
	// declared are the roles that some document defines, loaded or not, so
	// that a binding to a role with problems is not reported as well.
	declared map[roleKey]bool
}

// parse checks and indexes the policy in files.
func parse(files []file) (*Policy, error) {
	l := &loader{declared: map[roleKey]bool{}}
	for _, f := range files {
		if filepath.Ext(f.path) == ".json" {
			l.jsonFile(f)
		} else {
			l.yamlFile(f)
		}
	}
	roles := l.checkRoles()
	bindings := l.checkBindings(roles)
	if err := l.problems.err(); err != nil {
		return nil, err
	}
	return newPolicy(roles, bindings), nil
}

// jsonFile reads a file holding one resource or an array of resources.
func (l *loader) jsonFile(f file) {
	trimmed := bytes.TrimSpace(f.data)
	if len(trimmed) == 0 {
		l.problems = append(l.problems, Problem{File: f.path, Message: document.EmptyJSON})
		return
	}
	if err := json.Unmarshal(f.data, new(any)); err != nil {
		p := Problem{File: f.path, Message: "invalid JSON: " + err.Error()}
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			p.Line, _ = document.Position(f.data, se.Offset)
		}
		l.problems = append(l.problems, p)
		return
	}
	loc, dups := document.ScanJSON(f.data)
	for _, p := range dups {
		l.problems = append(l.problems, Problem{File: f.path, Line: loc.Line(document.ParentPath(p)), Message: fmt.Sprintf("duplicate key %q", p)})
	}
	if trimmed[0] != '[' {
		l.document(f.path, f.data, loc)
		return
	}
	var docs []json.RawMessage
	_ = json.Unmarshal(f.data, &docs) // valid, as checked above
	for i, doc := range docs {
		l.document(f.path, doc, loc.Element(i))
	}
}

// yamlFile reads a file holding one or more YAML documents.
func (l *loader) yamlFile(f file) {
	for _, doc := range document.SplitYAML(f.data) {
		js, err := doc.JSON()
		if err != nil {
			p := Problem{File: f.path, Line: doc.Line, Message: "invalid YAML: " + err.Error()}
			if ye, ok := errors.AsType[*document.YAMLError](err); ok {
				p.Line, p.Message = cmp.Or(ye.Line, doc.Line), "invalid YAML: "+ye.Detail()
			}
			l.problems = append(l.problems, p)
			continue
		}
		if js == nil {
			continue // an empty document
		}
		l.document(f.path, js, doc.Locator())
	}
}

// doc is the document being loaded, for reporting its problems.
type doc struct {
	l     *loader
	file  string
	loc   document.Locator
	label string // e.g. `Role "production/flag-editor"`; the kind alone while its name is unknown
	bad   bool   // has problems
	// skip are the paths of fields of the wrong type.
	skip []string
}

// addf reports a problem with the field at path ("" for the document).
func (d *doc) addf(path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if path != "" && !strings.HasPrefix(msg, path) {
		msg = path + ": " + msg
	}
	d.report(path, msg)
}

// report reports a problem with the field at path, described by msg,
// unless the field or one enclosing it has the wrong type.
func (d *doc) report(path, msg string) {
	for _, s := range d.skip {
		if path == s || strings.HasPrefix(path, s+".") || strings.HasPrefix(path, s+"[") {
			return
		}
	}
	if d.label != "" {
		msg = d.label + ": " + msg
	}
	d.l.problems = append(d.l.problems, Problem{File: d.file, Line: d.loc.Line(path), Message: msg})
	d.bad = true
}

func (d *doc) at(path string) location { return location{file: d.file, line: d.loc.Line(path)} }

// kinds lists the kinds, for messages.
const kinds = "Role, ClusterRole, RoleBinding or ClusterRoleBinding"

// document loads one resource, given as JSON.
func (l *loader) document(file string, data []byte, loc document.Locator) {
	d := &doc{l: l, file: file, loc: loc}
	v, err := document.Decode(data)
	if err != nil { // not reached: data is valid JSON
		d.addf("", "invalid JSON: %v", err)
		return
	}
	obj, ok := v.(map[string]any)
	if !ok {
		d.addf("", "expected a resource (an object), got %s", document.JSONKind(v))
		return
	}

	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	namespace, _ := meta["namespace"].(string)
	switch kind {
	case kindRole, kindClusterRole, kindRoleBinding, kindClusterRoleBinding:
		d.label = kind
		switch {
		case name != "" && namespace != "":
			d.label = fmt.Sprintf("%s %q", kind, namespace+"/"+name)
		case name != "":
			d.label = fmt.Sprintf("%s %q", kind, name)
		}
	default:
		switch {
		case obj["kind"] == nil:
			d.addf("kind", "kind is required (%s)", kinds)
		case !isString(obj["kind"]):
			d.addf("kind", "expected string, got %s", document.JSONKind(obj["kind"]))
		default:
			d.addf("kind", "unknown kind %q (want %s)", kind, kinds)
		}
	}

	switch av := obj["apiVersion"]; {
	case av == nil:
		d.addf("apiVersion", "apiVersion is required (%s)", apiVersion)
	case !isString(av):
		d.addf("apiVersion", "expected string, got %s", document.JSONKind(av))
	case av != apiVersion:
		d.addf("apiVersion", "unknown apiVersion %q (want %s)", av, apiVersion)
	}

	switch kind {
	case kindRole, kindClusterRole:
		if name != "" && (kind == kindClusterRole || namespace != "") {
			k := roleKey{kind: kind, name: name}
			if kind == kindRole {
				k.namespace = namespace
			}
			l.declared[k] = true
		}
		var rd roleDoc
		if !d.decode(v, data, &rd) {
			return
		}
		r := d.role(&rd)
		if !d.bad {
			l.roles = append(l.roles, r)
		}
	case kindRoleBinding, kindClusterRoleBinding:
		var bd bindingDoc
		if !d.decode(v, data, &bd) {
			return
		}
		b := d.binding(&bd)
		if !d.bad {
			l.bindings = append(l.bindings, b)
		}
	}
}

// decode checks v's shape against out's type and decodes data into out, as
// far as the shape allows: fields of the wrong type are left empty, and
// later problems with them are not reported. It reports whether the rest of
// the document is worth checking.
func (d *doc) decode(v any, data []byte, out any) bool {
	for _, p := range shape.Check("", v, reflectType(out)) {
		d.report(p.Path, p.Message)
		d.skip = append(d.skip, p.Path)
	}
	if err := json.Unmarshal(data, out); err != nil {
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); !ok { // not reached: data is valid JSON
			d.addf("", "%v", err)
			return false
		}
	}
	return true
}

func isString(v any) bool { _, ok := v.(string); return ok }

// metadata checks the metadata of a resource that has a namespace or not.
func (d *doc) metadata(kind string, m *objectMeta) {
	checkName(d, "metadata.name", m.Name)
	switch namespaced := kind == kindRole || kind == kindRoleBinding; {
	case namespaced && m.Namespace == "":
		cluster := kindClusterRole
		if kind == kindRoleBinding {
			cluster = kindClusterRoleBinding
		}
		d.addf("metadata.namespace", "metadata.namespace is required: a %s belongs to one namespace (a %s applies to all)", kind, cluster)
	case namespaced && !document.IsDNSLabel(m.Namespace):
		d.addf("metadata.namespace", "%q is not a namespace: want a DNS label (lowercase letters, digits and '-', at most 63 characters)", m.Namespace)
	case !namespaced && m.Namespace != "":
		d.addf("metadata.namespace", "a %s has no namespace; remove metadata.namespace", kind)
	}
}

// checkName checks a name that policy resources refer to each other by.
func checkName(d *doc, path, name string) {
	switch {
	case name == "":
		d.addf(path, "%s is required", path)
	case strings.IndexFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		d.addf(path, "%q must not contain spaces or control characters", name)
	}
}

// role checks a Role or ClusterRole.
func (d *doc) role(rd *roleDoc) *role {
	d.metadata(rd.Kind, &rd.Metadata)
	r := &role{roleKey: roleKey{kind: rd.Kind, name: rd.Metadata.Name}, at: d.at("metadata.name")}
	if rd.Kind == kindRole {
		r.namespace = rd.Metadata.Namespace
	}
	if len(rd.Rules) == 0 {
		d.addf("rules", "rules must list at least one rule")
	}
	for i, pr := range rd.Rules {
		r.rules = append(r.rules, d.rule(document.IndexPath("rules", i), &pr))
	}
	return r
}

// verbHints explain Kubernetes verbs that cup does not have.
var verbHints = map[string]string{
	"create":           "put creates and updates",
	"update":           "put creates and updates",
	"patch":            "put creates and updates",
	"deletecollection": "delete one resource at a time",
}

// rule checks one rule of a role.
func (d *doc) rule(path string, pr *policyRule) rule {
	r := rule{groups: pr.APIGroups, plurals: pr.Resources, names: pr.ResourceNames}
	if len(pr.APIGroups) == 0 {
		d.addf(path+".apiGroups", `%s.apiGroups must list at least one API group, e.g. flipt.io ("*" for all)`, path)
	}
	for i, g := range pr.APIGroups {
		if g != wildcard && !document.IsDNSSubdomain(g) {
			d.addf(document.IndexPath(path+".apiGroups", i), `%q is not an API group: want a DNS subdomain, e.g. flipt.io, or "*" for all`, g)
		}
	}
	if len(pr.Resources) == 0 {
		d.addf(path+".resources", `%s.resources must list at least one resource's plural, e.g. flags ("*" for all)`, path)
	}
	for i, res := range pr.Resources {
		if res != wildcard && !document.IsDNSLabel(res) {
			d.addf(document.IndexPath(path+".resources", i), `%q is not a resource: want a type's plural, a lowercase DNS label such as flags, or "*" for all`, res)
		}
	}
	const want = `get, list, watch, put, delete or "*"`
	if len(pr.Verbs) == 0 {
		d.addf(path+".verbs", "%s.verbs must list at least one verb (%s)", path, want)
	}
	for i, v := range pr.Verbs {
		switch {
		case v == wildcard:
			r.verbs |= allVerbs
		case verbOf(v) != 0:
			r.verbs |= verbOf(v)
		case verbHints[strings.ToLower(v)] != "":
			d.addf(document.IndexPath(path+".verbs", i), "unknown verb %q (want %s; %s)", v, want, verbHints[strings.ToLower(v)])
		default:
			d.addf(document.IndexPath(path+".verbs", i), "unknown verb %q (want %s)", v, want)
		}
	}
	for i, n := range pr.ResourceNames {
		if !document.IsDNSSubdomain(n) {
			d.addf(document.IndexPath(path+".resourceNames", i), "%q is not a resource name: want a DNS subdomain (lowercase letters, digits, '-' and '.')", n)
		}
	}
	return r
}

// binding checks a RoleBinding or ClusterRoleBinding, but not what its
// roleRef refers to.
func (d *doc) binding(bd *bindingDoc) *binding {
	d.metadata(bd.Kind, &bd.Metadata)
	b := &binding{
		kind: bd.Kind, name: bd.Metadata.Name, subjects: bd.Subjects, ref: bd.RoleRef,
		at: d.at("metadata.name"), refAt: d.at("roleRef.name"), label: d.label,
	}
	if bd.Kind == kindRoleBinding {
		b.namespace = bd.Metadata.Namespace
	}
	if len(bd.Subjects) == 0 {
		d.addf("subjects", "subjects must list at least one User or Group")
	}
	for i, s := range bd.Subjects {
		p := document.IndexPath("subjects", i)
		switch s.Kind {
		case subjectUser, subjectGroup:
		case "":
			d.addf(p+".kind", "%s.kind is required (User or Group)", p)
		default:
			d.addf(p+".kind", "unknown subject kind %q (want User or Group)", s.Kind)
		}
		if s.Name == "" {
			d.addf(p+".name", "%s.name is required", p)
		}
	}
	switch r := bd.RoleRef; {
	case r.Kind == "":
		d.addf("roleRef.kind", "roleRef.kind is required (Role or ClusterRole)")
	case r.Kind == kindRole && bd.Kind == kindClusterRoleBinding:
		d.addf("roleRef.kind", "a ClusterRoleBinding cannot refer to a Role, only to a ClusterRole (bind a Role with a RoleBinding in its namespace)")
	case r.Kind != kindRole && r.Kind != kindClusterRole:
		d.addf("roleRef.kind", "unknown kind %q (want Role or ClusterRole)", r.Kind)
	}
	if bd.RoleRef.Name == "" {
		d.addf("roleRef.name", "roleRef.name is required")
	}
	return b
}

// checkRoles reports roles defined twice and returns the others by key.
func (l *loader) checkRoles() map[roleKey]*role {
	out := map[roleKey]*role{}
	for _, r := range l.roles {
		if first, ok := out[r.roleKey]; ok {
			l.problems = append(l.problems, Problem{File: r.at.file, Line: r.at.line,
				Message: fmt.Sprintf("%s: metadata.name: %s is already defined at %s", r.roleKey, r.kind, first.at)})
			continue
		}
		out[r.roleKey] = r
	}
	return out
}

// checkBindings reports bindings defined twice and bindings whose roles do
// not exist, and returns the others.
func (l *loader) checkBindings(roles map[roleKey]*role) []*binding {
	var out []*binding
	type bindingKey struct{ kind, namespace, name string }
	seen := map[bindingKey]*binding{}
	for _, b := range l.bindings {
		key := bindingKey{b.kind, b.namespace, b.name}
		if first, ok := seen[key]; ok {
			l.problems = append(l.problems, Problem{File: b.at.file, Line: b.at.line,
				Message: fmt.Sprintf("%s: metadata.name: %s is already defined at %s", b.label, b.kind, first.at)})
			continue
		}
		seen[key] = b
		k := b.roleKey()
		if _, ok := roles[k]; ok {
			out = append(out, b)
			continue
		}
		if l.declared[k] {
			continue // the role has problems, reported already
		}
		msg := fmt.Sprintf("%s: roleRef.name: no %s %q", b.label, k.kind, k.name)
		if k.kind == kindRole {
			msg += fmt.Sprintf(" in namespace %q", k.namespace)
			for other := range l.declared {
				if other.kind == kindRole && other.name == k.name {
					msg += " (a RoleBinding can refer only to a Role in its own namespace)"
					break
				}
			}
		}
		l.problems = append(l.problems, Problem{File: b.refAt.file, Line: b.refAt.line, Message: msg})
	}
	return out
}
