// Tests of the store contract: put, get, list, update, delete and isolation.

package controllertest

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/cup-dev/cup/controller"
)

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
