// Package controllertest is the conformance suite for [controller.Controller]
// implementations, and the in-memory file system ([MemFS]) their tests use.
//
// Each implementation runs the suite from its own tests:
//
//	func TestConformance(t *testing.T) {
//		controllertest.Run(t, func(t *testing.T) controller.Controller {
//			c, err := mycontroller.New(...)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return c
//		})
//	}
//
// The suite goes through the Controller interface and its optional abilities
// only; for a [controller.KeyedLister], the list path the server uses, every
// List is checked against ListKeyed. It never assumes
// where or how resources are stored: it starts every test from an empty tree,
// writes through Put and Delete, and looks at the tree only to check that it
// did or did not change (and, for controllers that keep a file per resource
// and report problems per file, to break one resource's file). A controller that keeps every resource of a namespace
// in one file passes as well as one that keeps each resource in its own file.
// The suite uses the resource types returned by [Types] and nothing else, so a
// controller that must be configured per type can be built for them up front.
package controllertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/cup-dev/cup/controller"
)

// Types returns the resource types the suite uses, in a fresh slice:
//
//   - flags.cup.test/v1alpha1 Flag (plural "flags"),
//   - flags.cup.test/v1alpha1 Segment (plural "segments"), a second kind in
//     the same group and version,
//   - other.cup.test/v1 Flag (plural "flags"), the same kind in another group.
func Types() []controller.Type {
	return []controller.Type{
		{Group: "flags.cup.test", Version: "v1alpha1", Kind: "Flag", Plural: "flags"},
		{Group: "flags.cup.test", Version: "v1alpha1", Kind: "Segment", Plural: "segments"},
		{Group: "other.cup.test", Version: "v1", Kind: "Flag", Plural: "flags"},
	}
}

// Run runs the conformance suite as parallel subtests of t. It calls
// newController once per subtest; the controller it returns must serve every
// type in [Types].
func Run(t *testing.T, newController func(t *testing.T) controller.Controller) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, h *harness)
	}{
		{"PutGetRoundTrip", testPutGetRoundTrip},
		{"PutWithoutSpec", testPutWithoutSpec},
		{"GetNotFound", testGetNotFound},
		{"DeleteNotFound", testDeleteNotFound},
		{"ListSorted", testListSorted},
		{"ListSelector", testListSelector},
		{"ListEmptyNamespace", testListEmptyNamespace},
		{"NamespacesIsolated", testNamespacesIsolated},
		{"TypesIsolated", testTypesIsolated},
		{"Update", testUpdate},
		{"Delete", testDelete},
		{"PutUnchangedKeepsBytes", testPutUnchangedKeepsBytes},
		{"ResultsOwnedByCaller", testResultsOwnedByCaller},
		{"ConcurrentReads", testConcurrentReads},
		{"Deterministic", testDeterministic},
		{"ProblemsLeftOut", testProblemsLeftOut},
		{"KeyedLister", testKeyedLister},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mem, err := NewMemFS(nil)
			if err != nil {
				t.Fatalf("NewMemFS: %v", err)
			}
			tt.run(t, &harness{newController: newController, c: newController(t), fs: mem})
		})
	}
}

var (
	flagType    = Types()[0]
	segmentType = Types()[1]
)

type harness struct {
	newController func(t *testing.T) controller.Controller
	c             controller.Controller
	fs            *MemFS
}

func (h *harness) put(t *testing.T, typ controller.Type, r *controller.Resource) {
	t.Helper()
	if err := h.c.Put(t.Context(), &controller.PutRequest{FS: h.fs, Type: typ, Resource: r.Clone()}); err != nil {
		t.Fatalf("Put %s %s/%s: %v", typ.Kind, r.Metadata.Namespace, r.Metadata.Name, err)
	}
}

func (h *harness) get(t *testing.T, typ controller.Type, namespace, name string) (*controller.Resource, error) {
	t.Helper()
	return h.c.Get(t.Context(), &controller.GetRequest{FS: h.fs.Snapshot(), Type: typ, Namespace: namespace, Name: name})
}

func (h *harness) mustGet(t *testing.T, typ controller.Type, namespace, name string) *controller.Resource {
	t.Helper()
	r, err := h.get(t, typ, namespace, name)
	if err != nil {
		t.Fatalf("Get %s %s/%s: %v", typ.Kind, namespace, name, err)
	}
	if r == nil {
		t.Fatalf("Get %s %s/%s: nil resource and nil error", typ.Kind, namespace, name)
	}
	return r
}

// list lists through List and, when the controller is a
// [controller.KeyedLister] (whose ListKeyed is what the server lists
// through), checks that ListKeyed gives the same.
func (h *harness) list(t *testing.T, typ controller.Type, namespace string, sel controller.Selector) []*controller.Resource {
	t.Helper()
	req := &controller.ListRequest{FS: h.fs.Snapshot(), Type: typ, Namespace: namespace, Selector: sel}
	rs, err := h.c.List(t.Context(), req)
	if err != nil {
		t.Fatalf("List %s in %q: %v", typ.Kind, namespace, err)
	}
	for i, r := range rs {
		if r == nil {
			t.Fatalf("List %s in %q: item %d is nil", typ.Kind, namespace, i)
		}
	}
	if kl, ok := h.c.(controller.KeyedLister); ok {
		checkKeyed(t, kl, req, rs)
	}
	h.checkGetsAgree(t, req, rs)
	return rs
}

// checkGetsAgree fails t unless a Get of each resource List returned gives
// it, and, when List had no selector, a Get of a name it did not return
// fails with ErrNotFound: a server answers Gets from listings.
func (h *harness) checkGetsAgree(t *testing.T, req *controller.ListRequest, rs []*controller.Resource) {
	t.Helper()
	get := func(name string) (*controller.Resource, error) {
		return h.c.Get(t.Context(), &controller.GetRequest{FS: req.FS, Type: req.Type, Namespace: req.Namespace, Name: name})
	}
	for _, want := range rs {
		got, err := get(want.Metadata.Name)
		if err != nil {
			t.Errorf("Get %s %s/%s, which List returned: %v", req.Type.Kind, req.Namespace, want.Metadata.Name, err)
			continue
		}
		if d := diff(want, got); d != "" {
			t.Errorf("Get %s %s/%s differs from what List returned: %s", req.Type.Kind, req.Namespace, want.Metadata.Name, d)
		}
	}
	if req.Selector != nil {
		return
	}
	const unlisted = "not-listed-zz"
	if _, err := get(unlisted); !errors.Is(err, controller.ErrNotFound) {
		t.Errorf("Get %s %s/%s, a name List did not return: %v, want an error wrapping ErrNotFound", req.Type.Kind, req.Namespace, unlisted, err)
	}
}

func (h *harness) delete(t *testing.T, typ controller.Type, namespace, name string) error {
	t.Helper()
	return h.c.Delete(t.Context(), &controller.DeleteRequest{FS: h.fs, Type: typ, Namespace: namespace, Name: name})
}

// newResource builds a resource of typ. spec is JSON text or "".
func newResource(typ controller.Type, namespace, name string, labels map[string]string, spec string) *controller.Resource {
	r := &controller.Resource{
		APIVersion: typ.APIVersion(),
		Kind:       typ.Kind,
		Metadata:   controller.Metadata{Namespace: namespace, Name: name, Labels: labels},
	}
	if spec != "" {
		r.Spec = json.RawMessage(spec)
	}
	return r
}

// diff describes how got differs from want, or returns "" when they hold the
// same content. Labels and annotations compare as maps (nil equals empty);
// specs compare as JSON values (nil equals {}), so formatting and key order do
// not count. ResourceVersion must be empty: it is never stored.
func diff(want, got *controller.Resource) string {
	var d []string
	if got.APIVersion != want.APIVersion {
		d = append(d, fmt.Sprintf("apiVersion = %q, want %q", got.APIVersion, want.APIVersion))
	}
	if got.Kind != want.Kind {
		d = append(d, fmt.Sprintf("kind = %q, want %q", got.Kind, want.Kind))
	}
	if got.Metadata.Namespace != want.Metadata.Namespace {
		d = append(d, fmt.Sprintf("namespace = %q, want %q", got.Metadata.Namespace, want.Metadata.Namespace))
	}
	if got.Metadata.Name != want.Metadata.Name {
		d = append(d, fmt.Sprintf("name = %q, want %q", got.Metadata.Name, want.Metadata.Name))
	}
	if !maps.Equal(got.Metadata.Labels, want.Metadata.Labels) {
		d = append(d, fmt.Sprintf("labels = %v, want %v", got.Metadata.Labels, want.Metadata.Labels))
	}
	if !maps.Equal(got.Metadata.Annotations, want.Metadata.Annotations) {
		d = append(d, fmt.Sprintf("annotations = %v, want %v", got.Metadata.Annotations, want.Metadata.Annotations))
	}
	if got.Metadata.ResourceVersion != "" {
		d = append(d, fmt.Sprintf("resourceVersion = %q, want it empty (controllers never store it)", got.Metadata.ResourceVersion))
	}
	gs, gerr := specValue(got.Spec)
	ws, werr := specValue(want.Spec)
	switch {
	case gerr != nil:
		d = append(d, fmt.Sprintf("spec %s: %v", got.Spec, gerr))
	case werr != nil:
		d = append(d, fmt.Sprintf("wanted spec %s: %v", want.Spec, werr))
	case !reflect.DeepEqual(gs, ws):
		d = append(d, fmt.Sprintf("spec = %s, want %s", got.Spec, want.Spec))
	}
	if len(d) == 0 {
		return ""
	}
	return fmt.Sprint(d)
}

func specValue(spec json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(spec)) == 0 {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(spec, &v); err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return nil, nil
	}
	return v, nil
}

func names(rs []*controller.Resource) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Metadata.Name
	}
	return out
}

// labelSelector matches resources having every label in it.
type labelSelector map[string]string

func (s labelSelector) Matches(labels map[string]string) bool {
	for k, v := range s {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// parsed adapts a Kubernetes label selector, as the server parses them from
// requests, to controller.Selector.
type parsed struct{ labels.Selector }

func (p parsed) Matches(l map[string]string) bool { return p.Selector.Matches(labels.Set(l)) }

func mustParse(t *testing.T, s string) controller.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatalf("labels.Parse(%q): %v", s, err)
	}
	return parsed{sel}
}

// selectorFunc adapts a function to controller.Selector.
type selectorFunc func(map[string]string) bool

func (f selectorFunc) Matches(labels map[string]string) bool { return f(labels) }
