package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"path"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/document"
	"github.com/cup-dev/cup/internal/registry"
)

// Load reads the configuration below dir in fsys ("." for its root) and
// checks it completely, references between resources included.
//
// A configuration that is wrong returns an [*Error] listing every problem;
// one that cannot be read returns another error, wrapping fs.ErrNotExist
// when dir does not exist. A directory without configuration files gives an
// empty Set. dir may also name a single file.
func Load(fsys fs.FS, dir string) (*Set, error) {
	l, err := parse(fsys, dir)
	if err != nil {
		return nil, err
	}
	l.set.checkRefs(&l.problems, l.partial, &l.broken)
	l.set.checkReconcilers(&l.problems)
	if err := l.problems.err(); err != nil {
		return nil, err
	}
	return l.set, nil
}

// Parse is like [Load] but does not check that bindings refer to existing
// controllers, definitions and versions, nor that a resource is bound only
// once: the Set may be one part of the configuration, to be completed with
// [Set.Merge], which checks the whole.
func Parse(fsys fs.FS, dir string) (*Set, error) {
	l, err := parse(fsys, dir)
	if err != nil {
		return nil, err
	}
	if err := l.problems.err(); err != nil {
		return nil, err
	}
	return l.set, nil
}

// loader accumulates resources and problems while reading files.
type loader struct {
	set      *Set
	problems problems
	broken   broken
	// partial are bindings with problems, holding the references that could
	// be parsed: Load checks those too, to report everything in one go.
	partial []*Binding
	// skipped counts the documents of each file that are not configuration;
	// docs counts every document of each file.
	skipped, docs map[string]int
}

// broken remembers resources that failed to load, so that bindings referring
// to them do not add a second, misleading problem.
type broken struct {
	controllers map[string]bool
	definitions map[[2]string]bool // group, plural
}

func (b *broken) controller(name string) bool { return b != nil && b.controllers[name] }

func (b *broken) definition(group, plural string) bool {
	return b != nil && b.definitions[[2]string{group, plural}]
}

func parse(fsys fs.FS, dir string) (*loader, error) {
	if !fs.ValidPath(dir) {
		return nil, fmt.Errorf("config: invalid directory %q: want a slash-separated path relative to the file system's root", dir)
	}
	l := &loader{
		set:    &Set{},
		broken: broken{controllers: map[string]bool{}, definitions: map[[2]string]bool{}},
	}
	err := fs.WalkDir(fsys, dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		ext := path.Ext(name)
		if ext != ".json" && ext != ".yaml" && ext != ".yml" {
			return nil
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		if ext == ".json" {
			l.jsonFile(name, data)
		} else {
			l.yamlFile(name, data)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("config: reading %s: %w", dir, err)
	}
	for file, n := range l.skipped {
		if n == l.docs[file] {
			l.set.Skipped = append(l.set.Skipped, file)
		}
	}
	l.set.sort()
	l.set.checkUnique(&l.problems)
	return l, nil
}

// jsonFile reads a file holding one resource or an array of resources.
func (l *loader) jsonFile(name string, data []byte) {
	loc := Location{File: name}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		l.problems.add(loc, "%s", document.EmptyJSON)
		return
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs []json.RawMessage
	var err error
	if trimmed[0] == '[' {
		err = dec.Decode(&docs)
	} else {
		var doc json.RawMessage
		err = dec.Decode(&doc)
		docs = []json.RawMessage{doc}
	}
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = fmt.Errorf("unexpected data after the JSON value (%s)", position(data, dec.InputOffset()))
		}
	}
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			err = fmt.Errorf("%v (%s)", se, position(data, se.Offset))
		}
		l.problems.add(loc, "invalid JSON: %v", err)
		return
	}
	for i, doc := range docs {
		if len(docs) > 1 {
			loc.Document = i + 1
		}
		l.count(name)
		_, dups := document.ScanJSON(doc)
		for _, p := range dups {
			l.problems.add(loc, "duplicate key %q", p)
		}
		l.document(loc, doc, len(docs) > 1)
	}
}

// count counts a document of file name.
func (l *loader) count(name string) {
	if l.docs == nil {
		l.docs = map[string]int{}
	}
	l.docs[name]++
}

// position returns "line L, column C" for a byte offset into data.
func position(data []byte, offset int64) string {
	line, col := document.Position(data, offset)
	return fmt.Sprintf("line %d, column %d", line, col)
}

// yamlFile reads a file holding one or more YAML documents.
func (l *loader) yamlFile(name string, data []byte) {
	docs := document.SplitYAML(data)
	for i, doc := range docs {
		loc := Location{File: name}
		if len(docs) > 1 {
			loc.Document = i + 1
		}
		js, err := doc.JSON()
		if err != nil {
			l.problems.add(loc, "invalid YAML: %v", err)
			continue
		}
		if js == nil {
			continue // an empty document
		}
		l.count(name)
		l.document(loc, js, false)
	}
}

// shape checks documents against the document types below.
var shape = document.NewShape()

// checkShape returns the messages of shape.Check.
func checkShape(path string, v any, t reflect.Type) []string {
	return document.Messages(shape.Check(path, v, t))
}

// Document types: what a file may hold, field by field. checkShape rejects
// anything else before the document is decoded into them.
type (
	metadataDoc struct {
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	}
	namesDoc struct {
		Kind       string   `json:"kind"`
		Singular   string   `json:"singular"`
		Plural     string   `json:"plural"`
		ShortNames []string `json:"shortNames"`
	}
	definitionDoc struct {
		APIVersion string      `json:"apiVersion"`
		Kind       string      `json:"kind"`
		Metadata   metadataDoc `json:"metadata"`
		Names      *namesDoc   `json:"names"`
		Spec       struct {
			Group    string                     `json:"group"`
			Names    *namesDoc                  `json:"names"`
			Versions map[string]json.RawMessage `json:"versions"`
		} `json:"spec"`
	}
	// versionDoc is a version with apiVersion cup.dev/v1alpha1; with the
	// original Cup's apiVersion a version is the bare schema.
	versionDoc struct {
		Schema                   json.RawMessage    `json:"schema"`
		SchemaTarget             string             `json:"schemaTarget"`
		AdditionalPrinterColumns []printerColumnDoc `json:"additionalPrinterColumns"`
	}
	controllerDoc struct {
		APIVersion string      `json:"apiVersion"`
		Kind       string      `json:"kind"`
		Metadata   metadataDoc `json:"metadata"`
		Spec       struct {
			Type string          `json:"type"`
			Spec json.RawMessage `json:"spec"`
		} `json:"spec"`
	}
	bindingDoc struct {
		APIVersion string      `json:"apiVersion"`
		Kind       string      `json:"kind"`
		Metadata   metadataDoc `json:"metadata"`
		Spec       struct {
			Controller string   `json:"controller"`
			Resources  []string `json:"resources"`
		} `json:"spec"`
	}
)

// configuration reports whether a document is meant as configuration: its
// apiVersion is cup's (cup.dev/..., or the original's cup.flipt.io/...,
// a wrong version included), or it has none (or one that is no string) and
// its kind is a configuration kind. Anything else (a Kubernetes manifest, a CI workflow, a feature flag
// file) is not cup's to judge and is skipped, so that a directory may hold
// other files; a configuration document with a mistake is still a problem.
func configuration(obj map[string]any) bool {
	if v, ok := obj["apiVersion"].(string); ok {
		return v == APIVersion || v == LegacyAPIVersion || strings.HasPrefix(v, "cup.dev/") || strings.HasPrefix(v, "cup.flipt.io/")
	}
	switch k, _ := obj["kind"].(string); k {
	case KindResourceDefinition, KindController, KindAPIBinding, KindBinding, KindReconciler:
		return true
	}
	return false
}

// skip records a document that is not configuration; a file is listed in
// Set.Skipped when none of its documents is configuration.
func (l *loader) skip(loc Location) {
	if l.skipped == nil {
		l.skipped = map[string]int{}
	}
	l.skipped[loc.File]++
}

// document loads one resource, given as JSON. A document that is not
// configuration is skipped, unless it is an element of a JSON array that
// is not an object.
func (l *loader) document(loc Location, data []byte, inArray bool) {
	v, err := document.Decode(data)
	if err != nil { // not reached: data is valid JSON
		l.problems.add(loc, "invalid JSON: %v", err)
		return
	}
	obj, ok := v.(map[string]any)
	switch {
	case !ok && inArray:
		l.problems.add(loc, "expected a resource (an object), got %s", document.JSONKind(v))
		return
	case !ok || !configuration(obj):
		l.skip(loc)
		return
	}

	apiVersion, ok := obj["apiVersion"].(string)
	switch {
	case obj["apiVersion"] == nil:
		l.problems.add(loc, "apiVersion is required (%s)", APIVersion)
		return
	case !ok:
		l.problems.add(loc, "apiVersion: expected string, got %s", document.JSONKind(obj["apiVersion"]))
		return
	case apiVersion != APIVersion && apiVersion != LegacyAPIVersion:
		l.problems.add(loc, "unknown apiVersion %q (want %s or %s)", apiVersion, APIVersion, LegacyAPIVersion)
		return
	}

	kind, ok := obj["kind"].(string)
	var docType reflect.Type
	switch kind {
	case KindResourceDefinition:
		docType = reflect.TypeFor[definitionDoc]()
	case KindController:
		docType = reflect.TypeFor[controllerDoc]()
	case KindAPIBinding, KindBinding:
		kind = KindAPIBinding
		docType = reflect.TypeFor[bindingDoc]()
	case KindReconciler:
		docType = reflect.TypeFor[reconcilerDoc]()
	default:
		switch {
		case obj["kind"] == nil:
			l.problems.add(loc, "kind is required (%s, %s, %s or %s)", KindResourceDefinition, KindController, KindAPIBinding, KindReconciler)
		case !ok:
			l.problems.add(loc, "kind: expected string, got %s", document.JSONKind(obj["kind"]))
		default:
			l.problems.add(loc, "unknown kind %q (want %s, %s, %s or %s)", kind, KindResourceDefinition, KindController, KindAPIBinding, KindReconciler)
		}
		return
	}

	label := kind
	meta, _ := obj["metadata"].(map[string]any)
	if name, ok := meta["name"].(string); ok && name != "" {
		label = fmt.Sprintf("%s %q", kind, name)
	}
	report := func(msgs []string) bool {
		for _, m := range msgs {
			l.problems.add(loc, "%s: %s", label, m)
		}
		if len(msgs) > 0 {
			l.markBroken(kind, obj)
		}
		return len(msgs) == 0
	}
	if !report(checkShape("", obj, docType)) {
		return
	}
	switch kind {
	case KindResourceDefinition:
		var doc definitionDoc
		if report(unmarshal(data, &doc)) {
			d, msgs := newDefinition(&doc, loc)
			if report(msgs) {
				l.set.Definitions = append(l.set.Definitions, d)
			}
		}
	case KindController:
		var doc controllerDoc
		if report(unmarshal(data, &doc)) {
			c, msgs := newController(&doc, loc)
			if report(msgs) {
				l.set.Controllers = append(l.set.Controllers, c)
			}
		}
	case KindAPIBinding:
		var doc bindingDoc
		if report(unmarshal(data, &doc)) {
			b, msgs := newBinding(&doc, loc)
			if report(msgs) {
				l.set.Bindings = append(l.set.Bindings, b)
			} else {
				l.partial = append(l.partial, b)
			}
		}
	case KindReconciler:
		var doc reconcilerDoc
		if report(unmarshal(data, &doc)) {
			r, msgs := newReconciler(&doc, loc)
			if report(msgs) {
				l.set.Reconcilers = append(l.set.Reconcilers, r)
			}
		}
	}
}

// unmarshal decodes a document whose shape checkShape accepted.
func unmarshal(data []byte, v any) []string {
	if err := json.Unmarshal(data, v); err != nil {
		return []string{err.Error()}
	}
	return nil
}

// markBroken records a resource that failed to load, as far as its names
// can be made out.
func (l *loader) markBroken(kind string, obj map[string]any) {
	str := func(m any, key string) string {
		mm, _ := m.(map[string]any)
		s, _ := mm[key].(string)
		return s
	}
	spec, _ := obj["spec"].(map[string]any)
	switch kind {
	case KindController:
		l.broken.controllers[str(obj["metadata"], "name")] = true
	case KindResourceDefinition:
		for _, names := range []any{obj["names"], spec["names"]} {
			if plural := str(names, "plural"); plural != "" {
				l.broken.definitions[[2]string{str(spec, "group"), plural}] = true
			}
		}
	}
}

func newDefinition(doc *definitionDoc, loc Location) (*Definition, []string) {
	var msgs []string
	if msg := checkName(doc.Metadata.Name); msg != "" {
		msgs = append(msgs, msg)
	}
	d := &Definition{Name: doc.Metadata.Name, Group: doc.Spec.Group, Location: loc}

	var names *namesDoc
	namesPath := "spec.names"
	switch {
	case doc.Names != nil && doc.Spec.Names != nil:
		msgs = append(msgs, "names are given both at the top level and in spec.names; keep one")
	case doc.Names != nil:
		names, namesPath = doc.Names, "names"
	case doc.Spec.Names != nil:
		names = doc.Spec.Names
	default:
		msgs = append(msgs, "spec.names is required (or names, at the top level)")
	}
	if names != nil {
		d.Names = Names{Kind: names.Kind, Singular: names.Singular, Plural: names.Plural, ShortNames: names.ShortNames}
		msgs = append(msgs, checkNames(namesPath, d.Names)...)
	}

	switch {
	case doc.Spec.Group == "":
		msgs = append(msgs, "spec.group is required")
	case !document.IsDNSSubdomain(doc.Spec.Group):
		msgs = append(msgs, fmt.Sprintf("spec.group %q must be a DNS subdomain (lowercase letters, digits, '-' and '.', e.g. flags.example.com)", doc.Spec.Group))
	}

	if len(doc.Spec.Versions) == 0 {
		msgs = append(msgs, "spec.versions must define at least one version")
	}
	keys := make([]string, 0, len(doc.Spec.Versions))
	for k := range doc.Spec.Versions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, name := range keys {
		v, vmsgs := newVersion(doc.APIVersion, d, name, doc.Spec.Versions[name])
		msgs = append(msgs, vmsgs...)
		if v != nil {
			d.Versions = append(d.Versions, v)
		}
	}
	return d, msgs
}

const labelRule = "a lowercase DNS label (a-z, 0-9 and '-', at most 63 characters)"

func checkNames(p string, n Names) []string {
	var msgs []string
	switch {
	case n.Kind == "":
		msgs = append(msgs, p+".kind is required")
	case !isKind(n.Kind):
		msgs = append(msgs, fmt.Sprintf("%s.kind %q must be UpperCamelCase (letters and digits, starting with an upper-case letter)", p, n.Kind))
	}
	for _, f := range []struct{ field, value string }{{"singular", n.Singular}, {"plural", n.Plural}} {
		switch {
		case f.value == "":
			msgs = append(msgs, fmt.Sprintf("%s.%s is required", p, f.field))
		case !document.IsDNSLabel(f.value):
			msgs = append(msgs, fmt.Sprintf("%s.%s %q must be %s", p, f.field, f.value, labelRule))
		}
	}
	seen := map[string]bool{}
	for i, s := range n.ShortNames {
		switch {
		case !document.IsDNSLabel(s):
			msgs = append(msgs, fmt.Sprintf("%s.shortNames[%d] %q must be %s", p, i, s, labelRule))
		case seen[s]:
			msgs = append(msgs, fmt.Sprintf("%s.shortNames[%d] %q is listed twice", p, i, s))
		}
		seen[s] = true
	}
	return msgs
}

// newVersion reads spec.versions.<name>, compiles its schema and works out
// what the schema describes. It returns a nil Version when it has problems.
func newVersion(apiVersion string, d *Definition, name string, raw json.RawMessage) (*Version, []string) {
	p := "spec.versions." + name
	if !document.IsDNSLabel(name) {
		return nil, []string{fmt.Sprintf("spec.versions: version %q must be %s, e.g. v1alpha1", name, labelRule)}
	}
	schema, schemaPath, target := raw, p, ""
	var columns []PrinterColumn
	if apiVersion == APIVersion {
		val, _ := document.Decode(raw)
		if obj, ok := val.(map[string]any); ok && obj["schema"] == nil {
			// Most likely a bare schema, as the original Cup wrote them.
			var unknown []string
			for _, k := range slices.Sorted(maps.Keys(obj)) {
				if k != "schema" && k != "schemaTarget" && k != "additionalPrinterColumns" {
					unknown = append(unknown, strconv.Quote(k))
				}
			}
			if len(unknown) > 0 {
				return nil, []string{fmt.Sprintf("%s: unknown fields %s: with apiVersion %s a version is {schema, schemaTarget, additionalPrinterColumns}; move the JSON Schema under schema",
					p, strings.Join(unknown, ", "), APIVersion)}
			}
		}
		if msgs := checkShape(p, val, reflect.TypeFor[versionDoc]()); len(msgs) > 0 {
			return nil, msgs
		}
		var vd versionDoc
		if err := json.Unmarshal(raw, &vd); err != nil {
			return nil, []string{fmt.Sprintf("%s: %v", p, err)}
		}
		schema, schemaPath, target = vd.Schema, p+".schema", vd.SchemaTarget
		var msgs []string
		if columns, msgs = newPrinterColumns(p, vd.AdditionalPrinterColumns); len(msgs) > 0 {
			return nil, msgs
		}
	}

	val, _ := document.Decode(schema)
	switch val.(type) {
	case nil:
		return nil, []string{schemaPath + ": a JSON Schema is required"}
	case map[string]any, bool:
	default:
		return nil, []string{fmt.Sprintf("%s: a JSON Schema must be an object or a boolean, got %s", schemaPath, document.JSONKind(val))}
	}

	v := &Version{Name: name, Schema: schema, PrinterColumns: columns}
	switch SchemaTarget(target) {
	case TargetSpec, TargetResource:
		v.Target = SchemaTarget(target)
	case "":
		v.Target = TargetSpec
		if obj, ok := val.(map[string]any); ok {
			if props, ok := obj["properties"].(map[string]any); ok {
				if _, ok := props["spec"]; ok {
					v.Target = TargetResource
				}
			}
		}
	default:
		return nil, []string{fmt.Sprintf("%s.schemaTarget %q is not one of %s, %s", p, target, TargetSpec, TargetResource)}
	}

	compiled, err := compileSchema(schemaID(url.PathEscape(d.Group), name, url.PathEscape(d.Names.Plural)), schema)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: invalid JSON Schema: %v", schemaPath, err)}
	}
	v.compiled = compiled
	return v, nil
}

func newController(doc *controllerDoc, loc Location) (*Controller, []string) {
	var msgs []string
	if msg := checkName(doc.Metadata.Name); msg != "" {
		msgs = append(msgs, msg)
	}
	c := &Controller{Name: doc.Metadata.Name, Type: doc.Spec.Type, Location: loc}
	switch {
	case c.Type == "":
		msgs = append(msgs, fmt.Sprintf("spec.type is required (%s)", registry.Controllers.List("or")))
	case !registry.Controllers.Has(c.Type):
		msgs = append(msgs, fmt.Sprintf("spec.type %q is not one of %s", c.Type, registry.Controllers.List("")))
	}
	if spec := bytes.TrimSpace(doc.Spec.Spec); len(spec) > 0 && !bytes.Equal(spec, []byte("null")) {
		if spec[0] != '{' {
			val, _ := document.Decode(spec)
			msgs = append(msgs, fmt.Sprintf("spec.spec: expected object, got %s", document.JSONKind(val)))
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, spec); err == nil {
			spec = buf.Bytes()
		}
		c.Spec = spec
	}
	return c, msgs
}

func newBinding(doc *bindingDoc, loc Location) (*Binding, []string) {
	var msgs []string
	if msg := checkName(doc.Metadata.Name); msg != "" {
		msgs = append(msgs, msg)
	}
	b := &Binding{Name: doc.Metadata.Name, Controller: doc.Spec.Controller, Location: loc}
	if b.Controller == "" {
		msgs = append(msgs, "spec.controller is required (the name of a Controller)")
	}
	if len(doc.Spec.Resources) == 0 {
		msgs = append(msgs, "spec.resources must list at least one resource as <group>/<version>/<plural>")
	}
	for i, s := range doc.Spec.Resources {
		ref, err := parseResourceRef(s)
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("spec.resources[%d]: %v", i, err))
			// A placeholder keeps the indexes of the others right for
			// checkRefs; the binding is not loaded.
			ref = controller.Type{}
		}
		b.Resources = append(b.Resources, ref)
	}
	return b, msgs
}
