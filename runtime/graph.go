package runtime

import (
	"slices"
	"strings"

	"github.com/cup-dev/cup/controller"
)

// EdgeKind is how a reconciler relates to a type, in COSI's terms.
type EdgeKind string

// Edge kinds.
const (
	EdgePrimary         EdgeKind = "primary"
	EdgeMapped          EdgeKind = "mapped"
	EdgeOutputExclusive EdgeKind = "output-exclusive"
	EdgeOutputShared    EdgeKind = "output-shared"
)

// Edge is one edge of the dependency graph: a reconciler and a type it
// reads (primary, mapped) or writes (output-*). Mapper names the mapper of
// a mapped edge.
type Edge struct {
	Reconciler string
	Type       controller.Type
	Kind       EdgeKind
	Mapper     MapperKind
}

// Graph returns the dependency graph of the reconcilers, sorted by
// reconciler, kind and type: what a change of a type wakes, and what each
// reconciler writes, so cascades (one reconciler's output is another's
// input) can be read off it.
func Graph(rs []*Reconciler) []Edge {
	var out []Edge
	for _, r := range rs {
		out = append(out, Edge{Reconciler: r.Name, Type: r.For, Kind: EdgePrimary})
		for _, w := range r.Watches {
			out = append(out, Edge{Reconciler: r.Name, Type: w.Type, Kind: EdgeMapped, Mapper: w.Mapper.Kind})
		}
		for _, o := range r.Outputs {
			k := EdgeOutputShared
			if o.Exclusive {
				k = EdgeOutputExclusive
			}
			out = append(out, Edge{Reconciler: r.Name, Type: o.Type, Kind: k})
		}
		if r.UpdatesPrimary {
			// It writes its primaries' specs (a reference to the current
			// output), which people write too.
			out = append(out, Edge{Reconciler: r.Name, Type: r.For, Kind: EdgeOutputShared})
		}
	}
	order := map[EdgeKind]int{EdgePrimary: 0, EdgeMapped: 1, EdgeOutputExclusive: 2, EdgeOutputShared: 3}
	slices.SortStableFunc(out, func(a, b Edge) int {
		if c := strings.Compare(a.Reconciler, b.Reconciler); c != 0 {
			return c
		}
		if c := order[a.Kind] - order[b.Kind]; c != 0 {
			return c
		}
		return strings.Compare(a.Type.Group+"/"+a.Type.Plural, b.Type.Group+"/"+b.Type.Plural)
	})
	return out
}

// Graph returns the dependency graph of the runtime's reconcilers.
func (rt *Runtime) Graph() []Edge { return Graph(rt.rs) }
