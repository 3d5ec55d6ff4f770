package runtime

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cup-dev/cup/controller"
)

// Reconciler is one reconciler's configuration, as the Reconciler
// configuration kind gives it (or a library user builds it).
type Reconciler struct {
	// Name identifies the reconciler; it is recorded on its outputs.
	Name string
	// For is the primary type: one reconcile runs per primary resource.
	For controller.Type
	// Watches are the secondary input types and how their changes map to
	// primaries.
	Watches []Watch
	// Outputs are the types the reconciler may write.
	Outputs []Output
	// Transform computes the desired outputs.
	Transform Transform
	// Write says where and how often outputs are written.
	Write Write
	// UpdatesPrimary lets the transform change the primary's spec
	// (Response.PrimarySpec), as a reference to the current output; the
	// runtime refuses it otherwise.
	UpdatesPrimary bool
}

// Watch is a watched input type with its mapper.
type Watch struct {
	Type   controller.Type
	Mapper Mapper
	// Namespace, for a selector mapper, reads the inputs from this
	// namespace for the primaries of every namespace (organisation-wide
	// inputs); empty reads them from each primary's own namespace.
	Namespace string
}

// Output is a type a reconciler may write.
type Output struct {
	Type controller.Type
	// Exclusive: only this reconciler writes resources of the type.
	// Otherwise the type is shared, and the reconciler writes only the
	// resources it owns.
	Exclusive bool
}

// WriteMode says where a reconciler's outputs go.
type WriteMode string

// Write modes.
const (
	// WriteDirect commits on the served branch.
	WriteDirect WriteMode = "direct"
	// WriteProposal adds the reconciler's commits to one proposal (change
	// set) of its own, which later changes join until it is merged or
	// closed.
	WriteProposal WriteMode = "proposal"
)

// Write says how a reconciler writes.
type Write struct {
	Mode WriteMode
	// BatchWindow gathers the outputs of the primaries reconciled within
	// it into one commit. Zero writes each reconcile's outputs at once.
	BatchWindow time.Duration
	// MaxWritesPerMinute pauses the reconciler (condition Paused) when it
	// writes more commits than this in a minute: a runaway. Zero means
	// the default, DefaultMaxWritesPerMinute.
	MaxWritesPerMinute int
}

// DefaultMaxWritesPerMinute is the runaway bound of a reconciler that sets
// none.
const DefaultMaxWritesPerMinute = 120

// MapperKind is how a secondary relates to primaries: the relationships
// Consul's controllers name.
type MapperKind string

// Mapper kinds.
const (
	// MapNameAligned: the secondary wakes the primary with its namespace
	// and name.
	MapNameAligned MapperKind = "nameAligned"
	// MapOwner: the secondary names its primary in an annotation (Key,
	// default AnnotationOwner) as "[<reconciler>/]<namespace>/<name>".
	MapOwner MapperKind = "owner"
	// MapSelector: a primary's field (Path) holds a label selector
	// ({"matchLabels": {...}}); it maps the secondaries of its namespace
	// whose labels match.
	MapSelector MapperKind = "selector"
	// MapReference: a field of the secondary (Path) names primaries of its
	// namespace (a name, or a list of names).
	MapReference MapperKind = "reference"
	// MapReferencedBy: a field of the primary (Path) names secondaries of
	// its namespace, served by an index of those names.
	MapReferencedBy MapperKind = "referencedBy"
)

// Mapper says which primaries a secondary relates to.
type Mapper struct {
	Kind MapperKind
	// Path is a dotted path of object fields ("spec.selector") for the
	// selector, reference and referencedBy kinds.
	Path string
	// Key is the annotation of the owner kind.
	Key string
}

// Annotations the runtime writes on outputs.
const (
	// AnnotationOwner names the (reconciler, primary) pair that owns an
	// output: "<reconciler>/<namespace>/<name>".
	AnnotationOwner = "cup.dev/owner"
	// AnnotationBoundReferences lists the inputs an output was computed
	// from, as a JSON array of "<group>/<kind>/<namespace>/<name>".
	AnnotationBoundReferences = "cup.dev/bound-references"
	// AnnotationOrphaned marks an output that is no longer its primary's
	// current one (a copy-on-write transform keeps it while it is used):
	// its value is the commit the reconcile that replaced it ran at.
	// Deleting such an output is garbage collection, committed on its own.
	AnnotationOrphaned = "cup.dev/orphaned"
)

// check reports what is wrong with a set of reconcilers: names, mapper
// shapes, and an exclusive output type that another reconciler also
// writes.
func check(rs []*Reconciler) error {
	var errs []error
	names := map[string]bool{}
	writers := map[controller.Type][]string{}
	exclusive := map[controller.Type]string{}
	for _, r := range rs {
		switch {
		case r.Name == "" || strings.ContainsAny(r.Name, "/ \t\n"):
			errs = append(errs, fmt.Errorf("reconciler %q: a name is required, without slashes or spaces", r.Name))
		case names[r.Name]:
			errs = append(errs, fmt.Errorf("reconciler %q: defined twice", r.Name))
		}
		names[r.Name] = true
		if r.Transform == nil {
			errs = append(errs, fmt.Errorf("reconciler %q: no transform", r.Name))
		}
		if r.Write.Mode != WriteDirect && r.Write.Mode != WriteProposal {
			errs = append(errs, fmt.Errorf("reconciler %q: write mode %q is not %s or %s", r.Name, r.Write.Mode, WriteDirect, WriteProposal))
		}
		for i, w := range r.Watches {
			if err := w.Mapper.check(); err != nil {
				errs = append(errs, fmt.Errorf("reconciler %q: watches[%d]: %w", r.Name, i, err))
			}
			if w.Namespace != "" && w.Mapper.Kind != MapSelector {
				errs = append(errs, fmt.Errorf("reconciler %q: watches[%d]: namespace is for the selector mapper, not %s", r.Name, i, w.Mapper.Kind))
			}
		}
		if len(r.Outputs) == 0 {
			errs = append(errs, fmt.Errorf("reconciler %q: no outputs", r.Name))
		}
		for _, o := range r.Outputs {
			t := typeKey(o.Type)
			writers[t] = append(writers[t], r.Name)
			if o.Exclusive {
				exclusive[t] = r.Name
			}
		}
	}
	for t, owner := range exclusive {
		if ws := writers[t]; len(ws) > 1 {
			errs = append(errs, fmt.Errorf("reconciler %q: output %s is exclusive, but %s also write it", owner, t.Plural, strings.Join(ws, ", ")))
		}
	}
	return errors.Join(errs...)
}

func (m Mapper) check() error {
	switch m.Kind {
	case MapNameAligned, MapOwner:
		return nil
	case MapSelector, MapReference, MapReferencedBy:
		if _, err := parsePath(m.Path); err != nil {
			return fmt.Errorf("mapper %s: path: %w", m.Kind, err)
		}
		return nil
	}
	return fmt.Errorf("mapper %q is not one of nameAligned, owner, selector, reference, referencedBy", m.Kind)
}

// typeKey identifies a type by group, version and plural (the kind is
// not part of it).
func typeKey(t controller.Type) controller.Type {
	return controller.Type{Group: t.Group, Version: t.Version, Plural: t.Plural}
}
