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
	"slices"
	"sync"
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
	return rs
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

func testPutGetRoundTrip(t *testing.T, h *harness) {
	want := newResource(flagType, "default", "new-login.v2", map[string]string{
		"team": "identity",
		"tier": "1",
	}, `{
		"enabled": true,
		"description": "multi\nline \"quoted\" <&> ünïcödé ✓",
		"variants": [{"key": "on", "weight": 75.5}, {"key": "off", "weight": 24.5}],
		"rollout": {"segments": ["beta", "internal"], "match": {"country": "NL", "empty": {}}, "fallback": null},
		"count": 7,
		"yes": "yes"
	}`)
	want.Metadata.Annotations = map[string]string{"cup.dev/owner": "platform@example.com", "note": "", "multi": "a\nb"}
	in := want.Clone()
	in.Metadata.ResourceVersion = "put-ignores-this"
	inBefore := in.Clone()

	if err := h.c.Put(t.Context(), &controller.PutRequest{FS: h.fs, Type: flagType, Resource: in}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if !reflect.DeepEqual(in, inBefore) {
		t.Errorf("Put changed its input resource:\n got %+v\nwant %+v", in, inBefore)
	}
	if len(h.fs.Files()) == 0 {
		t.Errorf("Put wrote nothing to the tree")
	}

	got := h.mustGet(t, flagType, "default", "new-login.v2")
	if d := diff(want, got); d != "" {
		t.Errorf("Get after Put: %s", d)
	}
	// Reads see earlier writes through the WriteFS itself, too.
	got, err := h.c.Get(t.Context(), &controller.GetRequest{FS: h.fs, Type: flagType, Namespace: "default", Name: "new-login.v2"})
	if err != nil {
		t.Fatalf("Get through the WriteFS: %v", err)
	}
	if d := diff(want, got); d != "" {
		t.Errorf("Get through the WriteFS: %s", d)
	}
	list := h.list(t, flagType, "default", nil)
	if len(list) != 1 {
		t.Fatalf("List after Put = %v, want [new-login.v2]", names(list))
	}
	if d := diff(want, list[0]); d != "" {
		t.Errorf("List after Put: %s", d)
	}
}

func testPutWithoutSpec(t *testing.T, h *harness) {
	want := newResource(segmentType, "default", "bare", nil, "")
	h.put(t, segmentType, want)
	if d := diff(want, h.mustGet(t, segmentType, "default", "bare")); d != "" {
		t.Errorf("Get: %s", d)
	}
}

func testGetNotFound(t *testing.T, h *harness) {
	check := func(t *testing.T, typ controller.Type, namespace, name string) {
		t.Helper()
		r, err := h.get(t, typ, namespace, name)
		if !errors.Is(err, controller.ErrNotFound) {
			t.Errorf("Get %s %s/%s = %v, %v; want an error wrapping ErrNotFound", typ.Kind, namespace, name, r, err)
		}
	}
	check(t, flagType, "default", "missing") // empty tree
	h.put(t, flagType, newResource(flagType, "default", "present", nil, `{"a":1}`))
	check(t, flagType, "default", "missing")    // populated namespace
	check(t, flagType, "other", "present")      // another namespace
	check(t, segmentType, "default", "present") // another kind
	check(t, Types()[2], "default", "present")  // same kind, another group
}

func testDeleteNotFound(t *testing.T, h *harness) {
	if err := h.delete(t, flagType, "default", "missing"); !errors.Is(err, controller.ErrNotFound) {
		t.Errorf("Delete in an empty tree = %v, want an error wrapping ErrNotFound", err)
	}
	h.put(t, flagType, newResource(flagType, "default", "present", nil, `{"a":1}`))
	before := h.fs.Files()
	for _, tc := range []struct {
		typ             controller.Type
		namespace, name string
	}{
		{flagType, "default", "missing"},
		{flagType, "other", "present"},
		{segmentType, "default", "present"},
	} {
		if err := h.delete(t, tc.typ, tc.namespace, tc.name); !errors.Is(err, controller.ErrNotFound) {
			t.Errorf("Delete %s %s/%s = %v, want an error wrapping ErrNotFound", tc.typ.Kind, tc.namespace, tc.name, err)
		}
	}
	if !maps.EqualFunc(before, h.fs.Files(), bytes.Equal) {
		t.Errorf("Delete of missing resources changed the tree")
	}
}

func testListSorted(t *testing.T, h *harness) {
	want := map[string]*controller.Resource{}
	for i, name := range []string{"delta", "alpha", "charlie", "bravo-2", "bravo", "a", "zulu.1"} {
		r := newResource(flagType, "default", name, map[string]string{"n": fmt.Sprint(i)}, fmt.Sprintf(`{"i":%d}`, i))
		want[name] = r
		h.put(t, flagType, r)
	}
	got := h.list(t, flagType, "default", nil)
	if wantNames := slices.Sorted(maps.Keys(want)); !slices.Equal(names(got), wantNames) {
		t.Fatalf("List = %v, want %v (sorted by name)", names(got), wantNames)
	}
	for _, r := range got {
		if d := diff(want[r.Metadata.Name], r); d != "" {
			t.Errorf("List item %s: %s", r.Metadata.Name, d)
		}
	}
}

func testListSelector(t *testing.T, h *harness) {
	for name, labels := range map[string]map[string]string{
		"a": {"env": "prod", "team": "x"},
		"b": {"env": "dev", "team": "x"},
		"c": {"env": "prod"},
		"d": nil,
	} {
		h.put(t, flagType, newResource(flagType, "default", name, labels, ""))
	}
	tests := []struct {
		name string
		sel  controller.Selector
		want []string
	}{
		{"nil", nil, []string{"a", "b", "c", "d"}},
		{"everything", labelSelector{}, []string{"a", "b", "c", "d"}},
		{"one label", labelSelector{"env": "prod"}, []string{"a", "c"}},
		{"two labels", labelSelector{"env": "prod", "team": "x"}, []string{"a"}},
		{"no match", labelSelector{"env": "staging"}, nil},
		{"without label", selectorFunc(func(l map[string]string) bool { _, ok := l["team"]; return !ok }), []string{"c", "d"}},
		{"parsed equality", mustParse(t, "env=prod,team=x"), []string{"a"}},
		{"parsed set", mustParse(t, "env in (dev,staging)"), []string{"b"}},
		{"parsed inequality", mustParse(t, "env!=prod"), []string{"b", "d"}},
		{"parsed absence", mustParse(t, "!team"), []string{"c", "d"}},
		{"parsed existence", mustParse(t, "team,env notin (dev)"), []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := names(h.list(t, flagType, "default", tt.sel)); !slices.Equal(got, tt.want) {
				t.Errorf("List = %v, want %v", got, tt.want)
			}
		})
	}
}

func testListEmptyNamespace(t *testing.T, h *harness) {
	if got := h.list(t, flagType, "default", nil); len(got) != 0 {
		t.Errorf("List in an empty tree = %v, want none", names(got))
	}
	h.put(t, flagType, newResource(flagType, "other", "x", nil, ""))
	h.put(t, segmentType, newResource(segmentType, "default", "y", nil, ""))
	if got := h.list(t, flagType, "default", nil); len(got) != 0 {
		t.Errorf("List of a namespace holding only other kinds = %v, want none", names(got))
	}
	if got := h.list(t, flagType, "nothing-here", nil); len(got) != 0 {
		t.Errorf("List of a missing namespace = %v, want none", names(got))
	}
}

func testNamespacesIsolated(t *testing.T, h *harness) {
	a := newResource(flagType, "team-a", "shared", map[string]string{"owner": "a"}, `{"from":"a"}`)
	b := newResource(flagType, "team-b", "shared", map[string]string{"owner": "b"}, `{"from":"b"}`)
	h.put(t, flagType, a)
	h.put(t, flagType, b)
	h.put(t, flagType, newResource(flagType, "team-b", "only-b", nil, ""))

	if d := diff(a, h.mustGet(t, flagType, "team-a", "shared")); d != "" {
		t.Errorf("Get team-a/shared: %s", d)
	}
	if d := diff(b, h.mustGet(t, flagType, "team-b", "shared")); d != "" {
		t.Errorf("Get team-b/shared: %s", d)
	}
	if got := names(h.list(t, flagType, "team-a", nil)); !slices.Equal(got, []string{"shared"}) {
		t.Errorf("List team-a = %v, want [shared]", got)
	}
	if got := names(h.list(t, flagType, "team-b", nil)); !slices.Equal(got, []string{"only-b", "shared"}) {
		t.Errorf("List team-b = %v, want [only-b shared]", got)
	}
	if err := h.delete(t, flagType, "team-a", "shared"); err != nil {
		t.Fatalf("Delete team-a/shared: %v", err)
	}
	if d := diff(b, h.mustGet(t, flagType, "team-b", "shared")); d != "" {
		t.Errorf("Get team-b/shared after deleting team-a/shared: %s", d)
	}
}

func testTypesIsolated(t *testing.T, h *harness) {
	want := map[controller.Type]*controller.Resource{}
	for _, typ := range Types() {
		r := newResource(typ, "default", "shared", map[string]string{"kind": typ.Kind}, fmt.Sprintf(`{"type":%q}`, typ.APIVersion()+"/"+typ.Kind))
		want[typ] = r
		h.put(t, typ, r)
	}
	h.put(t, segmentType, newResource(segmentType, "default", "segment-only", nil, ""))
	for _, typ := range Types() {
		if d := diff(want[typ], h.mustGet(t, typ, "default", "shared")); d != "" {
			t.Errorf("Get %s %s: %s", typ.APIVersion(), typ.Kind, d)
		}
		list := h.list(t, typ, "default", nil)
		wantNames := []string{"shared"}
		if typ == segmentType {
			wantNames = []string{"segment-only", "shared"}
		}
		if !slices.Equal(names(list), wantNames) {
			t.Errorf("List %s %s = %v, want %v", typ.APIVersion(), typ.Kind, names(list), wantNames)
		}
		for _, r := range list {
			if r.APIVersion != typ.APIVersion() || r.Kind != typ.Kind {
				t.Errorf("List %s %s returned a %s %s", typ.APIVersion(), typ.Kind, r.APIVersion, r.Kind)
			}
		}
	}
	if err := h.delete(t, flagType, "default", "shared"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	for _, typ := range Types()[1:] {
		if d := diff(want[typ], h.mustGet(t, typ, "default", "shared")); d != "" {
			t.Errorf("Get %s %s after deleting the %s %s: %s", typ.APIVersion(), typ.Kind, flagType.APIVersion(), flagType.Kind, d)
		}
	}
}

func testUpdate(t *testing.T, h *harness) {
	h.put(t, flagType, newResource(flagType, "default", "f", map[string]string{"old": "1"}, `{"x":1,"nested":{"keep":true}}`))
	h.put(t, flagType, newResource(flagType, "default", "other", nil, ""))
	before := h.fs.Files()
	v2 := newResource(flagType, "default", "f", map[string]string{"new": "2"}, `{"y":[1,2,3]}`)
	v2.Metadata.Annotations = map[string]string{"changed": "yes"}
	h.put(t, flagType, v2)
	if maps.EqualFunc(before, h.fs.Files(), bytes.Equal) {
		t.Errorf("Put of changed content left the tree unchanged")
	}
	if d := diff(v2, h.mustGet(t, flagType, "default", "f")); d != "" {
		t.Errorf("Get after update: %s", d)
	}
	list := h.list(t, flagType, "default", nil)
	if !slices.Equal(names(list), []string{"f", "other"}) {
		t.Fatalf("List after update = %v, want [f other]", names(list))
	}
	if d := diff(v2, list[0]); d != "" {
		t.Errorf("List after update: %s", d)
	}
}

func testDelete(t *testing.T, h *harness) {
	a := newResource(flagType, "default", "a", nil, `{"a":true}`)
	b := newResource(flagType, "default", "b", nil, `{"b":true}`)
	h.put(t, flagType, a)
	h.put(t, flagType, b)
	if err := h.delete(t, flagType, "default", "a"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if r, err := h.get(t, flagType, "default", "a"); !errors.Is(err, controller.ErrNotFound) {
		t.Errorf("Get after Delete = %v, %v; want an error wrapping ErrNotFound", r, err)
	}
	if got := names(h.list(t, flagType, "default", nil)); !slices.Equal(got, []string{"b"}) {
		t.Errorf("List after Delete = %v, want [b]", got)
	}
	if d := diff(b, h.mustGet(t, flagType, "default", "b")); d != "" {
		t.Errorf("Get of the other resource after Delete: %s", d)
	}
	if err := h.delete(t, flagType, "default", "a"); !errors.Is(err, controller.ErrNotFound) {
		t.Errorf("second Delete = %v, want an error wrapping ErrNotFound", err)
	}
	if err := h.delete(t, flagType, "default", "b"); err != nil {
		t.Fatalf("Delete of the last resource: %v", err)
	}
	if got := h.list(t, flagType, "default", nil); len(got) != 0 {
		t.Errorf("List after deleting everything = %v, want none", names(got))
	}
	// Deleted resources can be created again.
	h.put(t, flagType, a)
	if d := diff(a, h.mustGet(t, flagType, "default", "a")); d != "" {
		t.Errorf("Get after re-creating: %s", d)
	}
}

func testPutUnchangedKeepsBytes(t *testing.T, h *harness) {
	r := newResource(flagType, "default", "f", map[string]string{"b": "2", "a": "1"}, `{"z":1,"a":{"c":[true,false],"b":"x"}}`)
	r.Metadata.Annotations = map[string]string{"note": "kept"}
	h.put(t, flagType, r)
	h.put(t, flagType, newResource(flagType, "default", "g", nil, `{"other":1}`))
	before := h.fs.Files()

	h.put(t, flagType, r)
	if after := h.fs.Files(); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Errorf("Put of unchanged content changed the tree:\nbefore %q\n after %q", before, after)
	}
	withVersion := r.Clone()
	withVersion.Metadata.ResourceVersion = "some-version"
	h.put(t, flagType, withVersion)
	if after := h.fs.Files(); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Errorf("Put of unchanged content with a resourceVersion changed the tree:\nbefore %q\n after %q", before, after)
	}
	// The value read back is also unchanged content.
	h.put(t, flagType, h.mustGet(t, flagType, "default", "f"))
	if after := h.fs.Files(); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Errorf("Put of the resource as read changed the tree:\nbefore %q\n after %q", before, after)
	}
}

func testResultsOwnedByCaller(t *testing.T, h *harness) {
	want := newResource(flagType, "default", "f", map[string]string{"a": "1"}, `{"x":"y"}`)
	want.Metadata.Annotations = map[string]string{"n": "1"}
	h.put(t, flagType, want)
	mutate := func(r *controller.Resource) {
		r.Metadata.Labels["a"] = "mutated"
		r.Metadata.Labels["added"] = "x"
		r.Metadata.Annotations["n"] = "mutated"
		for i := range r.Spec {
			r.Spec[i] = ' '
		}
		r.Metadata.Name = "mutated"
	}
	for range 2 {
		mutate(h.mustGet(t, flagType, "default", "f"))
		for _, r := range h.list(t, flagType, "default", nil) {
			mutate(r)
		}
	}
	if d := diff(want, h.mustGet(t, flagType, "default", "f")); d != "" {
		t.Errorf("Get after mutating earlier results: %s", d)
	}
	list := h.list(t, flagType, "default", nil)
	if len(list) != 1 {
		t.Fatalf("List after mutating earlier results = %v, want [f]", names(list))
	}
	if d := diff(want, list[0]); d != "" {
		t.Errorf("List after mutating earlier results: %s", d)
	}
}

func testConcurrentReads(t *testing.T, h *harness) {
	for _, ns := range []string{"a", "b"} {
		for i := range 25 {
			h.put(t, flagType, newResource(flagType, ns, fmt.Sprintf("flag-%02d", i),
				map[string]string{"parity": fmt.Sprint(i % 2)}, fmt.Sprintf(`{"ns":%q,"i":%d}`, ns, i)))
		}
	}
	snap := h.fs.Snapshot()
	ctx := t.Context()
	read := func() (any, error) {
		var out []any
		for _, ns := range []string{"a", "b"} {
			for _, sel := range []controller.Selector{nil, labelSelector{"parity": "1"}} {
				rs, err := h.c.List(ctx, &controller.ListRequest{FS: snap, Type: flagType, Namespace: ns, Selector: sel})
				if err != nil {
					return nil, fmt.Errorf("List %s: %w", ns, err)
				}
				out = append(out, rs)
			}
			for _, name := range []string{"flag-00", "flag-13", "flag-24"} {
				r, err := h.c.Get(ctx, &controller.GetRequest{FS: snap, Type: flagType, Namespace: ns, Name: name})
				if err != nil {
					return nil, fmt.Errorf("Get %s/%s: %w", ns, name, err)
				}
				out = append(out, r)
			}
		}
		return out, nil
	}
	want, err := read()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(want.([]any)[0].([]*controller.Resource)); n != 25 {
		t.Fatalf("List = %d resources, want 25", n)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			got, err := read()
			switch {
			case err != nil:
				t.Errorf("goroutine %d: %v", g, err)
			case !reflect.DeepEqual(got, want):
				t.Errorf("goroutine %d read different results than a sequential read", g)
			}
		})
	}
	wg.Wait()
}

func testDeterministic(t *testing.T, h *harness) {
	for i, name := range []string{"m", "c", "x", "a"} {
		r := newResource(flagType, "default", name, map[string]string{"i": fmt.Sprint(i)}, fmt.Sprintf(`{"b":%d,"a":[%d,"s"]}`, i, i))
		r.Metadata.Annotations = map[string]string{"z": "1", "y": "2"}
		h.put(t, flagType, r)
	}
	first := h.list(t, flagType, "default", nil)
	second := h.list(t, flagType, "default", nil)
	if !reflect.DeepEqual(first, second) {
		t.Errorf("two Lists of the same tree differ:\n%+v\n%+v", first, second)
	}
	g1 := h.mustGet(t, flagType, "default", "x")
	g2 := h.mustGet(t, flagType, "default", "x")
	if !reflect.DeepEqual(g1, g2) {
		t.Errorf("two Gets of the same tree differ:\n%+v\n%+v", g1, g2)
	}
	// A second controller instance reads the same tree the same way.
	other := h.newController(t)
	third, err := other.List(t.Context(), &controller.ListRequest{FS: h.fs.Snapshot(), Type: flagType, Namespace: "default"})
	if err != nil {
		t.Fatalf("List with a second controller: %v", err)
	}
	if !reflect.DeepEqual(first, third) {
		t.Errorf("two controllers list the same tree differently:\n%+v\n%+v", first, third)
	}
}

// testProblemsLeftOut checks, for a controller that keeps each resource in
// a file of its own and can report problems (a [controller.ProblemLister] or
// [controller.KeyedLister]), that a file which does not decode, or holds
// another resource than the one whose file it is, is a problem of that file
// alone: Get of the resource it should hold is ErrMalformed, List fails with
// ErrMalformed, ListProblems and ListKeyed list the others and report it.
// Others skip the test.
func testProblemsLeftOut(t *testing.T, h *harness) {
	pl, isPL := h.c.(controller.ProblemLister)
	kl, isKL := h.c.(controller.KeyedLister)
	fp, _ := h.c.(controller.FilePerResource)
	if (!isPL && !isKL) || fp == nil || !fp.FilePerResource() {
		t.Skip("the controller reports no problems per file")
	}
	for _, name := range []string{"a", "b", "c"} {
		h.put(t, flagType, newResource(flagType, "default", name, nil, `{"n":"`+name+`"}`))
	}
	files := h.fs.Files()
	h.put(t, segmentType, newResource(segmentType, "default", "b", nil, ""))
	h.put(t, flagType, newResource(flagType, "other", "b", nil, ""))
	before := h.fs.Files()
	fileOf := func(name string) string {
		t.Helper()
		var found string
		for p, data := range files {
			if bytes.Contains(data, []byte(`"`+name+`"`)) {
				if found != "" {
					t.Skipf("both %s and %s mention %q", found, p, name)
				}
				found = p
			}
		}
		if found == "" {
			t.Skipf("no file holds %q", name)
		}
		return found
	}
	bFile := fileOf("b")
	for _, tc := range []struct {
		name    string
		content []byte
	}{
		{"does not decode", []byte("{\n")},
		{"holds another resource", before[fileOf("a")]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := h.fs.WriteFile(bFile, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.fs.WriteFile(bFile, before[bFile], 0o644) })
			malformed := func(op string, err error) {
				t.Helper()
				if !errors.Is(err, controller.ErrMalformed) {
					t.Errorf("%s = %v; want an error wrapping ErrMalformed", op, err)
				}
			}
			_, err := h.get(t, flagType, "default", "b")
			malformed("Get of the resource whose file is broken", err)
			h.mustGet(t, flagType, "default", "a")
			h.mustGet(t, segmentType, "default", "b")
			h.mustGet(t, flagType, "other", "b")
			req := &controller.ListRequest{FS: h.fs.Snapshot(), Type: flagType, Namespace: "default"}
			_, err = h.c.List(t.Context(), req)
			malformed("List", err)
			if isPL {
				rs, problems, err := pl.ListProblems(t.Context(), req)
				if err != nil {
					t.Fatalf("ListProblems: %v", err)
				}
				if got := names(rs); !slices.Equal(got, []string{"a", "c"}) {
					t.Errorf("ListProblems lists %v, want [a c]", got)
				}
				if len(problems) != 1 || problems[0].Origin != bFile {
					t.Fatalf("ListProblems reports %v, want one problem of %s", problems, bFile)
				}
				malformed("the problem", problems[0].Err)
			}
			if isKL {
				found, err := kl.ListKeyed(t.Context(), req)
				if err != nil {
					t.Fatalf("ListKeyed: %v", err)
				}
				var got []string
				var bad int
				for _, f := range found {
					r, err := f.Decode()
					switch {
					case err != nil:
						malformed("Decode of "+f.Origin, err)
						bad++
					case r != nil:
						got = append(got, r.Metadata.Name)
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, []string{"a", "c"}) || bad != 1 {
					t.Errorf("ListKeyed decodes %v and %d problems, want [a c] and 1", got, bad)
				}
			}
			// Other namespaces do not care. (Other kinds may: a file that
			// does not decode is a problem of every kind sharing its directory.)
			if got := names(h.list(t, flagType, "other", nil)); !slices.Equal(got, []string{"b"}) {
				t.Errorf("List of namespace other = %v, want [b]", got)
			}
		})
	}
}
