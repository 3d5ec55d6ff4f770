package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"connectrpc.com/connect"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/source"
)

// Events: what a commit changed, resource by resource. A commit's events
// for a type and namespace (or all namespaces) are computed once, from the
// diff of its tree against its parent's (only the changed paths), and
// memoised: every watcher reads the same ones. Controllers that map paths
// to resources (controller.PathMapper, the template controller) give the
// resources straight from the paths; others have their namespaces listed
// at both commits (memoised too) and the listings compared.

// rawEvent is the change of one resource between two commits, before a
// watch's label selector and the policy see it.
type rawEvent struct {
	namespace, name string
	old, new        *entry // nil: absent
}

func (e *rawEvent) size() int64 {
	n := int64(len(e.namespace)+len(e.name)) + 64
	for _, x := range [2]*entry{e.old, e.new} {
		if x != nil {
			n += x.size()
		}
	}
	return n
}

// errNoNamespaces reports a type whose controller cannot list its
// namespaces, watched across all of them.
var errNoNamespaces = errors.New("cannot list namespaces")

// maxResumeCommits bounds the first-parent walk that finds a watch's
// revision in the branch's history.
const maxResumeCommits = 1_000_000

// maxLiveCommits bounds the walk from a live watcher's last commit to a new
// head; a head further away (or not a descendant: a force-push) is
// compared with the last commit as one change.
const maxLiveCommits = 10_000

// historyOf returns the source's History ability.
func (s *Server) historyOf() (source.History, error) {
	h, ok := s.src.(source.History)
	if !ok {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("this server's source cannot read its history"))
	}
	return h, nil
}

// chainAfter returns the commits after `after` on the first-parent history
// of head, oldest first, and true; or false when after is not among the
// first limit commits of that history.
func chainAfter(ctx context.Context, h source.History, head, after string, limit int) ([]string, bool, error) {
	var out []string
	for c := head; c != ""; {
		if c == after {
			slices.Reverse(out)
			return out, true, nil
		}
		if len(out) >= limit {
			return nil, false, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		out = append(out, c)
		ci, err := h.Commit(ctx, c)
		if err != nil {
			return nil, false, err
		}
		c = ""
		if len(ci.Parents) > 0 {
			c = ci.Parents[0]
		}
	}
	return nil, false, nil
}

// firstParent returns the first parent of commit, "" for a root commit.
func firstParent(ctx context.Context, h source.History, commit string) (string, error) {
	ci, err := h.Commit(ctx, commit)
	if err != nil || len(ci.Parents) == 0 {
		return "", err
	}
	return ci.Parents[0], nil
}

// events returns the changes of t's resources in namespace ("" for all)
// from commit from ("" for the empty tree) to commit to, sorted by
// namespace and name, memoised.
func (s *Server) events(ctx context.Context, t *Type, namespace, from, to string) ([]rawEvent, error) {
	k := memoKey{commit: to, typ: t, namespace: namespace, name: from, what: memoEvents}
	v, err := s.memo.do(ctx, k, func() (any, int64, error) {
		evs, err := s.computeEvents(ctx, t, namespace, from, to)
		if err != nil {
			return nil, 0, err
		}
		s.obs.eventsComputed(len(evs))
		size := int64(cap(evs)) * 8
		for i := range evs {
			size += evs[i].size()
		}
		return evs, size, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]rawEvent), nil
}

func (s *Server) computeEvents(ctx context.Context, t *Type, namespace, from, to string) ([]rawEvent, error) {
	h, err := s.historyOf()
	if err != nil {
		return nil, err
	}
	paths, err := h.ChangedPaths(ctx, from, to)
	if err != nil || len(paths) == 0 {
		return nil, err
	}
	var before *source.Snapshot
	if from != "" {
		if before, err = s.src.View(ctx, from); err != nil {
			return nil, err
		}
	}
	after, err := s.src.View(ctx, to)
	if err != nil {
		return nil, err
	}
	if pm, ok := t.Controller.(controller.PathMapper); ok {
		evs, err := s.mappedEvents(ctx, pm, t, namespace, paths, before, after)
		if !errors.Is(err, controller.ErrUnsupported) {
			return evs, err
		}
	}
	namespaces := []string{namespace}
	if namespace == "" {
		var both []string
		for _, snap := range [2]*source.Snapshot{before, after} {
			ns, err := s.namespacesAt(ctx, t, snap)
			if err != nil {
				return nil, err
			}
			both = append(both, ns...)
		}
		slices.Sort(both)
		namespaces = slices.Compact(both)
	}
	var evs []rawEvent
	for _, ns := range namespaces {
		var old, new []*entry
		if before != nil {
			l, err := s.listEntries(ctx, t, before, ns)
			if err != nil {
				return nil, err
			}
			old = l.items
		}
		l, err := s.listEntries(ctx, t, after, ns)
		if err != nil {
			return nil, err
		}
		new = l.items
		evs = appendListingDiff(evs, ns, old, new)
	}
	return evs, nil
}

// mappedEvents compares the resources kept at paths.
func (s *Server) mappedEvents(ctx context.Context, pm controller.PathMapper, t *Type, namespace string, paths []string, before, after *source.Snapshot) ([]rawEvent, error) {
	type key struct{ namespace, name string }
	var keys []key
	for _, p := range paths {
		ns, name, ok, err := pm.MapPath(t.Type, p)
		if err != nil {
			return nil, err
		}
		if ok && (namespace == "" || ns == namespace) && checkListedName(t, name) == nil {
			keys = append(keys, key{ns, name})
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmpPair(a.namespace, a.name, b.namespace, b.name)
	})
	keys = slices.Compact(keys)
	var evs []rawEvent
	for _, k := range keys {
		old, err := s.readOrAbsent(ctx, t, before, k.namespace, k.name)
		if err != nil {
			return nil, err
		}
		new, err := s.readOrAbsent(ctx, t, after, k.namespace, k.name)
		if err != nil {
			return nil, err
		}
		if old == nil && new == nil || old != nil && new != nil && old.version == new.version {
			continue
		}
		evs = append(evs, rawEvent{namespace: k.namespace, name: k.name, old: old, new: new})
	}
	return evs, nil
}

func cmpPair(a1, a2, b1, b2 string) int {
	if c := strings.Compare(a1, b1); c != 0 {
		return c
	}
	return strings.Compare(a2, b2)
}

// readOrAbsent reads a resource at snap (nil: the empty tree) as a watch
// sees it: a file that is missing or holds no valid resource is no
// resource, as lists leave it out.
func (s *Server) readOrAbsent(ctx context.Context, t *Type, snap *source.Snapshot, namespace, name string) (*entry, error) {
	if snap == nil {
		return nil, nil
	}
	e, err := s.getEntry(ctx, t, snap, namespace, name)
	switch {
	case err == nil:
		return e, nil
	case errors.Is(err, controller.ErrNotFound), errors.Is(err, controller.ErrMalformed), errors.Is(err, controller.ErrInvalid):
		return nil, nil
	}
	return nil, err
}

// appendListingDiff appends to evs the differences between two listings
// of namespace, both sorted by name.
func appendListingDiff(evs []rawEvent, namespace string, old, new []*entry) []rawEvent {
	for i, j := 0, 0; i < len(old) || j < len(new); {
		switch {
		case j == len(new) || i < len(old) && old[i].name < new[j].name:
			evs = append(evs, rawEvent{namespace: namespace, name: old[i].name, old: old[i]})
			i++
		case i == len(old) || new[j].name < old[i].name:
			evs = append(evs, rawEvent{namespace: namespace, name: new[j].name, new: new[j]})
			j++
		default:
			if old[i].version != new[j].version {
				evs = append(evs, rawEvent{namespace: namespace, name: new[j].name, old: old[i], new: new[j]})
			}
			i++
			j++
		}
	}
	return evs
}

// namespacesAt returns the namespaces that may hold t's resources at snap
// (nil: none).
func (s *Server) namespacesAt(ctx context.Context, t *Type, snap *source.Snapshot) ([]string, error) {
	if snap == nil {
		return nil, nil
	}
	nl, ok := t.Controller.(controller.NamespaceLister)
	var ns []string
	err := fmt.Errorf("%w: the %s controller cannot", controller.ErrUnsupported, t.Kind)
	if ok {
		ns, err = nl.Namespaces(ctx, snap.FS, t.Type)
	}
	if errors.Is(err, controller.ErrUnsupported) {
		return nil, &sentinelError{errNoNamespaces, fmt.Sprintf(
			"%s cannot be watched or listed across namespaces: its controller cannot tell which namespaces hold them (%v); name a namespace",
			t.Plural, err)}
	}
	return ns, err
}

// initialEvents returns t's resources in namespace ("" for all) at snap,
// as events that add them: all of them, or only those sel may select
// (with a name in its field selector, only that resource is read).
func (s *Server) initialEvents(ctx context.Context, t *Type, namespace string, snap *source.Snapshot, sel filter) ([]rawEvent, error) {
	namespaces := []string{namespace}
	if namespace == "" {
		var err error
		if namespaces, err = s.namespacesAt(ctx, t, snap); err != nil {
			return nil, err
		}
	}
	var evs []rawEvent
	for _, ns := range namespaces {
		if !sel.inNamespace(ns) {
			continue
		}
		l, err := s.selectEntries(ctx, t, snap, ns, sel)
		if err != nil {
			return nil, err
		}
		evs = appendListingDiff(evs, ns, nil, l.items)
	}
	return evs, nil
}
