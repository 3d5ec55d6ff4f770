package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/cup-dev/cup/controller"
)

// Change is one output to write (Resource set) or delete (Resource nil).
type Change struct {
	Type            controller.Type
	Namespace, Name string
	Resource        *controller.Resource
	// Orphaned, on a delete, is the commit an orphaned output was
	// orphaned at (its cup.dev/orphaned annotation): the delete is garbage
	// collection.
	Orphaned string
}

// outcome is what a reconcile of one primary at one commit comes to: a
// pure function of the commit and the reconciler, so every replica and
// every Status call derives the same.
type outcome struct {
	commit    string
	changes   []Change
	conflicts []string
	// blocked are the outputs of the conflicts: a change of one of them
	// wakes the primary.
	blocked []ref
	// desired are the outputs the primary should have, as they would be
	// written, in a stable order.
	desired []Change
	// err is the transform's failure; invalid says it blamed its inputs.
	err      error
	invalid  bool
	panicked bool
	resp     *Response
}

// errPanic marks a transform that panicked.
var errPanic = errors.New("the transform panicked")

// evaluate reconciles primary k of r in view v without writing: the
// outputs to write and delete, the conflicts, or the transform's error.
// same remembers the outputs found up to date (nil: none).
func evaluate(ctx context.Context, v *view, r *Reconciler, ix *reconcilerIndex, k key, same *sameSpecs, changeSet string) *outcome {
	out := &outcome{commit: v.commit}
	primary := v.get(r.For, k)
	owner := r.Name + "/" + k.Namespace + "/" + k.Name
	desired := map[ref]*controller.Resource{}
	if primary != nil {
		req := &Request{Reconciler: r.Name, Revision: v.commit, ChangeSet: changeSet, Primary: primary.Clone(),
			Inputs: []*controller.Resource{}, Outputs: []*controller.Resource{}}
		var bound []string
		seen := map[ref]bool{}
		type typed struct {
			t controller.Type
			r *controller.Resource
		}
		var inputs []typed
		for i, w := range r.Watches {
			for _, s := range v.inputsOf(r, ix, i, k) {
				rf := ref{typeKey(w.Type), key{s.Metadata.Namespace, s.Metadata.Name}}
				if !seen[rf] {
					seen[rf] = true
					inputs = append(inputs, typed{w.Type, s})
				}
			}
		}
		slices.SortFunc(inputs, func(a, b typed) int { return compareResources(a.t, a.r, b.t, b.r) })
		for _, in := range inputs {
			req.Inputs = append(req.Inputs, in.r.Clone())
			bound = append(bound, refString(in.t, in.r))
		}
		for _, o := range ix.owned[k] {
			req.Outputs = append(req.Outputs, o.Res.Clone())
		}
		resp, err := callTransform(ctx, r.Transform, req)
		if err != nil {
			out.err = err
			out.invalid = errors.Is(err, ErrInvalidInput)
			out.panicked = errors.Is(err, errPanic)
			return out
		}
		out.resp = resp
		boundJSON, _ := json.Marshal(bound)
		if bound == nil {
			boundJSON = []byte("[]")
		}
		for i, o := range resp.Outputs {
			t, err := r.outputType(o)
			if err != nil {
				out.err = fmt.Errorf("outputs[%d]: %w", i, err)
				return out
			}
			o = o.Clone()
			if o.Metadata.Namespace == "" {
				o.Metadata.Namespace = k.Namespace
			}
			o.Metadata.ResourceVersion = ""
			if o.Metadata.Annotations == nil {
				o.Metadata.Annotations = map[string]string{}
			}
			o.Metadata.Annotations[AnnotationOwner] = owner
			if _, orphaned := o.Metadata.Annotations[AnnotationOrphaned]; !orphaned {
				// An orphaned output is kept as it was, the inputs it was
				// computed from included.
				o.Metadata.Annotations[AnnotationBoundReferences] = string(boundJSON)
			}
			rf := ref{typeKey(t), key{o.Metadata.Namespace, o.Metadata.Name}}
			if o.Metadata.Name == "" {
				out.err = fmt.Errorf("outputs[%d]: metadata.name is required", i)
				return out
			}
			if _, dup := desired[rf]; dup {
				out.err = fmt.Errorf("outputs[%d]: %s %s answered twice", i, t.Kind, rf.key)
				return out
			}
			desired[rf] = o
		}
	}
	// Writes, in a stable order.
	refs := slices.SortedFunc(maps.Keys(desired), compareRefs)
	for _, rf := range refs {
		want := desired[rf]
		out.desired = append(out.desired, Change{Type: r.outputTypeByKey(rf.Type), Namespace: rf.Namespace, Name: rf.Name, Resource: want})
		t := r.outputTypeByKey(rf.Type)
		have := v.get(t, rf.key)
		if have != nil && have.Metadata.Annotations[AnnotationOwner] != owner {
			who := have.Metadata.Annotations[AnnotationOwner]
			if who == "" {
				who = "no reconciler (written by hand)"
			} else {
				who = "reconciler " + strings.SplitN(who, "/", 2)[0]
			}
			out.conflicts = append(out.conflicts, fmt.Sprintf("%s %s is owned by %s", t.Kind, rf.key, who))
			out.blocked = append(out.blocked, rf)
			continue
		}
		if have != nil && same.sameContent(have, want) {
			continue
		}
		out.changes = append(out.changes, Change{Type: t, Namespace: rf.Namespace, Name: rf.Name, Resource: want})
	}
	// The primary's own spec, when the transform changes it.
	if primary != nil && out.resp != nil && out.resp.PrimarySpec != nil && !jsonEqual(primary.Spec, out.resp.PrimarySpec) {
		if !r.UpdatesPrimary {
			out.err = errors.New("the transform changed the primary's spec, which the reconciler does not declare (updatesPrimary)")
			out.changes = nil
			return out
		}
		p := primary.Clone()
		p.Spec = slices.Clone(out.resp.PrimarySpec)
		p.Metadata.ResourceVersion = ""
		out.changes = append(out.changes, Change{Type: r.For, Namespace: k.Namespace, Name: k.Name, Resource: p})
	}
	// Deletes: the primary's earlier outputs the run did not produce.
	for _, o := range ix.owned[k] {
		rf := ref{typeKey(o.Type), key{o.Res.Metadata.Namespace, o.Res.Metadata.Name}}
		if _, ok := desired[rf]; !ok {
			out.changes = append(out.changes, Change{Type: o.Type, Namespace: rf.Namespace, Name: rf.Name,
				Orphaned: o.Res.Metadata.Annotations[AnnotationOrphaned]})
		}
	}
	return out
}

// jsonEqual reports whether two JSON documents hold the same value,
// numbers compared as written.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// callTransform runs the transform, turning a panic into an error.
func callTransform(ctx context.Context, t Transform, req *Request) (resp *Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("%w: %v", errPanic, p)
		}
	}()
	resp, err = t.Reconcile(ctx, req)
	if err == nil && resp == nil {
		resp = &Response{}
	}
	return resp, err
}

// outputType returns the declared output type of o, refusing others (as
// COSI refuses writes outside a controller's outputs).
func (r *Reconciler) outputType(o *controller.Resource) (controller.Type, error) {
	if o == nil {
		return controller.Type{}, errors.New("null")
	}
	for _, out := range r.Outputs {
		if out.Type.APIVersion() == o.APIVersion && out.Type.Kind == o.Kind {
			return out.Type, nil
		}
	}
	return controller.Type{}, fmt.Errorf("%s %s is not among the reconciler's declared outputs", o.APIVersion, o.Kind)
}

func (r *Reconciler) outputTypeByKey(t controller.Type) controller.Type {
	for _, out := range r.Outputs {
		if typeKey(out.Type) == t {
			return out.Type
		}
	}
	return t
}

func compareRefs(a, b ref) int {
	for _, c := range [][2]string{{a.Type.Group, b.Type.Group}, {a.Type.Version, b.Type.Version}, {a.Type.Plural, b.Type.Plural}, {a.Namespace, b.Namespace}, {a.Name, b.Name}} {
		if n := strings.Compare(c[0], c[1]); n != 0 {
			return n
		}
	}
	return 0
}
