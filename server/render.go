package server

import (
	"context"
	"encoding/json"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/document"
)

// renderPath is the REST form of Render.
const renderPath = itemPath + "/render"

// render reads the resource at, at revision (it needs the verb get, and a
// resource that is not there is not found, as for get), and has the
// reconcilers whose primary is its type render it.
func (s *Server) render(ctx context.Context, at ref, revision string) (*cupv1alpha1.RenderResponse, error) {
	_, commit, err := s.get(ctx, at, revision)
	if err != nil {
		return nil, err
	}
	out := &cupv1alpha1.RenderResponse{Commit: commit, Renderings: []*cupv1alpha1.Rendering{}}
	rs := s.recs.Load()
	t, err := s.lookup(at.group, at.version, at.plural)
	if err != nil {
		return nil, err
	}
	if rs == nil || !s.primary(t) {
		return out, nil
	}
	rds, err := rs.r.Render(ctx, commit, t.Type, at.namespace, at.name)
	if err != nil {
		return nil, err
	}
	for _, rd := range rds {
		pr := &cupv1alpha1.Rendering{Reconciler: rd.Reconciler, Outputs: []*cupv1alpha1.Resource{}}
		for _, o := range rd.Outputs {
			if !s.allowed(ctx, auth.Attributes{Verb: auth.VerbGet, Group: o.Type.Group, Plural: o.Type.Plural, Namespace: o.Namespace, Name: o.Name}) {
				pr.HiddenOutputs++
				continue
			}
			p, err := resourceProto(o.Resource)
			if err != nil {
				return nil, err
			}
			pr.Outputs = append(pr.Outputs, p)
		}
		if rd.Primary != nil {
			if pr.Primary, err = resourceProto(rd.Primary); err != nil {
				return nil, err
			}
		}
		for _, c := range rd.Changes {
			op := "put"
			if c.Resource == nil {
				op = "delete"
			}
			pr.Changes = append(pr.Changes, &cupv1alpha1.RenderedChange{Operation: op, Group: c.Type.Group, Version: c.Type.Version,
				Plural: c.Type.Plural, Namespace: c.Namespace, Name: c.Name})
		}
		for _, c := range rd.Conditions {
			pr.Conditions = append(pr.Conditions, conditionProto(c))
		}
		out.Renderings = append(out.Renderings, pr)
	}
	return out, nil
}

// resourceProto is the protobuf form of a resource (read, or made by a
// reconciler); a spec with numbers a Struct cannot hold exactly goes in
// spec_json.
func resourceProto(r *controller.Resource) (*cupv1alpha1.Resource, error) {
	md := r.Metadata
	p := &cupv1alpha1.Resource{
		ApiVersion: r.APIVersion, Kind: r.Kind,
		Metadata: &cupv1alpha1.ObjectMeta{Namespace: md.Namespace, Name: md.Name, Labels: md.Labels, Annotations: md.Annotations,
			ResourceVersion: md.ResourceVersion},
	}
	switch spec := json.RawMessage(r.Spec); {
	case len(spec) == 0 || string(spec) == "null":
	case document.HasInexactNumber(spec):
		p.SpecJson = string(spec)
	default:
		var st structpb.Struct
		if err := protojson.Unmarshal(spec, &st); err != nil {
			return nil, err
		}
		p.Spec = &st
	}
	return p, nil
}

func (h *resourceService) Render(ctx context.Context, req *connect.Request[cupv1alpha1.RenderRequest]) (*connect.Response[cupv1alpha1.RenderResponse], error) {
	m := req.Msg
	res, err := h.s.render(ctx, ref{m.Group, m.Version, m.Plural, m.Namespace, m.Name}, m.Revision)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(res), nil
}

func (s *Server) restRender(w http.ResponseWriter, r *http.Request) {
	req := &cupv1alpha1.RenderRequest{
		Group: r.PathValue("group"), Version: r.PathValue("version"), Plural: r.PathValue("plural"),
		Namespace: r.PathValue("namespace"), Name: r.PathValue("name"),
		Revision: r.URL.Query().Get("revision"),
	}
	if err := s.validateAs(req, restNames); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.render(r.Context(), restRef(r), req.Revision)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header()[headerCommit] = []string{res.Commit}
	s.writeJSON(w, r, http.StatusOK, func() ([]byte, error) { return marshalJSON.Marshal(res) })
}
