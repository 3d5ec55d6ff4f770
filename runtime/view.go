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
// one before it while changes between them are mapped. A view is built
// once: callers asking for a commit whose view is being built (the loop,
// and Status for every Get of a primary after a new commit) wait for it.
type viewCache struct {
	mu    sync.Mutex
	views []*viewEntry // newest last
}

// viewEntry is a view, built or being built.
type viewEntry struct {
	commit string
	done   chan struct{} // closed once v or err is set
	v      *view
	err    error
}

const keptViews = 4

// viewAt returns the view of commit: every resource of every type a
// reconciler reads or writes, read through the store (whose reads are
// memoised per commit).
func (rt *Runtime) viewAt(ctx context.Context, commit string) (*view, error) {
	// The head's view stays in use when change sets' views have pushed it
	// out of the cache.
	rt.mu.Lock()
	cur := rt.cur
	rt.mu.Unlock()
	if cur != nil && cur.commit == commit {
		return cur, nil
	}
	c := &rt.views
	c.mu.Lock()
	for _, e := range c.views {
		if e.commit == commit {
			c.mu.Unlock()
			select {
			case <-e.done:
				if e.err == nil {
					return e.v, nil
				}
				return rt.viewAt(ctx, commit) // the failed build is gone: build again
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	e := &viewEntry{commit: commit, done: make(chan struct{})}
	c.views = append(c.views, e)
	if len(c.views) > keptViews {
		c.views = c.views[1:]
	}
	c.mu.Unlock()
	// The build is shared: one caller's cancellation does not fail it for
	// the others waiting.
	e.v, e.err = rt.buildView(context.WithoutCancel(ctx), commit)
	if e.err != nil {
		c.mu.Lock()
		c.views = slices.DeleteFunc(c.views, func(x *viewEntry) bool { return x == e })
		c.mu.Unlock()
	}
	close(e.done)
	return e.v, e.err
}

// buildView reads the view of commit.
func (rt *Runtime) buildView(ctx context.Context, commit string) (*view, error) {
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
				nss := maps.Clone(v.types[typeKey(r.For)].byNamespace)
				for _, w := range r.Watches {
					if w.Namespace != "" && typeKey(w.Type) == typeKey(t) {
						nss[w.Namespace] = nil
					}
				}
				rs, err = rt.store.List(ctx, commit, t, slices.Sorted(maps.Keys(nss)))
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
	return v, nil
}

// indexOf returns r's indexes in the view.
func (v *view) indexOf(r *Reconciler) *reconcilerIndex {
	if ix := v.index[r.Name]; ix != nil {
		return ix
	}
	return v.buildIndex(r)
}
