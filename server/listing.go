package server

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	"connectrpc.com/connect"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/source"
)

// and the files left out of it.
type listing struct {
	items    []*entry // sorted by name; holds the interned entries alive
	problems []problem
	bytes    int64 // the problems' strings; the memo counts the entries
}

// getEntry reads one resource at snap, memoised, or from the memo's
// listing of its namespace (see prefetch.go). A missing resource is an
// error wrapping controller.ErrNotFound. The reads of callers use
// readEntry.
func (s *Server) getEntry(ctx context.Context, t *Type, snap *source.Snapshot, namespace, name string) (*entry, error) {
	if e, ok := s.listedEntry(t, snap, namespace, name); ok {
		if e == nil {
			return nil, notFound(t, namespace, name)
		}
		return e, nil
	}
	k := memoKey{commit: snap.Commit, typ: t, namespace: namespace, name: name}
	v, err := s.memo.do(ctx, k, func() (any, int64, error) {
		r, err := callController(ctx, s, func() (*controller.Resource, error) {
			return t.Controller.Get(ctx, &controller.GetRequest{FS: snap.FS, Type: t.Type, Namespace: namespace, Name: name})
		})
		if errors.Is(err, controller.ErrNotFound) {
			return (*entry)(nil), 0, nil // remembered: it is not there; the key's size is counted
		}
		if err != nil {
			return nil, 0, err
		}
		e, err := s.interner.entry(r)
		if err != nil {
			return nil, 0, err
		}
		return e, 0, nil // the memo counts the entry, once however many items hold it
	})
	if err != nil {
		return nil, err
	}
	e, _ := v.(*entry)
	if e == nil {
		return nil, notFound(t, namespace, name)
	}
	return e, nil
}

// readEntry is getEntry for a caller's read of a resource: the read of a
// controller whose Get costs a List starts a listing of the namespace in
// the background, for the reads that follow. Reads on the way to a write
// do not: the write makes a new commit, which the listing would not be of.
func (s *Server) readEntry(ctx context.Context, t *Type, snap *source.Snapshot, namespace, name string) (*entry, error) {
	e, err := s.getEntry(ctx, t, snap, namespace, name)
	if err == nil || errors.Is(err, controller.ErrNotFound) {
		s.prefetchListing(ctx, t, snap, namespace)
	}
	return e, err
}

// listEntries reads every resource of t in namespace at snap, memoised.
func (s *Server) listEntries(ctx context.Context, t *Type, snap *source.Snapshot, namespace string) (*listing, error) {
	k := memoKey{commit: snap.Commit, typ: t, namespace: namespace}
	v, err := s.memo.do(ctx, k, func() (any, int64, error) {
		var l *listing
		var err error
		if kl, ok := t.Controller.(controller.KeyedLister); ok {
			l, err = s.listKeyed(ctx, kl, t, snap, namespace)
		} else {
			l, err = s.listDecoded(ctx, t, snap, namespace)
		}
		if err != nil {
			return nil, 0, err
		}
		// The entries are counted by the memo, once however many listings hold them.
		return l, l.bytes + int64(cap(l.items))*8 + int64(cap(l.problems))*32 + 64, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*listing), nil
}

// listDecoded lists through the controller's List, or its ListProblems
// when it has one.
func (s *Server) listDecoded(ctx context.Context, t *Type, snap *source.Snapshot, namespace string) (*listing, error) {
	var problems []controller.Problem
	rs, err := callController(ctx, s, func() ([]*controller.Resource, error) {
		req := &controller.ListRequest{FS: snap.FS, Type: t.Type, Namespace: namespace}
		if pl, ok := t.Controller.(controller.ProblemLister); ok {
			rs, ps, err := pl.ListProblems(ctx, req)
			problems = ps
			return rs, err
		}
		return t.Controller.List(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	l := &listing{items: make([]*entry, 0, len(rs))}
	for _, p := range problems {
		l.addProblem(problemOf(p.Origin, p.Err))
	}
	for _, r := range rs {
		if err := checkListedName(t, r.Metadata.Name); err != nil {
			l.addProblem(problem{reason: err.Error()})
			continue
		}
		ie, err := s.interner.entry(r)
		if err != nil {
			return nil, err
		}
		l.add(ie)
	}
	sort.Slice(l.items, func(i, j int) bool { return l.items[i].name < l.items[j].name })
	return l, nil
}

// listKeyed lists through a KeyedLister, decoding only the resources whose
// content the interner has not seen in this type and namespace.
//
// Only ListKeyed takes a controller call slot: the Decode functions it
// returns run afterwards, on up to GOMAXPROCS goroutines per listing, and
// are CPU work on files already found (the template controller's are; no
// other controller is a KeyedLister).
func (s *Server) listKeyed(ctx context.Context, kl controller.KeyedLister, t *Type, snap *source.Snapshot, namespace string) (*listing, error) {
	found, err := callController(ctx, s, func() ([]controller.Listed, error) {
		return kl.ListKeyed(ctx, &controller.ListRequest{FS: snap.FS, Type: t.Type, Namespace: namespace})
	})
	if err != nil {
		return nil, err
	}
	type item struct {
		ie     *entry
		origin string
	}
	// First what the interner knows; then decode the rest, in parallel: a
	// namespace seen for the first time may hold thousands of resources.
	known := make([]*entry, len(found))
	skipped := make([]bool, len(found))
	keys := make([]contentKey, len(found))
	var todo []int
	for i, f := range found {
		if f.Key != "" {
			keys[i] = s.interner.hash(keyedKey{typ: t, namespace: namespace, key: f.Key})
			if known[i], skipped[i] = s.interner.byKey(keys[i]); skipped[i] || known[i] != nil {
				continue
			}
		}
		todo = append(todo, i)
	}
	decoded := make([]*entry, len(found))
	bad := make([]error, len(found)) // a problem of the file, which is left out
	if err := parallel(ctx, len(todo), func(j int) error {
		i := todo[j]
		r, err := found[i].Decode()
		var wp weak.Pointer[entry]
		if err == nil && r != nil {
			// Interned by content too, so that a Get of the resource
			// shares this entry; here, on every core, since encoding
			// the entry costs as much as decoding the file.
			decoded[i], wp, err = s.interner.entryRef(r)
		}
		if errors.Is(err, controller.ErrMalformed) {
			bad[i] = err
			return nil
		}
		if err == nil && found[i].Key != "" {
			s.interner.remember(keys[i], wp)
		}
		return err
	}); err != nil {
		return nil, err
	}
	items := make([]item, 0, len(found))
	var problems []problem
	for i, f := range found {
		ie := known[i]
		if skipped[i] {
			continue
		}
		if bad[i] != nil {
			problems = append(problems, problemOf(f.Origin, bad[i]))
			continue
		}
		if ie == nil {
			if ie = decoded[i]; ie == nil {
				continue
			}
		}
		if err := checkListedName(t, ie.name); err != nil {
			problems = append(problems, problem{path: f.Origin, reason: err.Error()})
			continue
		}
		items = append(items, item{ie, f.Origin})
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].ie.name < items[j].ie.name })
	l := &listing{items: make([]*entry, 0, len(items))}
	// Files claiming one name are all left out: Get could read only one.
	for i, it := range items {
		var other string
		if i > 0 && items[i-1].ie.name == it.ie.name {
			other = items[i-1].origin
		} else if i+1 < len(items) && items[i+1].ie.name == it.ie.name {
			other = items[i+1].origin
		}
		if other != "" {
			problems = append(problems, problem{path: it.origin,
				reason: fmt.Sprintf("holds %s %q, which %s holds too", t.Kind, it.ie.name, other)})
			continue
		}
		l.add(it.ie)
	}
	slices.SortStableFunc(problems, func(a, b problem) int { return strings.Compare(a.path, b.path) })
	for _, p := range problems {
		l.addProblem(p)
	}
	return l, nil
}

// parallel calls fn(0), ..., fn(n-1) on up to GOMAXPROCS goroutines and
// returns the first error; all calls are done when it returns. A panic in
// fn on a worker goroutine is returned as an error, since nothing could
// recover it there.
func parallel(ctx context.Context, n int, fn func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		next     atomic.Int64
		firstErr error
		once     sync.Once
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := safeCall(fn, i); err != nil {
					once.Do(func() { firstErr = err })
					next.Store(int64(n)) // stop the others
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// safeCall calls fn(i), turning a panic into an error.
func safeCall(fn func(int) error, i int) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return fn(i)
}

// selectEntries is listEntries for a listing by sel: when its field
// selector names one resource (metadata.name=x), only that resource is
// read, memoised as a Get is; the listing then has no problems but that
// resource's own (a file that does not decode is a warning, as in a
// listing), since the others belong to files it does not read.
func (s *Server) selectEntries(ctx context.Context, t *Type, snap *source.Snapshot, namespace string, sel filter) (*listing, error) {
	if sel.name == "" {
		return s.listEntries(ctx, t, snap, namespace)
	}
	l := &listing{}
	if !validName(sel.name) {
		return l, nil // nothing can have it
	}
	e, err := s.readEntry(ctx, t, snap, namespace, sel.name)
	switch {
	case errors.Is(err, controller.ErrNotFound):
		return l, nil
	case errors.Is(err, controller.ErrMalformed):
		l.addProblem(problemOf("", err))
		return l, nil
	case err != nil:
		return nil, err
	}
	l.add(e)
	return l, nil
}

func (l *listing) add(e *entry) { l.items = append(l.items, e) }

func (l *listing) addProblem(p problem) {
	l.problems = append(l.problems, p)
	l.bytes += int64(len(p.path) + len(p.reason))
}

// fillPage appends to p the entries of items, sorted by name, of
// namespace, named after after, that sel selects, until p holds limit (0:
// no limit). It reports whether p is full while items hold more that sel
// selects.
func fillPage(p *page, items []*entry, namespace, after string, sel filter, limit int) (more bool) {
	start := sort.Search(len(items), func(i int) bool { return items[i].name > after })
	for _, e := range items[start:] {
		if !sel.matches(namespace, e) {
			continue
		}
		if limit > 0 && len(p.items) == limit {
			return true
		}
		p.items = append(p.items, e)
	}
	return false
}

// position is where a listing across namespaces continues: after the
// resource name in namespace. The zero position is the start.
type position struct{ namespace, name string }

// typeAcross is typeFor for a call across namespaces (at.namespace is
// empty). Under a policy the caller must be known and may do something
// with the type somewhere, else it learns nothing of the type; which
// namespaces it sees is decided for each (listableIn).
func (s *Server) typeAcross(ctx context.Context, at ref, verb string) (*Type, error) {
	if s.cfg.authz != nil {
		id, ok := auth.FromContext(ctx)
		if !ok {
			return nil, s.authorize(ctx, at.attributes(verb)) // Unauthenticated
		}
		if !s.cfg.authz.Visible(id, at.group, at.plural) {
			return nil, connect.NewError(connect.CodePermissionDenied, denial(id, at.attributes(verb)))
		}
	}
	return s.lookup(at.group, at.version, at.plural)
}

// listableIn reports whether the caller may list t's resources in
// namespace: always without a policy.
func (s *Server) listableIn(ctx context.Context, t *Type, namespace string) bool {
	return s.allowed(ctx, auth.Attributes{Verb: auth.VerbList, Group: t.Group, Plural: t.Plural, Namespace: namespace})
}

// listAcross reads a page of t's resources at snap in every namespace that
// holds some and the caller may list, sorted by namespace, then name,
// starting after the position after. Namespaces are read one by one, each
// listing memoised, until the page is full and one more resource shows
// that another page follows: a page costs the namespaces it reads, and
// finding its start in after's namespace a binary search.
//
// A namespace's problems come with the page that reaches its start; the
// listing's first page has only its own namespaces' (a listing of one
// namespace has them all on its first page). With q.problems the page
// holds the problems of every namespace and no resources.
func (s *Server) listAcross(ctx context.Context, t *Type, snap *source.Snapshot, at ref, q listQuery, sel filter, limit int, after position) (*page, error) {
	namespaces, err := s.namespacesOf(ctx, t, snap)
	if err != nil {
		return nil, err
	}
	p := &page{commit: snap.Commit}
	if q.problems {
		return p, s.problemsAcross(ctx, t, snap, namespaces, p)
	}
	type start struct {
		namespace string
		l         *listing
	}
	var started []start // the namespaces this page starts, in order
	last := ""          // the namespace of the page's last resource
	for _, ns := range namespaces[sort.SearchStrings(namespaces, after.namespace):] {
		if !sel.inNamespace(ns) || !s.listableIn(ctx, t, ns) {
			continue
		}
		l, err := s.selectEntries(ctx, t, snap, ns, sel)
		if err != nil {
			return nil, err
		}
		from := ""
		if ns == after.namespace {
			from = after.name
		} else {
			started = append(started, start{ns, l})
		}
		n := len(p.items)
		more := fillPage(p, l.items, ns, from, sel, limit)
		if len(p.items) > n {
			last = ns
		}
		if more {
			p.next = encodeToken(pageToken{Commit: snap.Commit, Namespace: last, After: p.items[len(p.items)-1].name, Query: queryHash(at, q.labelSelector, q.fieldSelector)})
			break
		}
	}
	// A namespace started past the page's last resource is started again
	// by the next page, which tells its problems.
	for _, st := range started {
		if p.next != "" && st.namespace > last {
			break
		}
		p.warn(st.l.problems, maxWarnings)
	}
	return p, nil
}

// problemsAcross puts into p the problems of t's listings at snap in
// namespaces, of those the caller may list: as many as a page of
// resources may hold; the rest are counted.
func (s *Server) problemsAcross(ctx context.Context, t *Type, snap *source.Snapshot, namespaces []string, p *page) error {
	for _, ns := range namespaces {
		if !s.listableIn(ctx, t, ns) {
			continue
		}
		l, err := s.listEntries(ctx, t, snap, ns)
		if err != nil {
			return err
		}
		p.warn(l.problems, s.cfg.maxListPage)
	}
	return nil
}

// warn adds problems to p's warnings while they are fewer than most (no
// bound when it is not positive), and counts the rest in p.more.
func (p *page) warn(problems []problem, most int) {
	n := len(problems)
	if most > 0 {
		n = max(0, min(n, most-len(p.warnings)))
	}
	p.warnings = append(p.warnings, problems[:n]...)
	p.more += len(problems) - n
}
