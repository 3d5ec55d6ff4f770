package server

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/source"
)

// The namespaces that hold resources (ListNamespaces):
//
//	GET /apis/cup.dev/v1alpha1/namespaces[?group=&version=&plural=][&revision=]
//
// answers ListNamespacesResponse in protojson's form, every field present,
// with the commit read in the Cup-Commit header too.
const namespacesPath = "/apis/" + reservedGroup + "/v1alpha1/namespaces"

// marshalAllJSON is protojson's form with every field, also those at their
// zero value: a false or an empty list is said rather than left out.
var marshalAllJSON = protojson.MarshalOptions{EmitUnpopulated: true}

func (h *discoveryService) ListNamespaces(ctx context.Context, req *connect.Request[cupv1alpha1.ListNamespacesRequest]) (*connect.Response[cupv1alpha1.ListNamespacesResponse], error) {
	out, err := h.s.listNamespaces(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

func (s *Server) restListNamespaces(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := &cupv1alpha1.ListNamespacesRequest{Group: q.Get("group"), Version: q.Get("version"), Plural: q.Get("plural"), Revision: q.Get("revision")}
	if err := s.validate(req); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.listNamespaces(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header()[headerCommit] = []string{out.Commit}
	s.writeJSON(w, r, http.StatusOK, func() ([]byte, error) { return marshalAllJSON.Marshal(out) })
}

// listNamespaces serves ListNamespacesRequest for both forms: for each
// namespace that holds resources of the type named, or of every type the
// caller may see, how many of each type, counted from the memoised
// listings at the commit read. Under a policy a namespace counts only the
// types the caller may list there, and one left with none is left out.
// Asked for every type, types whose controller cannot tell their
// namespaces are left out; asked for one of them, it fails as a list
// across namespaces does.
func (s *Server) listNamespaces(ctx context.Context, req *cupv1alpha1.ListNamespacesRequest) (*cupv1alpha1.ListNamespacesResponse, error) {
	types, err := s.countedTypes(ctx, req.Group, req.Version, req.Plural)
	if err != nil {
		return nil, err
	}
	snap, err := s.src.View(ctx, req.Revision)
	if err != nil {
		return nil, err
	}
	byName := map[string]*cupv1alpha1.Namespace{}
	for _, t := range types {
		namespaces, err := s.namespacesOf(ctx, t, snap)
		if errors.Is(err, errNoNamespaces) && req.Plural == "" {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, ns := range namespaces {
			if !s.listableIn(ctx, t, ns) {
				continue
			}
			l, err := s.listEntries(ctx, t, snap, ns)
			if err != nil {
				return nil, err
			}
			if len(l.items) == 0 {
				continue // the controller may name namespaces that hold none
			}
			n := byName[ns]
			if n == nil {
				n = &cupv1alpha1.Namespace{Name: ns}
				byName[ns] = n
			}
			n.Types = append(n.Types, &cupv1alpha1.TypeCount{
				Group: t.Group, Version: t.Version, Plural: t.Plural, Kind: t.Kind, Count: int32(min(len(l.items), 1<<31-1)),
			})
		}
	}
	out := &cupv1alpha1.ListNamespacesResponse{Commit: snap.Commit, Namespaces: make([]*cupv1alpha1.Namespace, 0, len(byName))}
	for _, ns := range slices.Sorted(maps.Keys(byName)) {
		out.Namespaces = append(out.Namespaces, byName[ns])
	}
	return out, nil
}

// countedTypes are the types ListNamespaces counts: the one named, or with
// none named every type the caller may see, sorted by group, plural and
// version. A type the caller may not see is not found, as discovery
// hides it.
func (s *Server) countedTypes(ctx context.Context, group, version, plural string) ([]*Type, error) {
	if plural != "" {
		t, err := s.lookup(group, version, plural)
		if err != nil {
			return nil, err
		}
		if !s.visible(ctx, group, plural) {
			return nil, notServed(group, version, plural)
		}
		return []*Type{t}, nil
	}
	var out []*Type
	for _, t := range s.types {
		if s.visible(ctx, t.Group, t.Plural) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *Type) int {
		if c := strings.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		if c := strings.Compare(a.Plural, b.Plural); c != 0 {
			return c
		}
		return strings.Compare(a.Version, b.Version)
	})
	return out, nil
}

// namespacesOf is namespacesAt, memoised: the namespaces that may hold t's
// resources at snap, sorted. The slice is shared: callers must not modify
// it.
func (s *Server) namespacesOf(ctx context.Context, t *Type, snap *source.Snapshot) ([]string, error) {
	v, err := s.memo.do(ctx, memoKey{commit: snap.Commit, typ: t, what: memoNamespaces}, func() (any, int64, error) {
		found, err := s.namespacesAt(ctx, t, snap)
		if err != nil {
			return nil, 0, err
		}
		// Copies: a controller's strings may be cut out of longer paths.
		ns := make([]string, len(found))
		size := int64(24 + 16*len(ns))
		for i, n := range found {
			ns[i] = strings.Clone(n)
			size += int64(len(n))
		}
		slices.Sort(ns)
		return slices.Compact(ns), size, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]string), nil
}
