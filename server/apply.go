package server

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

func (h *resourceService) Apply(ctx context.Context, req *connect.Request[cupv1alpha1.ApplyRequest]) (*connect.Response[cupv1alpha1.ApplyResponse], error) {
	return nil, connect.NewError(connect.CodeUnimplemented, errors.New("Apply is not served yet"))
}
