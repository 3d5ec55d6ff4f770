package server

import (
	"context"
	"fmt"
	"strings"

	"connectrpc.com/connect"

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
