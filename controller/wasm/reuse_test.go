package wasm_test

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"maps"
	"testing"
	"testing/fstest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/wasm"
)

// idFS is a tree that names its files' content, as a Git tree does.
type idFS struct{ fstest.MapFS }

func (f idFS) ContentID(name string) (string, error) {
	data, err := fs.ReadFile(f.MapFS, name)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return string(sum[:]), nil
}

// conformFile is the file of the conform module's flag ns/name.
func conformFile(ns, name string) string {
	return "flags.cup.dev/v1alpha1/flags/" + ns + "/" + name + ".json"
}

func conformFlag(ns, name, owner string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(`{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Flag","metadata":{"namespace":"` + ns +
		`","name":"` + name + `"},"spec":{"owner":"` + owner + `"}}`)}
}

// tree returns a copy of base with changes applied (a nil file removes).
func tree(base fstest.MapFS, changes map[string]*fstest.MapFile) idFS {
	t := maps.Clone(base)
	for p, f := range changes {
		if f == nil {
			delete(t, p)
		} else {
			t[p] = f
		}
	}
	return idFS{t}
}

// reuseFixture is the conform module on a runtime of its own, whose runs
// and reuses it counts.
type reuseFixture struct {
	c   *wasm.Controller
	reg *prometheus.Registry
}

func newReuseFixture(t *testing.T, opts ...wasm.RuntimeOption) *reuseFixture {
	t.Helper()
	reg := prometheus.NewRegistry()
	rt := newRuntime(t, append([]wasm.RuntimeOption{wasm.WithMetrics(reg)}, opts...)...)
	return &reuseFixture{c: newController(t, rt, "conform", nil), reg: reg}
}

// counts returns the module's runs and the reused answers of verb.
func (f *reuseFixture) counts(t *testing.T, verb string) (runs, reused int) {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			ok := false
			for _, l := range m.GetLabel() {
				ok = ok || l.GetName() == "verb" && l.GetValue() == verb
			}
			if !ok {
				continue
			}
			switch mf.GetName() {
			case "cup_wasm_calls_total":
				runs += int(m.GetCounter().GetValue())
			case "cup_wasm_reused_total":
				reused += int(m.GetCounter().GetValue())
			}
		}
	}
	return runs, reused
}

// get gets ns/name of tree and checks the owner it holds ("" for not
// found).
func (f *reuseFixture) get(t *testing.T, tree fs.FS, ns, name, owner string) {
	t.Helper()
	r, err := f.c.Get(t.Context(), &controller.GetRequest{FS: tree, Type: flagType, Namespace: ns, Name: name})
	switch {
	case owner == "" && !errors.Is(err, controller.ErrNotFound):
		t.Errorf("Get %s/%s = %v, %v; want not found", ns, name, r, err)
	case owner == "":
	case err != nil:
		t.Errorf("Get %s/%s: %v", ns, name, err)
	case string(r.Spec) != `{"owner":"`+owner+`"}`:
		t.Errorf("Get %s/%s: spec %s, want the owner %s", ns, name, r.Spec, owner)
	}
}

// list lists ns of tree and checks the names.
func (f *reuseFixture) list(t *testing.T, tree fs.FS, ns string, names ...string) {
	t.Helper()
	rs, err := f.c.List(t.Context(), &controller.ListRequest{FS: tree, Type: flagType, Namespace: ns})
	if err != nil {
		t.Fatalf("List %s: %v", ns, err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.Metadata.Name)
	}
	if len(got) != len(names) || len(got) > 0 && !equalStrings(got, names) {
		t.Errorf("List %s = %v, want %v", ns, got, names)
	}
}

func equalStrings(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// want fails t unless verb ran runs times and was answered reused times.
func (f *reuseFixture) want(t *testing.T, verb string, runs, reused int) {
	t.Helper()
	if r, u := f.counts(t, verb); r != runs || u != reused {
		t.Errorf("%s: %d runs and %d reused, want %d and %d", verb, r, u, runs, reused)
	}
}

func TestReadsOfAnUnchangedPartOfTheTreeAreReused(t *testing.T) {
	t.Parallel()
	f := newReuseFixture(t)
	base := tree(fstest.MapFS{}, map[string]*fstest.MapFile{
		conformFile("a", "x"): conformFlag("a", "x", "ana"),
		conformFile("a", "y"): conformFlag("a", "y", "bo"),
		conformFile("b", "z"): conformFlag("b", "z", "cy"),
	}).MapFS

	f.get(t, tree(base, nil), "a", "x", "ana")
	f.list(t, tree(base, nil), "a", "x", "y")
	f.want(t, "get", 1, 0)
	f.want(t, "list", 1, 0)

	// Another namespace changed, and a file elsewhere appeared: what the
	// calls read is the same.
	other := tree(base, map[string]*fstest.MapFile{conformFile("b", "z"): conformFlag("b", "z", "di"), "README.md": {Data: []byte("hi")}})
	f.get(t, other, "a", "x", "ana")
	f.list(t, other, "a", "x", "y")
	f.want(t, "get", 1, 1)
	f.want(t, "list", 1, 1)

	// The file a get read changed: it runs, and so does the list that
	// read it.
	changed := tree(base, map[string]*fstest.MapFile{conformFile("a", "x"): conformFlag("a", "x", "ed")})
	f.get(t, changed, "a", "x", "ed")
	f.list(t, changed, "a", "x", "y")
	f.want(t, "get", 2, 1)
	f.want(t, "list", 2, 1)

	// A file appeared in the directory the list read, not in the get's.
	added := tree(changed.MapFS, map[string]*fstest.MapFile{conformFile("a", "w"): conformFlag("a", "w", "fi")})
	f.get(t, added, "a", "x", "ed")
	f.list(t, added, "a", "w", "x", "y")
	f.want(t, "get", 2, 2)
	f.want(t, "list", 3, 1)

	// A get of a missing file is reused while it stays missing, and runs
	// once it is there.
	f.get(t, added, "a", "v", "")
	f.get(t, tree(added.MapFS, map[string]*fstest.MapFile{"README.md": {Data: []byte("ho")}}), "a", "v", "")
	f.get(t, tree(added.MapFS, map[string]*fstest.MapFile{conformFile("a", "v"): conformFlag("a", "v", "gu")}), "a", "v", "gu")
	f.want(t, "get", 4, 3)
}

// TestReusedOutputIsTheCallersOwn: the resources decoded from a kept
// output, or from the output kept after they were decoded, are their
// callers' to change.
func TestReusedOutputIsTheCallersOwn(t *testing.T) {
	t.Parallel()
	f := newReuseFixture(t)
	fsys := tree(fstest.MapFS{}, map[string]*fstest.MapFile{conformFile("a", "x"): conformFlag("a", "x", "ana")})
	for range 3 {
		r, err := f.c.Get(t.Context(), &controller.GetRequest{FS: fsys, Type: flagType, Namespace: "a", Name: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if string(r.Spec) != `{"owner":"ana"}` {
			t.Fatalf("Get: spec %s", r.Spec)
		}
		for i := range r.Spec {
			r.Spec[i] = 'X' // the caller owns what it got
		}
	}
	f.want(t, "get", 1, 2)
	// And what the first run's caller got was not what was kept.
	rs, err := f.c.List(t.Context(), &controller.ListRequest{FS: fsys, Type: flagType, Namespace: "a"})
	if err != nil || len(rs) != 1 {
		t.Fatalf("List = %v, %v", rs, err)
	}
	for i := range rs[0].Spec {
		rs[0].Spec[i] = 'X'
	}
	f.list(t, fsys, "a", "x")
	rs, err = f.c.List(t.Context(), &controller.ListRequest{FS: fsys, Type: flagType, Namespace: "a"})
	if err != nil || len(rs) != 1 || string(rs[0].Spec) != `{"owner":"ana"}` {
		t.Fatalf("List after the first caller changed its spec = %v, %v", rs, err)
	}
	f.want(t, "list", 1, 2)
}

func TestReadsAreNotReusedWithoutContentIDs(t *testing.T) {
	t.Parallel()
	f := newReuseFixture(t)
	fsys := fstest.MapFS{conformFile("a", "x"): conformFlag("a", "x", "ana")}
	f.get(t, fsys, "a", "x", "ana")
	f.get(t, fsys, "a", "x", "ana")
	f.want(t, "get", 2, 0)
}

func TestReuseCanBeTurnedOff(t *testing.T) {
	t.Parallel()
	f := newReuseFixture(t, wasm.WithReuseBytes(-1))
	fsys := tree(fstest.MapFS{}, map[string]*fstest.MapFile{conformFile("a", "x"): conformFlag("a", "x", "ana")})
	f.get(t, fsys, "a", "x", "ana")
	f.get(t, fsys, "a", "x", "ana")
	f.want(t, "get", 2, 0)
	if n, err := testutil.GatherAndCount(f.reg, "cup_wasm_reuse_bytes"); err != nil || n != 0 {
		t.Errorf("a runtime that keeps nothing has %d cup_wasm_reuse_bytes (%v), want none", n, err)
	}
}

func TestReuseKeepsWithinItsBound(t *testing.T) {
	t.Parallel()
	const bound = 1000 // a kept run of conform's get takes some 620 bytes
	f := newReuseFixture(t, wasm.WithReuseBytes(bound))
	fsys := tree(fstest.MapFS{}, map[string]*fstest.MapFile{
		conformFile("a", "x"): conformFlag("a", "x", "ana"),
		conformFile("a", "y"): conformFlag("a", "y", "bo"),
		conformFile("a", "z"): conformFlag("a", "z", "cy"),
	})
	for range 2 {
		for _, n := range []string{"x", "y", "z"} {
			f.get(t, fsys, "a", n, map[string]string{"x": "ana", "y": "bo", "z": "cy"}[n])
		}
	}
	if got := testutil.ToFloat64(gaugeOf(t, f.reg, "cup_wasm_reuse_bytes")); got <= 0 || got > bound {
		t.Errorf("cup_wasm_reuse_bytes = %v, want within (0, %d]", got, bound)
	}
	// One kept run fits, not two: each run's output replaces the one
	// before, and none is reused.
	f.want(t, "get", 6, 0)
}

// gaugeOf returns the registered gauge named, as a collector of one value.
func gaugeOf(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			v := mf.GetMetric()[0].GetGauge().GetValue()
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: "copy"}, func() float64 { return v })
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

func TestOnlyRunsThatEndedByThemselvesAreReused(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	rt := newRuntime(t, wasm.WithMetrics(reg))
	f := &reuseFixture{c: newController(t, rt, "faults", &wasm.Spec{Path: "faults.wasm", MaxOutputBytes: 4096}), reg: reg}
	fsys := idFS{fstest.MapFS{"README.md": {Data: []byte("hi")}}}
	for range 2 {
		// Stopped by its output limit: run again each time.
		if _, err := f.c.Get(t.Context(), &controller.GetRequest{FS: fsys, Type: flagType, Namespace: "ns", Name: "flood"}); !errors.Is(err, controller.ErrLimit) {
			t.Fatalf("Get flood = %v, want the output limit", err)
		}
		// A failure the module reported: the same each time.
		if _, err := f.c.Get(t.Context(), &controller.GetRequest{FS: fsys, Type: flagType, Namespace: "ns", Name: "fail"}); !errors.Is(err, controller.ErrFailed) {
			t.Fatalf("Get fail = %v, want the module's failure", err)
		}
	}
	f.want(t, "get", 3, 1)
}

// TestListKeyedKeysItemsByWhatTheModuleWrote: a server that keeps decoded
// resources by key decodes, after a change of one file, that one.
func TestListKeyedKeysItemsByWhatTheModuleWrote(t *testing.T) {
	t.Parallel()
	f := newReuseFixture(t)
	base := tree(fstest.MapFS{}, map[string]*fstest.MapFile{
		conformFile("a", "x"): conformFlag("a", "x", "ana"),
		conformFile("a", "y"): conformFlag("a", "y", "bo"),
	})
	changed := tree(base.MapFS, map[string]*fstest.MapFile{conformFile("a", "y"): conformFlag("a", "y", "cy")})
	keys := func(fsys fs.FS) map[string]string {
		t.Helper()
		found, err := f.c.ListKeyed(t.Context(), &controller.ListRequest{FS: fsys, Type: flagType, Namespace: "a"})
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]string{}
		for _, l := range found {
			r, err := l.Decode()
			if err != nil || r == nil {
				t.Fatalf("Decode of %s = %v, %v", l.Origin, r, err)
			}
			byName[r.Metadata.Name] = l.Key
		}
		return byName
	}
	before, after := keys(base), keys(changed)
	if len(before) != 2 || before["x"] == "" || before["x"] != after["x"] || before["y"] == after["y"] {
		t.Errorf("keys before %q, after %q: want x's the same, y's changed", before, after)
	}
}
