// Package registry holds the kinds of controller and of SCM provider that
// cupd builds from its configuration, each registered once with a factory.
//
// The configuration asks the registry which kinds exist (a Controller's
// spec.type, --scm), and the wiring in internal/app asks it to build them:
// neither holds a list of its own. The built-in kinds register themselves
// in package internal/kinds; adding a kind is a new implementation package
// and one registration line there.
//
// Registration happens in init functions, before any lookup, so the
// registries need no lock after that; Register panics on a name registered
// twice, a programming error caught by any test.
package registry

import (
	"fmt"
	"sort"
	"strings"
)

// Registry maps the names of the kinds of one extension point to their
// factories F. The zero value is empty and ready to use.
type Registry[F any] struct {
	what  string // "controller type", for messages
	kinds map[string]F
}

// Register adds the kind name, built by f. It panics when name is empty or
// already registered. Call it from an init function.
func (r *Registry[F]) Register(name string, f F) {
	if name == "" {
		panic("registry: " + r.what + " with an empty name")
	}
	if _, dup := r.kinds[name]; dup {
		panic(fmt.Sprintf("registry: %s %q registered twice", r.what, name))
	}
	if r.kinds == nil {
		r.kinds = map[string]F{}
	}
	r.kinds[name] = f
}

// Lookup returns the factory of the kind name, and whether there is one.
func (r *Registry[F]) Lookup(name string) (F, bool) {
	f, ok := r.kinds[name]
	return f, ok
}

// Names returns the registered names, sorted.
func (r *Registry[F]) Names() []string {
	names := make([]string, 0, len(r.kinds))
	for n := range r.kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Has reports whether the kind name is registered.
func (r *Registry[F]) Has(name string) bool {
	_, ok := r.kinds[name]
	return ok
}

// List returns the registered names for a message, sorted: with last
// "or", "a, b or c"; with last "", "a, b, c"; "none" when there are none.
func (r *Registry[F]) List(last string) string {
	names := r.Names()
	switch len(names) {
	case 0:
		return "none"
	case 1:
		return names[0]
	}
	if last == "" {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + last + " " + names[len(names)-1]
}
