package server

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/cup-dev/cup/auth"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// Apply writes a batch of puts and deletes as one commit: every item is
// looked up, authorized and validated first, then one source update
// applies them in order, checking each precondition against the base
// commit. Any failure writes nothing and names the item (items[i]).
func (h *resourceService) Apply(ctx context.Context, req *connect.Request[cupv1alpha1.ApplyRequest]) (*connect.Response[cupv1alpha1.ApplyResponse], error) {
	res, err := h.s.apply(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(res), nil
}

// maxMessageItems is how many items a batch's default commit message
// lists; it counts the rest.
const maxMessageItems = 50

func (s *Server) apply(ctx context.Context, m *cupv1alpha1.ApplyRequest) (*cupv1alpha1.ApplyResponse, error) {
	trace.SpanFromContext(ctx).SetAttributes(attribute.Int("cup.apply.items", len(m.GetItems())))
	s.obs.applyItems.Observe(float64(len(m.GetItems())))
	opts := &writeTarget{
		revision: m.GetRevision(), changeSet: m.GetChangeSet(), idempotencyKey: m.GetIdempotencyKey(),
		message: m.GetMessage(), dryRun: m.GetDryRun(), requester: requester(ctx),
	}
	items := make([]*writeTarget, len(m.GetItems()))
	type resourceKey struct{ group, plural, namespace, name string }
	seen := make(map[resourceKey]int, len(items))
	for i, it := range m.GetItems() {
		w, err := s.applyItem(ctx, i, it)
		if err != nil {
			return nil, err
		}
		k := resourceKey{w.t.Group, w.t.Plural, w.namespace, w.name}
		if j, dup := seen[k]; dup {
			return nil, fieldError(itemField(i, w), "%s %q in namespace %q is items[%d] too: a batch writes each resource at most once",
				w.t.Singular, w.name, w.namespace, j)
		}
		seen[k] = i
		items[i] = w
	}
	rec := recordApply(ctx, opts, len(items))
	msg := opts.message
	if msg == "" {
		msg = applyMessage(items)
	}
	result, err := s.commit(ctx, &update{
		opts: opts, items: items, message: msg, rec: rec,
		fingerprint: func() (string, error) { return applyFingerprint(opts, items) },
		itemErr: func(i int, err error) error {
			return itemError(fmt.Sprintf("items[%d] (%s)", i, describeItem(items[i])), err)
		},
	})
	if err != nil {
		return nil, err
	}
	out := &cupv1alpha1.ApplyResponse{Result: result, Items: make([]*cupv1alpha1.ApplyItemResult, len(items))}
	for i, w := range items {
		ir := &cupv1alpha1.ApplyItemResult{Outcome: result.Outcome}
		// A replay writes nothing: it cannot tell which items changed,
		// and answers each put with the resource as sent (as Put does).
		if !w.changed && !result.Replayed {
			ir.Outcome = cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED
		}
		ir.Created = w.created && !result.Replayed
		if w.resourceForWrite != nil {
			r := w.stored
			if r == nil {
				r = w.resourceForWrite
			}
			e, err := newEntry(r.Clone())
			if err != nil {
				return nil, err
			}
			if ir.Resource, err = s.proto(e); err != nil {
				return nil, err
			}
		}
		out.Items[i] = ir
	}
	return out, nil
}

// applyItem turns item i of a batch into a write: its type, once the
// policy lets the caller write there, and for a put the resource checked
// against the type's schema. Errors name the item.
func (s *Server) applyItem(ctx context.Context, i int, item *cupv1alpha1.ApplyItem) (*writeTarget, error) {
	requester := requester(ctx)
	switch op := item.GetOperation().(type) {
	case *cupv1alpha1.ApplyItem_Put:
		p := op.Put
		at := ref{p.GetGroup(), p.GetVersion(), p.GetPlural(), p.GetNamespace(), p.GetName()}
		field := fmt.Sprintf("items[%d].put", i)
		t, err := s.typeFor(ctx, at, auth.VerbPut)
		if err != nil {
			return nil, itemError(field, err)
		}
		in, err := s.putInputAt(p.GetResource(), field+".resource")
		if err != nil {
			return nil, err
		}
		r, err := s.checkResource(t, at, in)
		if err != nil {
			return nil, err
		}
		pre, err := putPrecondition(p.GetResourceVersion(), field+".resource_version", in, p.GetCreate())
		if err != nil {
			return nil, err
		}
		return &writeTarget{
			t: t, namespace: at.namespace, name: at.name, precondition: pre, create: p.GetCreate(),
			resourceForWrite: r, requester: requester,
		}, nil
	case *cupv1alpha1.ApplyItem_Delete:
		d := op.Delete
		at := ref{d.GetGroup(), d.GetVersion(), d.GetPlural(), d.GetNamespace(), d.GetName()}
		t, err := s.typeFor(ctx, at, auth.VerbDelete)
		if err != nil {
			return nil, itemError(fmt.Sprintf("items[%d].delete", i), err)
		}
		return &writeTarget{
			t: t, namespace: at.namespace, name: at.name, precondition: d.GetResourceVersion(),
			ignoreNotFound: d.GetIgnoreNotFound(), requester: requester,
		}, nil
	}
	// The proto's rules require one of them.
	return nil, fieldError(fmt.Sprintf("items[%d]", i), "must be a put or a delete")
}

// itemField names item i of a batch, w, in errors.
func itemField(i int, w *writeTarget) string {
	if w.resourceForWrite == nil {
		return fmt.Sprintf("items[%d].delete", i)
	}
	return fmt.Sprintf("items[%d].put", i)
}

// describeItem names w's resource: plural.group namespace/name.
func describeItem(w *writeTarget) string {
	return fmt.Sprintf("%s.%s %s/%s", w.t.Plural, w.t.Group, w.namespace, w.name)
}

// itemError says that err is about the item named prefix: an
// InvalidArgument error keeps its code and details, with its message
// prefixed; other Connect errors keep their code; the core's errors stay
// wrapped, for errors.go to map.
func itemError(prefix string, err error) error {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	out := connect.NewError(ce.Code(), fmt.Errorf("%s: %s", prefix, ce.Message()))
	for _, d := range ce.Details() {
		out.AddDetail(d)
	}
	return out
}

// applyMessage is a batch's default commit message: the count, then a
// line per item, the first maxMessageItems of them.
func applyMessage(items []*writeTarget) string {
	var b strings.Builder
	noun := "resources"
	if len(items) == 1 {
		noun = "resource"
	}
	fmt.Fprintf(&b, "Apply %d %s\n\n", len(items), noun)
	for i, w := range items {
		if i == maxMessageItems {
			fmt.Fprintf(&b, "and %d more\n", len(items)-i)
			break
		}
		verb := "put"
		switch {
		case w.resourceForWrite == nil:
			verb = "delete"
		case w.create:
			verb = "create"
		}
		fmt.Fprintf(&b, "%s %s %s/%s (%s/%s %s)\n", verb, w.t.Kind, w.namespace, w.name, w.t.Group, w.t.Version, w.t.Plural)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// applyFingerprint identifies a batch, for its idempotency key, as
// writeTarget.fingerprint identifies a put or delete: the lowercase hex
// SHA-256 of "cup.apply.v1", the revision, change set, message as
// requested and requester, then per item its operation ("put", "create"
// or "delete", with "?" appended for ignore_not_found), group, version,
// plural, namespace, name, precondition and for a put the resource's
// canonical file form — each as a big-endian uint64 length followed by its
// bytes.
func applyFingerprint(opts *writeTarget, items []*writeTarget) (string, error) {
	h := sha256.New()
	var n [8]byte
	put := func(f []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write(f)
	}
	for _, f := range []string{"cup.apply.v1", opts.revision, opts.changeSet, opts.message, opts.requester} {
		put([]byte(f))
	}
	for _, w := range items {
		op, body := "delete", []byte(nil)
		if w.ignoreNotFound {
			op += "?"
		}
		if w.resourceForWrite != nil {
			op = "put"
			if w.create {
				op = "create"
			}
			var err error
			if body, err = w.resourceForWrite.MarshalFile(); err != nil {
				return "", err
			}
		}
		for _, f := range []string{op, w.t.Group, w.t.Version, w.t.Plural, w.namespace, w.name, w.precondition} {
			put([]byte(f))
		}
		put(body)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
