package server

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

func (h *resourceService) Patch(ctx context.Context, req *connect.Request[cupv1alpha1.PatchRequest]) (*connect.Response[cupv1alpha1.PatchResponse], error) {
	return nil, connect.NewError(connect.CodeUnimplemented, errors.New("Patch is not served yet"))
}
