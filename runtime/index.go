package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
	// owned are the outputs each primary owns.
	owned map[key][]owned
	// bound maps an input to the primaries whose outputs were computed
	// from it.
	bound map[string][]key
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
		owned:     map[key][]owned{},
		bound:     map[string][]key{},
	}
	primaries := v.objectsOf(r.For)
	for i, w := range r.Watches {
		switch w.Mapper.Kind {
		case MapSelector:
			sel := map[key]map[string]string{}
			for k, p := range primaries.byKey {
				if m, ok := matchLabels(p, w.Mapper.Path); ok {
					sel[k] = m
				}
			}
			ix.selectors[i] = sel
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
		var out []key
		for pk, sel := range ix.selectors[i] {
			if pk.Namespace == k.Namespace && selectorMatches(sel, res.Metadata.Labels) {
				out = append(out, pk)
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
		for _, s := range secondaries.byNamespace[p.Namespace] {
			if pk, ok := ownerKey(s, w.Mapper.key(), p.Namespace); ok && pk == p {
				out = append(out, s)
			}
		}
		// Owners in other namespaces are rare; they name the namespace.
		for ns, l := range secondaries.byNamespace {
			if ns == p.Namespace {
				continue
			}
			for _, s := range l {
				if pk, ok := ownerKey(s, w.Mapper.key(), ns); ok && pk == p {
					out = append(out, s)
				}
			}
		}
	case MapSelector:
		sel, ok := ix.selectors[i][p]
		if !ok {
			return nil
		}
		for _, s := range secondaries.byNamespace[p.Namespace] {
			if selectorMatches(sel, s.Metadata.Labels) {
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

// parsePath parses a dotted path of object fields.
func parsePath(p string) ([]string, error) {
	if p == "" {
		return nil, errors.New("required, e.g. spec.selector")
	}
	parts := strings.Split(p, ".")
	for _, s := range parts {
		if s == "" {
			return nil, fmt.Errorf("%q has an empty field name", p)
		}
	}
	if parts[0] != "spec" && parts[0] != "metadata" {
		return nil, fmt.Errorf("%q does not start with spec. or metadata.", p)
	}
	return parts, nil
}

// valueAt returns the JSON value at path in res, nil where there is none.
func valueAt(res *controller.Resource, path string) any {
	parts, err := parsePath(path)
	if err != nil {
		return nil
	}
	var cur any
	switch parts[0] {
	case "spec":
		if len(res.Spec) == 0 {
			return nil
		}
		dec := json.NewDecoder(bytes.NewReader(res.Spec))
		dec.UseNumber()
		if dec.Decode(&cur) != nil {
			return nil
		}
	case "metadata":
		m := map[string]any{"namespace": res.Metadata.Namespace, "name": res.Metadata.Name}
		if res.Metadata.Labels != nil {
			m["labels"] = toAny(res.Metadata.Labels)
		}
		if res.Metadata.Annotations != nil {
			m["annotations"] = toAny(res.Metadata.Annotations)
		}
		cur = m
	}
	for _, p := range parts[1:] {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// namesAt returns the names the value at path holds: a string, or a list
// of strings (other values are skipped).
func namesAt(res *controller.Resource, path string) []string {
	switch v := valueAt(res, path).(type) {
	case string:
		if v != "" {
			return []string{v}
		}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// matchLabels reads the label selector at path: {"matchLabels": {...}}.
// An empty selector matches everything in the namespace.
func matchLabels(res *controller.Resource, path string) (map[string]string, bool) {
	m, ok := valueAt(res, path).(map[string]any)
	if !ok {
		return nil, false
	}
	out := map[string]string{}
	if ml, ok := m["matchLabels"].(map[string]any); ok {
		for k, v := range ml {
			s, ok := v.(string)
			if !ok {
				return nil, false
			}
			out[k] = s
		}
	}
	return out, true
}

func selectorMatches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
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
