package server

import (
	"context"
	"net/http"
	"slices"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cup-dev/cup/auth"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/document"
)

// Access reviews (CheckAccess):
//
//	POST /apis/cup.dev/v1alpha1/accessreviews   {"checks": [{"verb": "put", ...}]}
//
// take a CheckAccessRequest and answer a CheckAccessResponse, both in
// protojson's form; the answer has every field, also the false ones.
const accessReviewsPath = "/apis/" + reservedGroup + "/v1alpha1/accessreviews"

func (h *discoveryService) CheckAccess(ctx context.Context, req *connect.Request[cupv1alpha1.CheckAccessRequest]) (*connect.Response[cupv1alpha1.CheckAccessResponse], error) {
	out, err := h.s.checkAccess(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

// unmarshalJSON decodes the REST form's request bodies: a field the
// message does not have is refused, not ignored, like a misspelt query
// parameter.
var unmarshalJSON = protojson.UnmarshalOptions{}

func (s *Server) restCheckAccess(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req := &cupv1alpha1.CheckAccessRequest{}
	if len(body) > 0 { // no body asks who the caller is, and nothing else
		if document.CheckDepth(body, s.cfg.maxDepth) != nil {
			s.writeError(w, r, s.depthError("body"))
			return
		}
		if err := unmarshalJSON.Unmarshal(body, req); err != nil {
			s.writeError(w, r, fieldError("body", "not a CheckAccessRequest in JSON: %v", err))
			return
		}
	}
	if err := s.validate(req); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.checkAccess(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, func() ([]byte, error) { return marshalAllJSON.Marshal(out) })
}

// checkAccess serves CheckAccessRequest for both forms: who the caller is,
// and for each check whether the policy lets the caller do it. A check is
// a question to the policy alone: a type that is not served is no error,
// just what the policy says of it. Without a policy every check is
// allowed.
func (s *Server) checkAccess(ctx context.Context, req *cupv1alpha1.CheckAccessRequest) (*cupv1alpha1.CheckAccessResponse, error) {
	out := &cupv1alpha1.CheckAccessResponse{Policy: s.cfg.authz != nil, Allowed: make([]bool, len(req.Checks))}
	id, ok := auth.FromContext(ctx)
	if ok {
		out.User, out.Groups, out.Method = id.User, slices.Clone(id.Groups), id.Method
	}
	if s.cfg.authz == nil {
		for i := range out.Allowed {
			out.Allowed[i] = true
		}
		return out, nil
	}
	if !ok {
		return nil, s.authorize(ctx, auth.Attributes{}) // Unauthenticated
	}
	for i, c := range req.Checks {
		out.Allowed[i] = s.cfg.authz.Allowed(id, auth.Attributes{
			Verb: c.Verb, Group: c.Group, Plural: c.Plural, Namespace: c.Namespace, Name: c.Name,
		})
	}
	return out, nil
}
