package server

import (
	"context"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
)

// resourceService adapts the Server to the generated Connect interface.
type resourceService struct{ s *Server }

var _ cupv1alpha1connect.ResourceServiceHandler = (*resourceService)(nil)

func (h *resourceService) Get(ctx context.Context, req *connect.Request[cupv1alpha1.GetRequest]) (*connect.Response[cupv1alpha1.GetResponse], error) {
	e, commit, err := h.s.get(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	pb, err := e.proto()
	if err != nil {
		return nil, err
	}
	m := req.Msg
	return connect.NewResponse(&cupv1alpha1.GetResponse{
		Resource: pb, Commit: commit,
		Proposals: h.s.openProposals(ctx, m.Group, m.Plural, m.Namespace, m.Name),
	}), nil
}

func (h *resourceService) List(ctx context.Context, req *connect.Request[cupv1alpha1.ListRequest]) (*connect.Response[cupv1alpha1.ListResponse], error) {
	p, err := h.s.list(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	out := &cupv1alpha1.ListResponse{Commit: p.commit, NextPageToken: p.next, Items: make([]*cupv1alpha1.Resource, 0, len(p.items)),
		MoreWarnings: int32(min(p.more, 1<<31-1))}
	for _, w := range p.warnings {
		out.Warnings = append(out.Warnings, w.proto())
	}
	for _, e := range p.items {
		pb, err := e.proto()
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, pb)
	}
	return connect.NewResponse(out), nil
}

func (h *resourceService) Put(ctx context.Context, req *connect.Request[cupv1alpha1.PutRequest]) (*connect.Response[cupv1alpha1.PutResponse], error) {
	res, stored, err := h.s.put(ctx, req.Msg, nil)
	if err != nil {
		return nil, err
	}
	pb, err := stored.proto()
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&cupv1alpha1.PutResponse{Result: res, Resource: pb}), nil
}

func (h *resourceService) Delete(ctx context.Context, req *connect.Request[cupv1alpha1.DeleteRequest]) (*connect.Response[cupv1alpha1.DeleteResponse], error) {
	out, err := h.s.del(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}
