package runtime

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/cup-dev/cup/controller"
)

// key names a resource of a known type.
type key struct{ Namespace, Name string }

func (k key) String() string { return k.Namespace + "/" + k.Name }

// ref names a resource of any type, as bound references record it.
type ref struct {
	Type controller.Type // by typeKey
	key
}

// refString is a reference as AnnotationBoundReferences lists it.
func refString(t controller.Type, r *controller.Resource) string {
	return t.Group + "/" + t.Kind + "/" + r.Metadata.Namespace + "/" + r.Metadata.Name
}

// objects are the resources of one type at a commit.
type objects struct {
	byKey map[key]*controller.Resource
	// byNamespace holds each namespace's resources, sorted by name.
	byNamespace map[string][]*controller.Resource
}

func newObjects(rs []*controller.Resource) *objects {
	o := &objects{byKey: make(map[key]*controller.Resource, len(rs)), byNamespace: map[string][]*controller.Resource{}}
	for _, r := range rs {
		k := key{r.Metadata.Namespace, r.Metadata.Name}
		o.byKey[k] = r
		o.byNamespace[k.Namespace] = append(o.byNamespace[k.Namespace], r)
	}
	for _, l := range o.byNamespace {
		slices.SortFunc(l, func(a, b *controller.Resource) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	}
	return o
}

// view is the inputs of every reconciler at one commit: the cache the
// mappers and transforms read, with the indexes of one reconciler (by
// name, owner, label selector, reference, outputs by owner, and bound
// references).
type view struct {
	commit string
	types  map[controller.Type]*objects
	index  map[string]*reconcilerIndex // by reconciler name
}

// objectsOf returns the resources of t (never nil).
func (v *view) objectsOf(t controller.Type) *objects {
	if o := v.types[typeKey(t)]; o != nil {
		return o
	}
	return &objects{}
}

func (v *view) get(t controller.Type, k key) *controller.Resource {
	return v.objectsOf(t).byKey[k]
}

// reconcilerIndex holds one reconciler's indexes at a commit.
type reconcilerIndex struct {
	// selectors are the primaries' parsed selectors, for selector mappers
	// (by watch index).
	selectors map[int]map[key]map[string]string
	// names maps a (watch, name-holder) to the keys its path names: for a
	// reference mapper, secondary → primaries; for referencedBy, primary →
	// secondaries.
	names map[int]map[key][]key
	// reverse inverts names: for reference, primary → secondaries; for
	// referencedBy, secondary → primaries.
	reverse map[int]map[key][]key
	// owners maps, for an owner mapper, a primary to the secondaries
	// whose annotation names it.
	owners map[int]map[key][]key
	// labelled maps, for a selector mapper, each label of a namespace to
	// the secondaries that carry it.
	labelled map[int]map[labelPair][]key
	// selecting maps, for a selector mapper, one label of each primary's
	// selector (the least key) to the primaries, and selectAll holds the
	// primaries whose selectors are empty, by namespace: a secondary
	// matches only primaries found under one of its labels or in
	// selectAll.
	selecting map[int]map[labelPair][]key
	selectAll map[int]map[string][]key
	// owned are the outputs each primary owns.
	owned map[key][]owned
	// bound maps an input to the primaries whose outputs were computed
	// from it.
	bound map[string][]key
}

// labelPair is a label in a namespace, as the selector indexes hold it.
type labelPair struct{ namespace, key, value string }

// scope is the namespace the selector indexes of w hold a resource of
// namespace ns under: its own, or "" when w reads a fixed namespace.
func (w Watch) scope(ns string) string {
	if w.Namespace != "" {
		return ""
	}
	return ns
}

// owned is an output and its type.
type owned struct {
	Type controller.Type
	Res  *controller.Resource
}

// buildIndex indexes the view for r.
func (v *view) buildIndex(r *Reconciler) *reconcilerIndex {
	ix := &reconcilerIndex{
		selectors: map[int]map[key]map[string]string{},
		names:     map[int]map[key][]key{},
		reverse:   map[int]map[key][]key{},
		owners:    map[int]map[key][]key{},
		labelled:  map[int]map[labelPair][]key{},
		selecting: map[int]map[labelPair][]key{},
		selectAll: map[int]map[string][]key{},
		owned:     map[key][]owned{},
		bound:     map[string][]key{},
	}
	primaries := v.objectsOf(r.For)
	for i, w := range r.Watches {
		switch w.Mapper.Kind {
		case MapOwner:
			owners := map[key][]key{}
			for k, s := range v.objectsOf(w.Type).byKey {
				if pk, ok := ownerKey(s, w.Mapper.key(), k.Namespace); ok {
					owners[pk] = append(owners[pk], k)
				}
			}
			ix.owners[i] = owners
		case MapSelector:
			// With a fixed namespace, the indexes hold every primary and
			// that namespace's inputs under the namespace "".
			sel, selecting, all := map[key]map[string]string{}, map[labelPair][]key{}, map[string][]key{}
			for k, p := range primaries.byKey {
				m, ok := matchLabels(p, w.Mapper.Path)
				if !ok {
					continue
				}
				sel[k] = m
				ns := w.scope(k.Namespace)
				if len(m) == 0 {
					all[ns] = append(all[ns], k)
					continue
				}
				least := slices.Min(slices.Collect(maps.Keys(m)))
				lp := labelPair{ns, least, m[least]}
				selecting[lp] = append(selecting[lp], k)
			}
			labelled := map[labelPair][]key{}
			for k, s := range v.objectsOf(w.Type).byKey {
				if w.Namespace != "" && k.Namespace != w.Namespace {
					continue
				}
				for lk, lv := range s.Metadata.Labels {
					lp := labelPair{w.scope(k.Namespace), lk, lv}
					labelled[lp] = append(labelled[lp], k)
				}
			}
			ix.selectors[i], ix.selecting[i], ix.selectAll[i], ix.labelled[i] = sel, selecting, all, labelled
		case MapReference, MapReferencedBy:
			holders := v.objectsOf(w.Type).byKey
			if w.Mapper.Kind == MapReferencedBy {
				holders = primaries.byKey
			}
			names, reverse := map[key][]key{}, map[key][]key{}
			for k, res := range holders {
				for _, n := range namesAt(res, w.Mapper.Path) {
					to := key{k.Namespace, n}
					names[k] = append(names[k], to)
					reverse[to] = append(reverse[to], k)
				}
			}
			ix.names[i], ix.reverse[i] = names, reverse
		}
	}
	prefix := r.Name + "/"
	for _, o := range r.Outputs {
		for _, res := range v.objectsOf(o.Type).byKey {
			owner, ok := strings.CutPrefix(res.Metadata.Annotations[AnnotationOwner], prefix)
			if !ok {
				continue
			}
			ns, name, ok := strings.Cut(owner, "/")
			if !ok {
				continue
			}
			pk := key{ns, name}
			ix.owned[pk] = append(ix.owned[pk], owned{o.Type, res})
			var refs []string
			if err := json.Unmarshal([]byte(res.Metadata.Annotations[AnnotationBoundReferences]), &refs); err == nil {
				for _, s := range refs {
					ix.bound[s] = append(ix.bound[s], pk)
				}
			}
		}
	}
	for _, l := range ix.owned {
		slices.SortFunc(l, func(a, b owned) int { return compareResources(a.Type, a.Res, b.Type, b.Res) })
	}
	return ix
}

// primariesOf returns the primaries that the secondary res of watch i
// maps to in the view (res may be absent from the view: a deleted one).
func (v *view) primariesOf(r *Reconciler, ix *reconcilerIndex, i int, res *controller.Resource) []key {
	k := key{res.Metadata.Namespace, res.Metadata.Name}
	w := r.Watches[i]
	switch w.Mapper.Kind {
	case MapNameAligned:
		return []key{k}
	case MapOwner:
		if pk, ok := ownerKey(res, w.Mapper.key(), k.Namespace); ok {
			return []key{pk}
		}
	case MapSelector:
		if w.Namespace != "" && k.Namespace != w.Namespace {
			return nil
		}
		ns := w.scope(k.Namespace)
		out := slices.Clone(ix.selectAll[i][ns])
		for lk, lv := range res.Metadata.Labels {
			for _, pk := range ix.selecting[i][labelPair{ns, lk, lv}] {
				if selectorMatches(ix.selectors[i][pk], res.Metadata.Labels) {
					out = append(out, pk)
				}
			}
		}
		return out
	case MapReference:
		var out []key
		for _, n := range namesAt(res, w.Mapper.Path) {
			out = append(out, key{k.Namespace, n})
		}
		return out
	case MapReferencedBy:
		return ix.reverse[i][k]
	}
	return nil
}

// inputsOf returns the secondaries of watch i that map to primary p.
func (v *view) inputsOf(r *Reconciler, ix *reconcilerIndex, i int, p key) []*controller.Resource {
	w := r.Watches[i]
	secondaries := v.objectsOf(w.Type)
	var out []*controller.Resource
	switch w.Mapper.Kind {
	case MapNameAligned:
		if s := secondaries.byKey[p]; s != nil {
			out = append(out, s)
		}
	case MapOwner:
		for _, sk := range ix.owners[i][p] {
			if s := secondaries.byKey[sk]; s != nil {
				out = append(out, s)
			}
		}
	case MapSelector:
		sel, ok := ix.selectors[i][p]
		if !ok {
			return nil
		}
		if len(sel) == 0 {
			return slices.Clone(secondaries.byNamespace[cmp.Or(w.Namespace, p.Namespace)])
		}
		// The secondaries that carry the selector's rarest label.
		var fewest []key
		first := true
		for lk, lv := range sel {
			if l := ix.labelled[i][labelPair{w.scope(p.Namespace), lk, lv}]; first || len(l) < len(fewest) {
				fewest, first = l, false
			}
		}
		for _, sk := range fewest {
			if s := secondaries.byKey[sk]; s != nil && selectorMatches(sel, s.Metadata.Labels) {
				out = append(out, s)
			}
		}
	case MapReference:
		for _, sk := range ix.reverse[i][p] {
			if s := secondaries.byKey[sk]; s != nil {
				out = append(out, s)
			}
		}
	case MapReferencedBy:
		for _, sk := range ix.names[i][p] {
			if s := secondaries.byKey[sk]; s != nil {
				out = append(out, s)
			}
		}
	}
	return out
}

func (m Mapper) key() string {
	if m.Key != "" {
		return m.Key
	}
	return AnnotationOwner
}

// ownerKey reads an owner annotation: "[<anything>/]<namespace>/<name>",
// or "<name>" in the resource's own namespace.
func ownerKey(res *controller.Resource, annotation, namespace string) (key, bool) {
	v := res.Metadata.Annotations[annotation]
	if v == "" {
		return key{}, false
	}
	parts := strings.Split(v, "/")
	if len(parts) == 1 {
		return key{namespace, parts[0]}, true
	}
	return key{parts[len(parts)-2], parts[len(parts)-1]}, parts[len(parts)-1] != ""
}

// compareResources orders resources by apiVersion, kind, namespace and
// name.
func compareResources(ta controller.Type, a *controller.Resource, tb controller.Type, b *controller.Resource) int {
	if c := strings.Compare(ta.APIVersion(), tb.APIVersion()); c != 0 {
		return c
	}
	if c := strings.Compare(ta.Kind, tb.Kind); c != 0 {
		return c
	}
	if c := strings.Compare(a.Metadata.Namespace, b.Metadata.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Metadata.Name, b.Metadata.Name)
}
