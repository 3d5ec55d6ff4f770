package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/template"
	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/source/local"
)

// TestListingsShareUnchangedEntries checks that listing a commit made by a
// write re-encodes only the changed resource: the entries of unchanged
// resources are the very ones the previous commit's listing holds.
func TestListingsShareUnchangedEntries(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "repo.git")
	files := map[string][]byte{}
	for i := range 20 {
		files[fmt.Sprintf("default/item-%02d.json", i)] = fmt.Appendf(nil,
			`{"apiVersion": "t.cup.dev/v1", "kind": "Item", "metadata": {"name": "item-%02d", "labels": {"n": "%d"}}, "spec": {"n": %d}}`, i, i, i)
	}
	files["default/other-kind.json"] = []byte(`{"apiVersion": "t.cup.dev/v1", "kind": "Other", "metadata": {"name": "o"}}`)
	if _, err := gitrepo.Init(dir, "main", files, "init"); err != nil {
		t.Fatal(err)
	}
	src, err := local.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	ctrl := newCountingController(t)
	typ := &Type{Type: controller.Type{Group: "t.cup.dev", Version: "v1", Kind: "Item", Plural: "items"}, Singular: "item", Controller: ctrl}
	s, err := New(src, []*Type{typ})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	list := func() (*listing, string) {
		snap, err := src.View(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.listEntries(ctx, typ, snap, "default")
		if err != nil {
			t.Fatal(err)
		}
		return l, snap.Commit
	}
	before, c1 := list()
	if n := ctrl.decodes.Load(); n != 21 {
		t.Fatalf("the first listing decoded %d files, want all 21", n)
	}
	res, _, err := s.put(ctx, ref{"t.cup.dev", "v1", "items", "default", "item-07"},
		&putInput{resource: controller.Resource{Metadata: controller.Metadata{Labels: map[string]string{"n": "seven"}}}}, writeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctrl.decodes.Store(0)
	after, c2 := list()
	if n := ctrl.decodes.Load(); n != 1 {
		t.Fatalf("listing the new commit decoded %d files, want only the changed one", n)
	}
	if c1 == c2 || res.Commit != c2 {
		t.Fatalf("the put made no new commit: %s, %s, %v", c1, c2, res)
	}
	if len(before.items) != 20 || len(after.items) != 20 {
		t.Fatalf("listed %d and %d items, want 20", len(before.items), len(after.items))
	}
	for i := range before.items {
		b, a := before.items[i], after.items[i]
		if b.name != a.name {
			t.Fatalf("item %d: %s vs %s", i, b.name, a.name)
		}
		changed := b.name == "item-07"
		if (a == b) == changed {
			t.Errorf("%s: shared entry = %v, want %v", b.name, a == b, !changed)
		}
		if (a.version == b.version) == changed {
			t.Errorf("%s: version %s -> %s", b.name, b.resourceVersion(), a.resourceVersion())
		}
	}
	if v, _ := after.items[7].labels.Lookup("n"); v != "seven" {
		t.Fatalf("changed item's label n = %q", v)
	}
}

// countingController counts the resources its keyed listings decode.
type countingController struct {
	*template.Controller
	decodes atomic.Int64
}

func newCountingController(t *testing.T) *countingController {
	t.Helper()
	ctrl, err := template.New(template.Spec{ListTemplate: "{{ .Namespace }}/*.json", ResourceTemplate: "{{ .Namespace }}/{{ .Name }}.json"},
		template.WithCacheSize(0))
	if err != nil {
		t.Fatal(err)
	}
	return &countingController{Controller: ctrl}
}

func (c *countingController) ListKeyed(ctx context.Context, req *controller.ListRequest) ([]controller.Listed, error) {
	found, err := c.Controller.ListKeyed(ctx, req)
	for i := range found {
		decode := found[i].Decode
		found[i].Decode = func() (*controller.Resource, error) {
			c.decodes.Add(1)
			return decode()
		}
	}
	return found, err
}

// pathBlindController lists the way a KeyedLister that does not tie a
// resource to its file's path would.
type pathBlindController struct {
	*template.Controller
	listed []controller.Listed
}

func (c *pathBlindController) ListKeyed(context.Context, *controller.ListRequest) ([]controller.Listed, error) {
	return c.listed, nil
}

func TestKeyedListingLeavesOutDuplicateNamesAndBadFiles(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "repo.git")
	if _, err := gitrepo.Init(dir, "main", map[string][]byte{"x": []byte("x")}, "init"); err != nil {
		t.Fatal(err)
	}
	src, err := local.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	item := func(name string) func() (*controller.Resource, error) {
		return func() (*controller.Resource, error) {
			return &controller.Resource{APIVersion: "t.cup.dev/v1", Kind: "Item", Metadata: controller.Metadata{Namespace: "default", Name: name}}, nil
		}
	}
	ctrl := &pathBlindController{Controller: newCountingController(t).Controller, listed: []controller.Listed{
		{Origin: "default/z.json", Decode: item("twin")},
		{Origin: "default/a.json", Decode: item("twin")},
		{Origin: "default/ok.json", Decode: item("ok")},
		{Origin: "default/bad.json", Decode: func() (*controller.Resource, error) {
			return nil, fmt.Errorf("%w: default/bad.json: decoding resource: unexpected EOF", controller.ErrMalformed)
		}},
		{Origin: "default/Bad_Name.json", Decode: item("Bad_Name")},
	}}
	typ := &Type{Type: controller.Type{Group: "t.cup.dev", Version: "v1", Kind: "Item", Plural: "items"}, Singular: "item", Controller: ctrl}
	s, err := New(src, []*Type{typ})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := src.View(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.listEntries(t.Context(), typ, snap, "default")
	if err != nil {
		t.Fatalf("listEntries: %v", err)
	}
	if len(l.items) != 1 || l.items[0].name != "ok" {
		t.Errorf("listed %d items, want only ok", len(l.items))
	}
	want := []problem{
		{"default/Bad_Name.json", `holds Item "Bad_Name", which is not a valid name`},
		{"default/a.json", `holds Item "twin", which default/z.json holds too`},
		{"default/bad.json", "decoding resource: unexpected EOF"},
		{"default/z.json", `holds Item "twin", which default/a.json holds too`},
	}
	if len(l.problems) != len(want) {
		t.Fatalf("problems = %q, want %q", l.problems, want)
	}
	var size int64
	for i, p := range l.problems {
		if p.path != want[i].path || !strings.HasPrefix(p.reason, want[i].reason) {
			t.Errorf("problem %d = %q, want %q", i, p, want[i])
		}
		size += int64(len(p.path) + len(p.reason))
	}
	if l.bytes < size { // the memo counts the items (memo.hold)
		t.Errorf("listing counts %d bytes, less than its problems' %d", l.bytes, size)
	}
}

func TestValidName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"a": true, "a-b.c": true, "0": true, strings.Repeat("a", 253): true,
		"": false, "A": false, "My_Res": false, "-a": false, "a-": false, "a..b": false, ".a": false,
		"a.": false, "a_b": false, "ä": false, strings.Repeat("a", 254): false,
	} {
		if got := validName(name); got != want {
			t.Errorf("validName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestLabelSet(t *testing.T) {
	t.Parallel()
	l := newLabelSet(map[string]string{"b": "2", "a": "1", "empty": "", "long": strings.Repeat("v", 300), "nul\x00": "x\x00y"})
	for _, tc := range []struct {
		key, value string
		has        bool
	}{{"a", "1", true}, {"b", "2", true}, {"empty", "", true}, {"long", strings.Repeat("v", 300), true}, {"nul\x00", "x\x00y", true}, {"nul", "", false}, {"c", "", false}} {
		if v, ok := l.Lookup(tc.key); v != tc.value || ok != tc.has || l.Has(tc.key) != tc.has || l.Get(tc.key) != tc.value {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tc.key, v, ok, tc.value, tc.has)
		}
	}
	if newLabelSet(nil) != "" {
		t.Error("no labels should need no string")
	}
}

// TestGetDoesNotDependOnListing checks that a Get answers from the
// controller whatever is cached: a misplaced file (a.json holding b) is left
// out of the list with a problem, and b is not found, before and after a
// list alike.
func TestGetDoesNotDependOnListing(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "repo.git")
	if _, err := gitrepo.Init(dir, "main", map[string][]byte{
		"default/a.json": []byte(`{"apiVersion": "t.cup.dev/v1", "kind": "Item", "metadata": {"name": "b"}}`),
	}, "init"); err != nil {
		t.Fatal(err)
	}
	src, err := local.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	typ := &Type{Type: controller.Type{Group: "t.cup.dev", Version: "v1", Kind: "Item", Plural: "items"}, Singular: "item", Controller: newCountingController(t)}
	s, err := New(src, []*Type{typ})
	if err != nil {
		t.Fatal(err)
	}
	get := func() error {
		_, _, err := s.get(t.Context(), ref{"t.cup.dev", "v1", "items", "default", "b"}, "")
		return err
	}
	before := get()
	snap, err := src.View(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.listEntries(t.Context(), typ, snap, "default")
	if err != nil || len(l.items) != 0 || len(l.problems) != 1 || l.problems[0].path != "default/a.json" {
		t.Fatalf("listing = %v, %v; want the misplaced file left out as a problem", l, err)
	}
	after := get()
	if toConnect(before).Code() != connect.CodeNotFound || fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("Get before a list = %v, after = %v; want the same not-found answer", before, after)
	}
}

// TestEntriesRefuseWhatIsNotUTF8: a controller that does not decode with
// controller.ParseResource may hand over bytes that are not UTF-8; the
// entry refuses them rather than serve JSON that is not JSON, or replace
// them.
func TestEntriesRefuseWhatIsNotUTF8(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		edit  func(r *controller.Resource)
		field string
	}{
		{"spec", func(r *controller.Resource) { r.Spec = []byte("{\"a\":\"caf\xe9\"}") }, "spec"},
		{"label value", func(r *controller.Resource) { r.Metadata.Labels = map[string]string{"a": "caf\xe9"} }, "metadata.labels"},
		{"annotation key", func(r *controller.Resource) { r.Metadata.Annotations = map[string]string{"caf\xe9": "a"} }, "metadata.annotations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &controller.Resource{APIVersion: "a.b/v1", Kind: "K", Metadata: controller.Metadata{Namespace: "ns", Name: "n"}, Spec: []byte(`{}`)}
			tc.edit(r)
			_, err := newEntry(r)
			if !errors.Is(err, controller.ErrMalformed) || !strings.Contains(err.Error(), "ns/n: "+tc.field+" is not UTF-8") {
				t.Fatalf("newEntry = %v, want ErrMalformed naming ns/n and %s", err, tc.field)
			}
		})
	}
}

// TestInternerDropsCollectedEntries: the interner's maps keep no slot of
// an entry collected long ago. Ten rounds each intern minSweep resources,
// which nothing keeps; the maps hold at most what two sweeps allow, not
// ten rounds' worth. One resource kept throughout stays found.
func TestInternerDropsCollectedEntries(t *testing.T) {
	in := newInterner()
	typ := &Type{Type: controller.Type{Group: "t.cup.dev", Version: "v1", Kind: "Item", Plural: "items"}}
	resource := func(round, i int) *controller.Resource {
		return &controller.Resource{APIVersion: "t.cup.dev/v1", Kind: "Item",
			Metadata: controller.Metadata{Namespace: "default", Name: fmt.Sprintf("item-%d-%d", round, i)}}
	}
	kept, keptRef, err := in.entryRef(resource(-1, 0))
	if err != nil {
		t.Fatal(err)
	}
	keptKey := in.hash(keyedKey{typ: typ, namespace: "default", key: "kept"})
	in.remember(keptKey, keptRef)
	for round := range 10 {
		for i := range minSweep {
			_, ref, err := in.entryRef(resource(round, i))
			if err != nil {
				t.Fatal(err)
			}
			in.remember(in.hash(keyedKey{typ: typ, namespace: "default", key: fmt.Sprint(round, "/", i)}), ref)
		}
		runtime.GC()
	}
	in.mu.Lock()
	slots := len(in.m) + len(in.keyed)
	in.mu.Unlock()
	if slots > 4*minSweep {
		t.Errorf("the interner holds %d slots after 10 rounds of %d collected entries", slots, minSweep)
	}
	if got, _ := in.byKey(keptKey); got != kept {
		t.Error("the entry kept alive is no longer found by its key")
	}
	if e, err := in.entry(resource(-1, 0)); err != nil || e != kept {
		t.Errorf("the entry kept alive is no longer shared: %p, %p (%v)", e, kept, err)
	}
	runtime.KeepAlive(kept)
}
