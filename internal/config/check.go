package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/document"
)

var kindRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// isKind reports whether s is an UpperCamelCase kind of at most 63 characters.
func isKind(s string) bool { return len(s) <= 63 && kindRE.MatchString(s) }

// checkName checks metadata.name, which is free-form apart from being
// non-empty and free of spaces and control characters (the original Cup
// imposed nothing more).
func checkName(name string) string {
	switch {
	case name == "":
		return "metadata.name is required"
	case len(name) > 253:
		return "metadata.name is longer than 253 characters"
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Sprintf("metadata.name %q must not contain spaces or control characters", name)
	}
	return ""
}

// parseResourceRef parses "<group>/<version>/<plural>".
func parseResourceRef(s string) (controller.Type, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return controller.Type{}, fmt.Errorf("%q is not <group>/<version>/<plural>", s)
	}
	r := controller.Type{Group: parts[0], Version: parts[1], Plural: parts[2]}
	switch {
	case !document.IsDNSSubdomain(r.Group):
		return r, fmt.Errorf("%q: group %q is not a DNS subdomain", s, r.Group)
	case !document.IsDNSLabel(r.Version):
		return r, fmt.Errorf("%q: version %q is not a DNS label", s, r.Version)
	case !document.IsDNSLabel(r.Plural):
		return r, fmt.Errorf("%q: plural %q is not a lowercase DNS label", s, r.Plural)
	}
	return r, nil
}

// byLocation returns the items sorted by location, so that the first
// occurrence of a duplicate is the one in the earliest file.
func byLocation[T any](items []T, loc func(T) Location) []T {
	out := slices.Clone(items)
	slices.SortStableFunc(out, func(a, b T) int { return loc(a).compare(loc(b)) })
	return out
}

// checkUnique reports names defined twice.
func (s *Set) checkUnique(ps *problems) {
	defs := byLocation(s.Definitions, func(d *Definition) Location { return d.Location })
	byName := map[string]*Definition{}
	byPlural := map[[2]string]*Definition{}
	byKind := map[[2]string]*Definition{}
	for _, d := range defs {
		if first, ok := byName[d.Name]; ok {
			ps.add(d.Location, "%s %q: duplicate name, also defined in %s", KindResourceDefinition, d.Name, first.Location)
			continue
		}
		byName[d.Name] = d
		if first, ok := byPlural[[2]string{d.Group, d.Names.Plural}]; ok {
			ps.add(d.Location, "%s %q: group %q and plural %q are already defined by %s %q in %s",
				KindResourceDefinition, d.Name, d.Group, d.Names.Plural, KindResourceDefinition, first.Name, first.Location)
		} else {
			byPlural[[2]string{d.Group, d.Names.Plural}] = d
		}
		if first, ok := byKind[[2]string{d.Group, d.Names.Kind}]; ok {
			ps.add(d.Location, "%s %q: group %q and kind %q are already defined by %s %q in %s",
				KindResourceDefinition, d.Name, d.Group, d.Names.Kind, KindResourceDefinition, first.Name, first.Location)
		} else {
			byKind[[2]string{d.Group, d.Names.Kind}] = d
		}
	}

	controllers := map[string]*Controller{}
	for _, c := range byLocation(s.Controllers, func(c *Controller) Location { return c.Location }) {
		if first, ok := controllers[c.Name]; ok {
			ps.add(c.Location, "%s %q: duplicate name, also defined in %s", KindController, c.Name, first.Location)
			continue
		}
		controllers[c.Name] = c
	}

	bindings := map[string]*Binding{}
	for _, b := range byLocation(s.Bindings, func(b *Binding) Location { return b.Location }) {
		if first, ok := bindings[b.Name]; ok {
			ps.add(b.Location, "%s %q: duplicate name, also defined in %s", KindAPIBinding, b.Name, first.Location)
			continue
		}
		bindings[b.Name] = b
	}
}

// checkRefs reports bindings naming unknown controllers, definitions or
// versions, and resources bound twice, in s and in extra, bindings that did
// not load but whose references are worth checking. References to resources in skip,
// which failed to load and have been reported already, are not reported.
func (s *Set) checkRefs(ps *problems, extra []*Binding, skip *broken) {
	bound := map[controller.Type]*Binding{}
	all := append(append([]*Binding(nil), s.Bindings...), extra...)
	for _, b := range byLocation(all, func(b *Binding) Location { return b.Location }) {
		if _, ok := s.Controller(b.Controller); !ok && b.Controller != "" && !skip.controller(b.Controller) {
			ps.add(b.Location, "%s %q: spec.controller: unknown %s %q", KindAPIBinding, b.Name, KindController, b.Controller)
		}
		for i, ref := range b.Resources {
			if ref == (controller.Type{}) {
				continue // did not parse, reported already
			}
			field := fmt.Sprintf("spec.resources[%d]", i)
			d, ok := s.Definition(ref.Group, ref.Plural)
			if !ok {
				if skip.definition(ref.Group, ref.Plural) {
					continue
				}
				ps.add(b.Location, "%s %q: %s: no %s has group %q and plural %q",
					KindAPIBinding, b.Name, field, KindResourceDefinition, ref.Group, ref.Plural)
				continue
			}
			if _, ok := d.Version(ref.Version); !ok {
				names := make([]string, len(d.Versions))
				for i, v := range d.Versions {
					names[i] = v.Name
				}
				ps.add(b.Location, "%s %q: %s: %s %q has no version %q (it has %s)",
					KindAPIBinding, b.Name, field, KindResourceDefinition, d.Name, ref.Version, strings.Join(names, ", "))
				continue
			}
			if first, ok := bound[ref]; ok {
				where := fmt.Sprintf("by %s %q in %s", KindAPIBinding, first.Name, first.Location)
				if first == b {
					where = "earlier in the same binding"
				}
				ps.add(b.Location, "%s %q: %s: %s is already bound %s", KindAPIBinding, b.Name, field, refString(ref), where)
				continue
			}
			bound[ref] = b
		}
	}
}
