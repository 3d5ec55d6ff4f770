package server

import (
	"context"
	"fmt"
	"strings"

	"connectrpc.com/connect"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
)

// discoveryService adapts the Server to the generated Connect interface.
type discoveryService struct{ s *Server }

var _ cupv1alpha1connect.DiscoveryServiceHandler = (*discoveryService)(nil)

func (h *discoveryService) ListDefinitions(ctx context.Context, _ *connect.Request[cupv1alpha1.ListDefinitionsRequest]) (*connect.Response[cupv1alpha1.ListDefinitionsResponse], error) {
	return connect.NewResponse(&cupv1alpha1.ListDefinitionsResponse{Definitions: h.s.visibleDefinitions(ctx)}), nil
}

func (h *discoveryService) GetDefinition(ctx context.Context, req *connect.Request[cupv1alpha1.GetDefinitionRequest]) (*connect.Response[cupv1alpha1.GetDefinitionResponse], error) {
	d, err := h.s.definition(ctx, req.Msg.Group, req.Msg.Name)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&cupv1alpha1.GetDefinitionResponse{Definition: d}), nil
}

// definition finds a definition by group and any of its names: plural,
// singular, kind (case-insensitive) or a short name, among those the caller
// may see; one it may not see is not found, as if it were not served.
func (s *Server) definition(ctx context.Context, group, name string) (*cupv1alpha1.ResourceDefinition, error) {
	for _, d := range s.visibleDefinitions(ctx) {
		if d.Group != group {
			continue
		}
		n := d.Names
		if name == n.Plural || name == n.Singular || strings.EqualFold(name, n.Kind) {
			return d, nil
		}
		for _, sn := range n.ShortNames {
			if name == sn {
				return d, nil
			}
		}
	}
	return nil, connect.NewError(connect.CodeNotFound,
		fmt.Errorf("no resource type %q in group %q is served: GET /apis lists the served types", name, group))
}

// visible reports whether the caller may see the type of group and plural
// (do something with it somewhere): always without a policy, never
// without a caller under one.
func (s *Server) visible(ctx context.Context, group, plural string) bool {
	if s.cfg.authz == nil {
		return true
	}
	id, ok := auth.FromContext(ctx)
	return ok && s.cfg.authz.Visible(id, group, plural)
}

// notServed is the error for a type the caller may not see: the one for a
// type that is not served (lookup's), so that it learns nothing of it.
func notServed(group, version, plural string) error {
	return &sentinelError{controller.ErrNotFound,
		fmt.Sprintf("no resource type %q in %s/%s is served: GET /apis lists the served types", plural, group, version)}
}
