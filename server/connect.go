package server

import (
	"bytes"
	"context"
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/document"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
)

// resourceService adapts the core to the generated Connect interface:
// it turns each request into the core's terms and the answer into the
// response message. The chain (interceptor) runs around it.
type resourceService struct{ s *Server }

var _ cupv1alpha1connect.ResourceServiceHandler = (*resourceService)(nil)

func (h *resourceService) Get(ctx context.Context, req *connect.Request[cupv1alpha1.GetRequest]) (*connect.Response[cupv1alpha1.GetResponse], error) {
	m := req.Msg
	at := ref{m.Group, m.Version, m.Plural, m.Namespace, m.Name}
	e, commit, err := h.s.get(ctx, at, m.Revision)
	if err != nil {
		return nil, err
	}
	pb, err := h.s.proto(e)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&cupv1alpha1.GetResponse{
		Resource: pb, Commit: commit,
		Proposals: h.s.openProposals(ctx, m.Group, m.Plural, m.Namespace, m.Name),
		Status:    h.s.statusOnGet(ctx, at, commit),
	}), nil
}

func (h *resourceService) List(ctx context.Context, req *connect.Request[cupv1alpha1.ListRequest]) (*connect.Response[cupv1alpha1.ListResponse], error) {
	m := req.Msg
	p, err := h.s.list(ctx, ref{m.Group, m.Version, m.Plural, m.Namespace, ""}, listQuery{
		revision: m.Revision, labelSelector: m.LabelSelector, fieldSelector: m.FieldSelector, pageToken: m.PageToken,
		pageSize: int(m.PageSize), problems: m.Problems,
	})
	if err != nil {
		return nil, err
	}
	out := &cupv1alpha1.ListResponse{Commit: p.commit, NextPageToken: p.next, Items: make([]*cupv1alpha1.Resource, 0, len(p.items)),
		MoreWarnings: int32(min(p.more, 1<<31-1))}
	for _, w := range p.warnings {
		out.Warnings = append(out.Warnings, w.proto())
	}
	for _, e := range p.items {
		pb, err := h.s.proto(e)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, pb)
	}
	if m.WithChanges && !m.Problems {
		t, err := h.s.lookup(m.Group, m.Version, m.Plural) // list authorized the caller
		if err != nil {
			return nil, err
		}
		if out.Changes, err = h.s.lastChanges(ctx, t, p.commit, out.Items); err != nil {
			return nil, err
		}
	}
	return connect.NewResponse(out), nil
}

func (h *resourceService) Put(ctx context.Context, req *connect.Request[cupv1alpha1.PutRequest]) (*connect.Response[cupv1alpha1.PutResponse], error) {
	m := req.Msg
	in, err := h.s.putInput(m.Resource)
	if err != nil {
		return nil, err
	}
	res, stored, err := h.s.put(ctx, ref{m.Group, m.Version, m.Plural, m.Namespace, m.Name}, in, writeOptions{
		revision: m.Revision, message: m.Message, precondition: m.ResourceVersion,
		changeSet: m.ChangeSet, idempotencyKey: m.IdempotencyKey, dryRun: m.DryRun, create: m.Create,
	})
	return storedResponse(h.s, res, stored, err, func(res *cupv1alpha1.WriteResult, r *cupv1alpha1.Resource) *cupv1alpha1.PutResponse {
		return &cupv1alpha1.PutResponse{Result: res, Resource: r}
	})
}

// storedResponse answers a write that stored a resource (a put or a patch)
// with the response build makes of its result and the resource, or with
// err.
func storedResponse[T any](s *Server, res *cupv1alpha1.WriteResult, stored *entry, err error, build func(*cupv1alpha1.WriteResult, *cupv1alpha1.Resource) *T) (*connect.Response[T], error) {
	if err != nil {
		return nil, err
	}
	pb, err := s.proto(stored)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(build(res, pb)), nil
}

func (h *resourceService) Delete(ctx context.Context, req *connect.Request[cupv1alpha1.DeleteRequest]) (*connect.Response[cupv1alpha1.DeleteResponse], error) {
	m := req.Msg
	res, err := h.s.del(ctx, ref{m.Group, m.Version, m.Plural, m.Namespace, m.Name}, writeOptions{
		revision: m.Revision, message: m.Message, precondition: m.ResourceVersion,
		changeSet: m.ChangeSet, idempotencyKey: m.IdempotencyKey, dryRun: m.DryRun,
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&cupv1alpha1.DeleteResponse{Result: res}), nil
}

// putInput turns the resource of a PutRequest into the core's terms. Its
// spec comes as a google.protobuf.Struct, encoded here as compact JSON
// with sorted keys, or as the JSON in spec_json, never both.
func (s *Server) putInput(in *cupv1alpha1.Resource) (*putInput, error) {
	return s.putInputAt(in, "resource")
}

// putInputAt is putInput for a resource sent in the request's field
// named field.
func (s *Server) putInputAt(in *cupv1alpha1.Resource, field string) (*putInput, error) {
	md := in.GetMetadata()
	p := &putInput{resource: controller.Resource{
		APIVersion: in.GetApiVersion(), Kind: in.GetKind(),
		Metadata: controller.Metadata{
			Namespace: md.GetNamespace(), Name: md.GetName(),
			Labels: md.GetLabels(), Annotations: md.GetAnnotations(),
			ResourceVersion: md.GetResourceVersion(),
		},
	}, field: field}
	p.specField = p.at("spec")
	switch j := in.GetSpecJson(); {
	case j != "":
		if in.GetSpec() != nil {
			return nil, fieldError(p.at("spec_json"), "send the spec in spec or in spec_json, not both")
		}
		// The resource is depth 1, its spec 2.
		if document.CheckDepth([]byte(j), s.cfg.maxDepth-1) != nil {
			return nil, s.depthError(p.at("spec_json"))
		}
		p.resource.Spec, p.specField = json.RawMessage(j), p.at("spec_json")
	case in.GetSpec() != nil:
		// The resource is depth 1, its spec 2.
		if d := structDepth(in.GetSpec(), 2, s.cfg.maxDepth); d > s.cfg.maxDepth {
			return nil, s.depthError(p.at("spec"))
		}
		b, err := protojson.Marshal(in.GetSpec())
		if err != nil {
			return nil, fieldError(p.at("spec"), "%v", err)
		}
		// protojson varies its spacing at random.
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			return nil, fieldError(p.at("spec"), "%v", err)
		}
		p.resource.Spec, p.specSorted = compact.Bytes(), true
	}
	return p, nil
}

// structDepth returns the depth of the deepest object or array in st, st
// itself being at depth d, or a number past limit as soon as it finds one.
func structDepth(st *structpb.Struct, d, limit int) int {
	deepest := d
	for _, v := range st.GetFields() {
		if deepest = max(deepest, valueDepth(v, d, limit)); deepest > limit {
			return deepest
		}
	}
	return deepest
}

// valueDepth is structDepth for a value held at depth d.
func valueDepth(v *structpb.Value, d, limit int) int {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		return structDepth(k.StructValue, d+1, limit)
	case *structpb.Value_ListValue:
		deepest := d + 1
		for _, e := range k.ListValue.GetValues() {
			if deepest = max(deepest, valueDepth(e, d+1, limit)); deepest > limit {
				return deepest
			}
		}
		return deepest
	}
	return d
}

func structFromJSON(b []byte) (*structpb.Struct, error) {
	var st structpb.Struct
	if err := protojson.Unmarshal(b, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// protoCacheBytes bounds the messages Server.proto keeps, so that a
// resource read or watched by many at once is converted once. Entries kept
// one each until this cache replaced them: a message takes several times
// its resource's JSON (protoSize), and ten thousand resources read once
// over Connect held 13 MB that --cache-bytes did not count. A conversion
// from an entry's JSON is cheap (ParseResource, then protojson); a larger
// cache held more garbage through collections: in bin/cupbench's load
// rows, cupd's RSS was 154-157 MiB with 8 MiB here and 114-115 MiB with 1
// MiB, at the same Connect GET throughput.
const protoCacheBytes = 1 << 20

// protoKey names e's message: its content version, which gives a spec of
// {} and no spec (or null) the same version, and whether the spec is {},
// which the message keeps as an empty Struct where it has none for the
// other two. EncodeVersioned writes the spec last.
func protoKey(e *entry) string {
	if bytes.HasSuffix(e.json, []byte(`,"spec":{}}`)) {
		return string(e.version[:]) + "{}"
	}
	return string(e.version[:])
}

// The heap a message's parts take: a message's allocation (a Value's, a
// Struct's); a map slot with its key's string header; a Value's oneof
// wrapper.
const (
	protoMessage = 64
	protoField   = 48
	protoWrapper = 16
)

// protoSize estimates the heap pb takes, from the sizes of the messages,
// maps and strings it is made of (TestProtoSizeIsItsHeap measures it):
// a spec as a Struct takes several times its JSON, and more for many
// small values than for a few long strings.
func protoSize(pb *cupv1alpha1.Resource) int64 {
	n := int64(4*protoMessage + len(pb.ApiVersion) + len(pb.Kind) + len(pb.SpecJson))
	if md := pb.Metadata; md != nil {
		n += int64(len(md.Namespace) + len(md.Name) + len(md.ResourceVersion))
		for _, m := range []map[string]string{md.Labels, md.Annotations} {
			for k, v := range m {
				n += int64(protoField + len(k) + len(v))
			}
		}
	}
	if pb.Spec != nil {
		n += structSize(pb.Spec)
	}
	return n
}

func structSize(st *structpb.Struct) int64 {
	n := int64(protoMessage)
	for k, v := range st.Fields {
		n += int64(protoField+len(k)) + valueSize(v)
	}
	return n
}

func valueSize(v *structpb.Value) int64 {
	n := int64(protoMessage + protoWrapper)
	switch k := v.Kind.(type) {
	case *structpb.Value_StringValue:
		n += int64(len(k.StringValue))
	case *structpb.Value_StructValue:
		n += structSize(k.StructValue)
	case *structpb.Value_ListValue:
		n += int64(protoMessage + 8*cap(k.ListValue.Values))
		for _, e := range k.ListValue.Values {
			n += valueSize(e)
		}
	}
	return n
}

// proto returns the resource of e as a message. The message is shared:
// callers must not modify it.
//
// A google.protobuf.Struct holds every number as a float64: a spec with a
// number that a float64 cannot hold exactly goes in spec_json instead, as
// the JSON it is, so that no form rounds what the REST form shows exactly
// under the same resourceVersion.
func (s *Server) proto(e *entry) (*cupv1alpha1.Resource, error) {
	key := protoKey(e)
	if pb, ok := s.protos.Get(key); ok {
		return pb, nil
	}
	// e.json is a resource's JSON as EncodeVersioned writes it, which
	// ParseResource reads in one pass; decodeResource, which reads what
	// callers send, is the fallback.
	r, err := controller.ParseResource(e.json)
	if err != nil {
		in, derr := decodeResource(e.json)
		if derr != nil {
			return nil, derr
		}
		r = &in.resource
	}
	pb, err := resourceProto(r)
	if err != nil {
		return nil, err
	}
	s.protos.Add(key, pb, protoSize(pb))
	return pb, nil
}

func (h *resourceService) Watch(ctx context.Context, req *connect.Request[cupv1alpha1.WatchRequest], stream *connect.ServerStream[cupv1alpha1.WatchResponse]) error {
	m := req.Msg
	q := watchQuery{labelSelector: m.LabelSelector, fieldSelector: m.FieldSelector, revision: m.Revision, bookmarks: m.AllowBookmarks}
	if m.SendInitialEvents != nil {
		v := *m.SendInitialEvents
		q.sendInitial = &v
	}
	return h.s.watch(ctx, ref{m.Group, m.Version, m.Plural, m.Namespace, ""}, q, func(ev *watchEvent) error {
		out := &cupv1alpha1.WatchResponse{Type: ev.typ, Commit: ev.commit, InitialEventsEnd: ev.initialEnd, ResumeRevision: ev.resume}
		if ev.entry != nil {
			pb, err := h.s.proto(ev.entry)
			if err != nil {
				return err
			}
			out.Resource = pb
		}
		watchSend(ctx)
		return stream.Send(out)
	})
}

func (h *resourceService) History(ctx context.Context, req *connect.Request[cupv1alpha1.HistoryRequest]) (*connect.Response[cupv1alpha1.HistoryResponse], error) {
	m := req.Msg
	p, err := h.s.history(ctx, ref{m.Group, m.Version, m.Plural, m.Namespace, m.Name}, historyQuery{
		until: m.Until, since: m.Since, pageToken: m.PageToken, pageSize: int(m.PageSize),
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&cupv1alpha1.HistoryResponse{Entries: p.entries, NextPageToken: p.next, Commit: p.commit}), nil
}
