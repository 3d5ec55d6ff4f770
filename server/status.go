package server

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/runtime"
	"github.com/cup-dev/cup/source"
)

// This file serves what the reconciler runtime derives: the status
// conditions of a resource (GetStatus, GetResponse.status, the REST
// form's status and its /status subresource) and the dependency graph
// (GetDependencyGraph). The runtime is made over the server
// (ReconcileStore) and handed back with SetReconcilers; until then, and
// without one, no type has conditions and the graph is empty.
//
// The REST form:
//
//	GET /apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}/status  {"conditions": [...]}
//	GET /apis/cup.dev/v1alpha1/dependencygraph                                  {"edges": [...]}

// Reconcilers is what the server asks of the reconciler runtime
// (*runtime.Runtime implements it). Its methods are safe for concurrent
// use.
type Reconcilers interface {
	// Status derives the conditions of the resource (namespace, name) of
	// type t at commit, of every reconciler whose primary type is t:
	// none when there is no such reconciler. Its errors are the store's
	// (the server's own reads), which the server maps as any other.
	Status(ctx context.Context, commit string, t controller.Type, namespace, name string) ([]runtime.Condition, error)
	// Graph returns the dependency graph of the reconcilers. It does not
	// change once the reconcilers are set: the server reads it once, in
	// SetReconcilers.
	Graph() []runtime.Edge
	// Poke says that a write through the server just made a commit on
	// the served branch.
	Poke()
	// Render derives what the reconcilers whose primary type is t make
	// of primary (namespace, name) at commit, writing nothing.
	Render(ctx context.Context, commit string, t controller.Type, namespace, name string) ([]runtime.Rendering, error)
	// PokeChangeSet says that a write through the server added commit,
	// on top of base, to change set name: the reconcilers' outputs join
	// it.
	PokeChangeSet(name, base, commit string)
}

// reconcilers is what SetReconcilers set: the runtime, and what its
// graph says once for every call.
type reconcilers struct {
	r Reconcilers
	// edges is the graph in the order GetDependencyGraph answers it, each
	// edge's type with its kind.
	edges []runtime.Edge
	// primaries are the primary types, by typeKey.
	primaries map[controller.Type]bool
}

// SetReconcilers makes the server serve the status conditions and the
// dependency graph of r, and poke r after each write that made a commit.
// The application makes the Server first, then the runtime over
// ReconcileStore, then calls SetReconcilers, which is safe while the
// server serves; calls after it answer with r. Nil sets none. Default:
// none.
func (s *Server) SetReconcilers(r Reconcilers) {
	if r == nil {
		s.recs.Store(nil)
		return
	}
	rs := &reconcilers{r: r, primaries: map[controller.Type]bool{}}
	for _, e := range r.Graph() {
		if e.Type.Kind == "" {
			if t, ok := s.types[typeKey(e.Type.Group, e.Type.Version, e.Type.Plural)]; ok {
				e.Type.Kind = t.Kind
			}
		}
		rs.edges = append(rs.edges, e)
		if e.Kind == runtime.EdgePrimary {
			rs.primaries[typeKey(e.Type.Group, e.Type.Version, e.Type.Plural)] = true
		}
	}
	slices.SortStableFunc(rs.edges, compareEdges)
	s.recs.Store(rs)
}

// edgeOrder is the order of edge kinds in the graph.
var edgeOrder = map[runtime.EdgeKind]int{
	runtime.EdgePrimary: 0, runtime.EdgeMapped: 1, runtime.EdgeOutputExclusive: 2, runtime.EdgeOutputShared: 3,
}

// compareEdges orders edges by reconciler, kind, then type (group, then
// plural, then version).
func compareEdges(a, b runtime.Edge) int {
	return cmp.Or(
		strings.Compare(a.Reconciler, b.Reconciler),
		cmp.Compare(edgeOrder[a.Kind], edgeOrder[b.Kind]),
		strings.Compare(a.Type.Group, b.Type.Group),
		strings.Compare(a.Type.Plural, b.Type.Plural),
		strings.Compare(a.Type.Version, b.Type.Version),
	)
}

// pokeReconcilers tells the runtime, if any, that a write made a commit:
// on the served branch, or in a change set (one the request named, or one
// the source made for the write, in branch mode). A write that named
// another branch is not reconciled.
func (s *Server) pokeReconcilers(w *writeTarget, res *source.UpdateResult) {
	rs := s.recs.Load()
	if rs == nil {
		return
	}
	changeSet := w.changeSet
	if changeSet == "" {
		served, ok := "", false
		if db, can := s.src.(defaultBrancher); can {
			b, err := db.DefaultBranch()
			served, ok = b, err == nil
		}
		switch {
		case !ok || res.Branch == served:
			rs.r.Poke() // the runtime reads the served head itself
			return
		case w.revision != "":
			return
		}
		changeSet = res.Branch
	}
	rs.r.PokeChangeSet(changeSet, res.Base, res.Commit)
}

// primary reports whether a reconciler has t as its primary type.
func (s *Server) primary(t *Type) bool {
	rs := s.recs.Load()
	return rs != nil && rs.primaries[typeKey(t.Group, t.Version, t.Plural)]
}

// status derives the conditions of the resource at, which exists at
// commit; nil when no reconciler has its type as its primary.
func (s *Server) status(ctx context.Context, t *Type, at ref, commit string) ([]*cupv1alpha1.Condition, error) {
	rs := s.recs.Load()
	if rs == nil || !rs.primaries[typeKey(t.Group, t.Version, t.Plural)] {
		return nil, nil
	}
	cs, err := rs.r.Status(ctx, commit, t.Type, at.namespace, at.name)
	if err != nil {
		return nil, err
	}
	out := make([]*cupv1alpha1.Condition, len(cs))
	for i, c := range cs {
		out[i] = conditionProto(c)
	}
	return out, nil
}

// getStatus reads the resource at, at revision, and derives its
// conditions: it needs the verb get, and a resource that is not there is
// not found, as for get.
func (s *Server) getStatus(ctx context.Context, at ref, revision string) ([]*cupv1alpha1.Condition, string, error) {
	_, commit, err := s.get(ctx, at, revision)
	if err != nil {
		return nil, "", err
	}
	t, err := s.lookup(at.group, at.version, at.plural)
	if err != nil {
		return nil, "", err
	}
	cs, err := s.status(ctx, t, at, commit)
	if err != nil {
		return nil, "", err
	}
	return cs, commit, nil
}

// statusOnGet derives the status a get answers with the resource: nil
// when its type is no reconciler's primary, and when the conditions
// cannot be derived, which is logged (GetStatus tells the caller why): a
// read of the resource does not fail because of its reconcilers.
func (s *Server) statusOnGet(ctx context.Context, at ref, commit string) *cupv1alpha1.ResourceStatus {
	if s.recs.Load() == nil {
		return nil
	}
	t, err := s.lookup(at.group, at.version, at.plural)
	if err != nil || !s.primary(t) {
		return nil
	}
	cs, err := s.status(ctx, t, at, commit)
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.logger.WarnContext(ctx, "deriving the status of a resource failed; it is answered without",
				"resource", t.Group+"/"+t.Version+"/"+t.Plural+" "+at.namespace+"/"+at.name, "commit", commit,
				"error", err)
		}
		return nil
	}
	return &cupv1alpha1.ResourceStatus{Conditions: cs}
}

func conditionProto(c runtime.Condition) *cupv1alpha1.Condition {
	pc := &cupv1alpha1.Condition{
		Reconciler: c.Reconciler, Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
		ObservedRevision: c.ObservedRevision,
	}
	if !c.LastTransitionTime.IsZero() {
		pc.LastTransitionTime = c.LastTransitionTime.UTC().Format(time.RFC3339)
	}
	return pc
}

// conditionJSON is a condition in the REST form: Kubernetes' shape, and
// the names Connect's JSON gives the message.
type conditionJSON struct {
	Reconciler         string `json:"reconciler,omitempty"`
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
	ObservedRevision   string `json:"observedRevision,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
}

// statusJSON is {"conditions": [...]}, the REST form's status.
func statusJSON(cs []*cupv1alpha1.Condition) ([]byte, error) {
	out := struct {
		Conditions []conditionJSON `json:"conditions"`
	}{Conditions: make([]conditionJSON, len(cs))}
	for i, c := range cs {
		out.Conditions[i] = conditionJSON{
			Reconciler: c.GetReconciler(), Type: c.GetType(), Status: c.GetStatus(), Reason: c.GetReason(),
			Message: c.GetMessage(), ObservedRevision: c.GetObservedRevision(), LastTransitionTime: c.GetLastTransitionTime(),
		}
	}
	return json.Marshal(out)
}

// withStatus is the REST form of a resource (its JSON object) with its
// status at the top level, as Kubernetes places it.
func withStatus(resource []byte, st *cupv1alpha1.ResourceStatus) ([]byte, error) {
	b, err := statusJSON(st.GetConditions())
	if err != nil {
		return nil, err
	}
	n := len(resource) - 1 // the object's closing brace
	return slices.Concat(resource[:n:n], []byte(`,"status":`), b, []byte(`}`)), nil
}

// graph is the dependency graph the caller may see: every edge without a
// policy, else those of the types the caller may see.
func (s *Server) graph(ctx context.Context) []*cupv1alpha1.DependencyEdge {
	rs := s.recs.Load()
	if rs == nil {
		return nil
	}
	var id *auth.Identity
	if s.cfg.authz != nil {
		var ok bool
		if id, ok = auth.FromContext(ctx); !ok {
			return nil
		}
	}
	out := make([]*cupv1alpha1.DependencyEdge, 0, len(rs.edges))
	for _, e := range rs.edges {
		if id != nil && !s.cfg.authz.Visible(id, e.Type.Group, e.Type.Plural) {
			continue
		}
		out = append(out, &cupv1alpha1.DependencyEdge{
			Reconciler: e.Reconciler, Group: e.Type.Group, Version: e.Type.Version, Kind: e.Type.Kind, Plural: e.Type.Plural,
			EdgeKind: edgeKind(e.Kind), Mapper: string(e.Mapper),
		})
	}
	return out
}

func edgeKind(k runtime.EdgeKind) cupv1alpha1.EdgeKind {
	switch k {
	case runtime.EdgePrimary:
		return cupv1alpha1.EdgeKind_EDGE_KIND_PRIMARY
	case runtime.EdgeMapped:
		return cupv1alpha1.EdgeKind_EDGE_KIND_MAPPED
	case runtime.EdgeOutputExclusive:
		return cupv1alpha1.EdgeKind_EDGE_KIND_OUTPUT_EXCLUSIVE
	case runtime.EdgeOutputShared:
		return cupv1alpha1.EdgeKind_EDGE_KIND_OUTPUT_SHARED
	}
	return cupv1alpha1.EdgeKind_EDGE_KIND_UNSPECIFIED
}

func (h *resourceService) GetStatus(ctx context.Context, req *connect.Request[cupv1alpha1.GetStatusRequest]) (*connect.Response[cupv1alpha1.GetStatusResponse], error) {
	m := req.Msg
	cs, commit, err := h.s.getStatus(ctx, ref{m.Group, m.Version, m.Plural, m.Namespace, m.Name}, m.Revision)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&cupv1alpha1.GetStatusResponse{Conditions: cs, Commit: commit}), nil
}

func (h *discoveryService) GetDependencyGraph(ctx context.Context, _ *connect.Request[cupv1alpha1.GetDependencyGraphRequest]) (*connect.Response[cupv1alpha1.GetDependencyGraphResponse], error) {
	return connect.NewResponse(&cupv1alpha1.GetDependencyGraphResponse{Edges: h.s.graph(ctx)}), nil
}

// REST paths of the status subresource and the dependency graph.
const (
	statusPath = itemPath + "/status"
	graphPath  = "/apis/" + reservedGroup + "/v1alpha1/dependencygraph"
)

func (s *Server) restStatus(w http.ResponseWriter, r *http.Request) {
	req := &cupv1alpha1.GetStatusRequest{
		Group: r.PathValue("group"), Version: r.PathValue("version"), Plural: r.PathValue("plural"),
		Namespace: r.PathValue("namespace"), Name: r.PathValue("name"),
		Revision: r.URL.Query().Get("revision"),
	}
	if err := s.validateAs(req, restNames); err != nil {
		s.writeError(w, r, err)
		return
	}
	cs, commit, err := s.getStatus(r.Context(), restRef(r), req.Revision)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header()[headerCommit] = []string{commit}
	s.writeJSON(w, r, http.StatusOK, func() ([]byte, error) { return statusJSON(cs) })
}

func (s *Server) restGraph(w http.ResponseWriter, r *http.Request) {
	s.writeMessage(w, r, http.StatusOK, &cupv1alpha1.GetDependencyGraphResponse{Edges: s.graph(r.Context())})
}
