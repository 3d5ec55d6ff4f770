package runtime

import "github.com/cup-dev/cup/controller"

// wake returns the primaries of r that the changes between two views
// wake: changed primaries, the primaries changed inputs map to (before
// and after the change), the owners of changed outputs, the primaries
// whose outputs were bound to a changed input, and the primaries that
// blocked says wanted a changed output that another owner held.
func wake(prev, next *view, r *Reconciler, blocked func(ref) []key) []key {
	seen := map[key]bool{}
	var out []key
	add := func(k key) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	pix, nix := prev.indexOf(r), next.indexOf(r)
	for _, k := range changedKeys(prev.objectsOf(r.For), next.objectsOf(r.For)) {
		add(k)
	}
	for i, w := range r.Watches {
		po, no := prev.objectsOf(w.Type), next.objectsOf(w.Type)
		for _, k := range changedKeys(po, no) {
			for _, pair := range []struct {
				v   *view
				ix  *reconcilerIndex
				res *controller.Resource
			}{{prev, pix, po.byKey[k]}, {next, nix, no.byKey[k]}} {
				if pair.res == nil {
					continue
				}
				for _, pk := range pair.v.primariesOf(r, pair.ix, i, pair.res) {
					add(pk)
				}
				for _, pk := range pair.ix.bound[refString(w.Type, pair.res)] {
					add(pk)
				}
			}
		}
	}
	for _, o := range r.Outputs {
		po, no := prev.objectsOf(o.Type), next.objectsOf(o.Type)
		for _, k := range changedKeys(po, no) {
			for _, res := range []*controller.Resource{po.byKey[k], no.byKey[k]} {
				if res == nil {
					continue
				}
				if pk, ok := ownerKey(res, AnnotationOwner, k.Namespace); ok && ownedBy(res, r.Name) {
					add(pk)
				}
			}
			if blocked != nil {
				for _, pk := range blocked(ref{typeKey(o.Type), k}) {
					add(pk)
				}
			}
		}
	}
	return out
}

func ownedBy(res *controller.Resource, reconciler string) bool {
	v := res.Metadata.Annotations[AnnotationOwner]
	return len(v) > len(reconciler) && v[:len(reconciler)] == reconciler && v[len(reconciler)] == '/'
}

// changedKeys returns the keys whose resources differ between a and b.
func changedKeys(a, b *objects) []key {
	var out []key
	for k, ra := range a.byKey {
		if rb, ok := b.byKey[k]; !ok || rb.Metadata.ResourceVersion != ra.Metadata.ResourceVersion || rb.Metadata.ResourceVersion == "" {
			out = append(out, k)
		}
	}
	for k := range b.byKey {
		if _, ok := a.byKey[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}
