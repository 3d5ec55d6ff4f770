package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/cup-dev/cup/controller"
)

// viewCache keeps the views of the last few commits: the head's, and the
// one before it while changes between them are mapped.
type viewCache struct {
	mu    sync.Mutex
	views []*view // newest last
}

const keptViews = 4

// viewAt returns the view of commit: every resource of every type a
// reconciler reads or writes, read through the store (whose reads are
// memoised per commit).
func (rt *Runtime) viewAt(ctx context.Context, commit string) (*view, error) {
	rt.views.mu.Lock()
	for _, v := range rt.views.views {
		if v.commit == commit {
			rt.views.mu.Unlock()
			return v, nil
		}
	}
	rt.views.mu.Unlock()
	v := &view{commit: commit, types: map[controller.Type]*objects{}, index: map[string]*reconcilerIndex{}}
	// Primaries first: a type whose namespaces cannot be listed is read
	// in theirs.
	for _, r := range rt.rs {
		if v.types[typeKey(r.For)] != nil {
			continue
		}
		rs, err := rt.store.List(ctx, commit, r.For, nil)
		if err != nil {
			return nil, fmt.Errorf("reading %s at %.12s: %w", r.For.Plural, commit, err)
		}
		v.types[typeKey(r.For)] = newObjects(rs)
	}
	for _, r := range rt.rs {
		types := []controller.Type{r.For}
		for _, w := range r.Watches {
			types = append(types, w.Type)
		}
		for _, o := range r.Outputs {
			types = append(types, o.Type)
		}
		for _, t := range types {
			if v.types[typeKey(t)] != nil {
				continue
			}
			rs, err := rt.store.List(ctx, commit, t, nil)
			if errors.Is(err, ErrNamespacesUnknown) {
				rs, err = rt.store.List(ctx, commit, t, slices.Sorted(maps.Keys(v.types[typeKey(r.For)].byNamespace)))
			}
			if err != nil {
				return nil, fmt.Errorf("reading %s at %.12s: %w", t.Plural, commit, err)
			}
			v.types[typeKey(t)] = newObjects(rs)
		}
	}
	for _, r := range rt.rs {
		v.index[r.Name] = v.buildIndex(r)
	}
	rt.views.mu.Lock()
	rt.views.views = append(rt.views.views, v)
	if len(rt.views.views) > keptViews {
		rt.views.views = rt.views.views[1:]
	}
	rt.views.mu.Unlock()
	return v, nil
}

// indexOf returns r's indexes in the view.
func (v *view) indexOf(r *Reconciler) *reconcilerIndex {
	if ix := v.index[r.Name]; ix != nil {
		return ix
	}
	return v.buildIndex(r)
}
