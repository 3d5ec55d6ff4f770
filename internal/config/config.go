package config

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/cup-dev/cup/controller"
)

// API versions accepted in configuration files.
const (
	// APIVersion is the apiVersion of cup's own configuration files.
	APIVersion = "cup.dev/v1alpha1"
	// LegacyAPIVersion is the apiVersion of the original Cup's files, which
	// load unchanged.
	LegacyAPIVersion = "cup.flipt.io/v1alpha1"
)

// Kinds of configuration resource.
const (
	KindResourceDefinition = "ResourceDefinition"
	KindController         = "Controller"
	KindAPIBinding         = "APIBinding"
	// KindBinding is the original Cup's name for APIBinding, accepted as an alias.
	KindBinding = "Binding"
)

// Set is a loaded configuration. Its slices are sorted: definitions by group
// and plural, controllers and bindings by name.
type Set struct {
	Definitions []*Definition
	Controllers []*Controller
	Bindings    []*Binding
	// Reconcilers are sorted by name.
	Reconcilers []*Reconciler
	// Skipped are the files read that hold no configuration (no document
	// with cup's apiVersion or a configuration kind), sorted: a directory
	// may hold other files, which callers may want to mention.
	Skipped []string
}

// Definition is a ResourceDefinition: one API type with its versions.
type Definition struct {
	// Name is metadata.name, conventionally "<plural>.<group>".
	Name string
	// Group is the API group, e.g. "flipt.io".
	Group string
	// Names are the kind and the names used in URLs and on the command line.
	Names Names
	// Versions are sorted by name; there is at least one.
	Versions []*Version
	// Location is where the definition was loaded from.
	Location Location
}

// Names are the names of a resource type.
type Names struct {
	// Kind is the UpperCamelCase kind, e.g. "Flag".
	Kind string
	// Singular is the lowercase singular name, e.g. "flag".
	Singular string
	// Plural is the lowercase plural name used in URLs, e.g. "flags".
	Plural string
	// ShortNames are optional abbreviations for the command line.
	ShortNames []string
}

// SchemaTarget says which part of a resource a version's schema describes.
type SchemaTarget string

// Schema targets.
const (
	// TargetSpec: the schema describes the resource's spec only.
	TargetSpec SchemaTarget = "spec"
	// TargetResource: the schema describes the whole resource (apiVersion,
	// kind, metadata and spec), typically with properties.spec.
	TargetResource SchemaTarget = "resource"
)

// Version is one version of a Definition with its JSON Schema.
type Version struct {
	// Name is the version, e.g. "v1alpha1".
	Name string
	// Schema is the JSON Schema as written in the file, converted to JSON.
	Schema json.RawMessage
	// Target says whether Schema describes the spec or the whole resource:
	// as written in schemaTarget, or inferred (see the package doc).
	Target SchemaTarget
	// PrinterColumns are additionalPrinterColumns as written, in order
	// (with apiVersion cup.dev/v1alpha1 only).
	PrinterColumns []PrinterColumn

	compiled *jsonschema.Schema
}

// Controller is a Controller resource: an instance of a controller type with
// its settings.
type Controller struct {
	// Name is metadata.name, which bindings refer to.
	Name string
	// Type is spec.type, the name of a controller type in
	// registry.Controllers (such as "template" or "wasm"): Load and Parse
	// refuse others.
	Type string
	// Spec holds the type-specific settings (spec.spec) as a JSON object, or
	// is nil when the file has none. The controller packages decode it.
	Spec json.RawMessage
	// Location is where the controller was loaded from.
	Location Location
}

// Binding is an APIBinding: the resources one controller serves.
type Binding struct {
	// Name is metadata.name.
	Name string
	// Controller is the name of the Controller serving the resources.
	Controller string
	// Resources are the bound types, in file order; there is at least one.
	// Each names a group, version and plural; Kind is empty (the
	// definition gives it).
	Resources []controller.Type
	// Location is where the binding was loaded from.
	Location Location
}

// refString returns "<group>/<version>/<plural>", the form a binding
// names a type in.
func refString(r controller.Type) string { return r.Group + "/" + r.Version + "/" + r.Plural }

// Definition returns the definition with the given group and plural.
func (s *Set) Definition(group, plural string) (*Definition, bool) {
	for _, d := range s.Definitions {
		if d.Group == group && d.Names.Plural == plural {
			return d, true
		}
	}
	return nil, false
}

// Controller returns the controller with the given name.
func (s *Set) Controller(name string) (*Controller, bool) {
	for _, c := range s.Controllers {
		if c.Name == name {
			return c, true
		}
	}
	return nil, false
}

// BindingFor returns the binding that binds ref, a group, version and
// plural (ref.Kind is ignored).
func (s *Set) BindingFor(ref controller.Type) (*Binding, bool) {
	ref.Kind = ""
	for _, b := range s.Bindings {
		for _, r := range b.Resources {
			if r == ref {
				return b, true
			}
		}
	}
	return nil, false
}

// Version returns the version with the given name.
func (d *Definition) Version(name string) (*Version, bool) {
	for _, v := range d.Versions {
		if v.Name == name {
			return v, true
		}
	}
	return nil, false
}

// Merge returns a new Set holding the resources of s and other, typically the
// server's configuration directory and a repository's .cup/ directory, each
// read with [Parse]. Neither input is modified. The result is checked like
// [Load]'s: a name defined in both sets is an error, and every binding must
// resolve against the union. Errors are an [*Error].
func (s *Set) Merge(other *Set) (*Set, error) {
	out := &Set{}
	for _, in := range []*Set{s, other} {
		if in == nil {
			continue
		}
		out.Definitions = append(out.Definitions, in.Definitions...)
		out.Controllers = append(out.Controllers, in.Controllers...)
		out.Bindings = append(out.Bindings, in.Bindings...)
		out.Reconcilers = append(out.Reconcilers, in.Reconcilers...)
		out.Skipped = append(out.Skipped, in.Skipped...)
	}
	out.sort()
	var ps problems
	out.checkUnique(&ps)
	out.checkRefs(&ps, nil, nil)
	out.checkReconcilers(&ps)
	if err := ps.err(); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Set) sort() {
	slices.Sort(s.Skipped)
	sort.SliceStable(s.Reconcilers, func(i, j int) bool { return s.Reconcilers[i].Name < s.Reconcilers[j].Name })
	sort.SliceStable(s.Definitions, func(i, j int) bool {
		a, b := s.Definitions[i], s.Definitions[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		return a.Names.Plural < b.Names.Plural
	})
	sort.SliceStable(s.Controllers, func(i, j int) bool { return s.Controllers[i].Name < s.Controllers[j].Name })
	sort.SliceStable(s.Bindings, func(i, j int) bool { return s.Bindings[i].Name < s.Bindings[j].Name })
}
