// Tests of what results guarantee: ownership, concurrent reads, determinism,
// problems left out.

package controllertest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/cup-dev/cup/controller"
)

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
