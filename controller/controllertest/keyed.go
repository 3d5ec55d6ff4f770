package controllertest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cup-dev/cup/controller"
)

// The server lists through [controller.KeyedLister] when a controller has
// it, and through List only otherwise. So for such a controller every List
// of the suite is checked against ListKeyed (see harness.list), and
// testKeyedLister checks the rest of the contract.

// contentIDs gives a snapshot content identifiers, as a Git tree's file
// system gives blob ids, so that ListKeyed may return keys.
type contentIDs struct{ fs.FS }

var _ controller.ContentIDFS = contentIDs{}

func (c contentIDs) ContentID(name string) (string, error) {
	b, err := fs.ReadFile(c.FS, name)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// ReadDir hides what the entries below may tell of their content
// (controller.ContentIDEntry): their ids are not the ones ContentID gives.
func (c contentIDs) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(c.FS, name)
	for i, e := range entries {
		entries[i] = plainEntry{e}
	}
	return entries, err
}

// plainEntry is a directory entry with no ability but fs.DirEntry's.
type plainEntry struct{ fs.DirEntry }

// keyedList lists req through kl and decodes what it found as a caller
// does: resources of other types (nil) left out, the rest sorted by name,
// the selector applied (ListKeyed ignores it). Decode errors fail t.
func keyedList(t *testing.T, kl controller.KeyedLister, req *controller.ListRequest) ([]*controller.Resource, []controller.Listed) {
	t.Helper()
	found, err := kl.ListKeyed(t.Context(), req)
	if err != nil {
		t.Fatalf("ListKeyed %s in %q: %v", req.Type.Kind, req.Namespace, err)
	}
	var out []*controller.Resource
	for _, f := range found {
		if f.Origin == "" {
			t.Errorf("ListKeyed %s in %q: a Listed without an Origin", req.Type.Kind, req.Namespace)
		}
		if f.Decode == nil {
			t.Fatalf("ListKeyed %s in %q: %s has no Decode", req.Type.Kind, req.Namespace, f.Origin)
		}
		r, err := f.Decode()
		if err != nil {
			t.Fatalf("ListKeyed %s in %q: Decode of %s: %v", req.Type.Kind, req.Namespace, f.Origin, err)
		}
		if r != nil && (req.Selector == nil || req.Selector.Matches(r.Metadata.Labels)) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b *controller.Resource) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	return out, found
}

// checkKeyed fails t unless ListKeyed of req, decoded as a caller does,
// gives what List gave (want), with and without content identifiers.
func checkKeyed(t *testing.T, kl controller.KeyedLister, req *controller.ListRequest, want []*controller.Resource) {
	t.Helper()
	for _, fsys := range []fs.FS{req.FS, contentIDs{req.FS}} {
		r := *req
		r.FS = fsys
		got, _ := keyedList(t, kl, &r)
		if len(got) != len(want) {
			t.Errorf("ListKeyed %s in %q decodes to %v, List gives %v", req.Type.Kind, req.Namespace, names(got), names(want))
			continue
		}
		for i := range want {
			if d := diff(want[i], got[i]); d != "" {
				t.Errorf("ListKeyed %s in %q, item %d differs from List's: %s", req.Type.Kind, req.Namespace, i, d)
			}
		}
	}
}

// testKeyedLister checks what the checks of every List leave out: that
// ListKeyed ignores the selector, that Decode may run concurrently and after
// the tree changed, that decoded resources are the caller's, and that equal
// keys decode to equal resources, in one tree and across trees. Controllers
// without the ability skip it.
func testKeyedLister(t *testing.T, h *harness) {
	kl, ok := h.c.(controller.KeyedLister)
	if !ok {
		t.Skip("the controller is no controller.KeyedLister")
	}
	for i, name := range []string{"f3", "f1", "f2", "f4"} {
		h.put(t, flagType, newResource(flagType, "default", name, map[string]string{"i": fmt.Sprint(i)}, fmt.Sprintf(`{"i":%d}`, i)))
	}
	h.put(t, flagType, newResource(flagType, "other", "f1", nil, `{"ns":"other"}`))
	h.put(t, segmentType, newResource(segmentType, "default", "f1", nil, `{"kind":"segment"}`))
	snap := contentIDs{h.fs.Snapshot()}
	req := &controller.ListRequest{FS: snap, Type: flagType, Namespace: "default"}
	want, err := h.c.List(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("ignores the selector", func(t *testing.T) {
		sel := &controller.ListRequest{FS: snap, Type: flagType, Namespace: "default", Selector: labelSelector{"none": "such"}}
		found, err := kl.ListKeyed(t.Context(), sel)
		if err != nil {
			t.Fatal(err)
		}
		_, all := keyedList(t, kl, req)
		if len(found) != len(all) {
			t.Errorf("ListKeyed with a selector matching nothing found %d, without %d", len(found), len(all))
		}
	})

	t.Run("missing namespace", func(t *testing.T) {
		found, err := kl.ListKeyed(t.Context(), &controller.ListRequest{FS: snap, Type: flagType, Namespace: "nowhere"})
		if err != nil {
			t.Fatalf("ListKeyed of a missing namespace: %v, want no error", err)
		}
		for _, f := range found {
			if r, err := f.Decode(); r != nil || err != nil {
				t.Errorf("ListKeyed of a missing namespace found %s: %v, %v", f.Origin, r, err)
			}
		}
	})

	_, found := keyedList(t, kl, req)
	t.Run("concurrent decodes", func(t *testing.T) {
		first := make([]*controller.Resource, len(found))
		for i, f := range found {
			first[i], _ = f.Decode()
		}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i, f := range found {
					r, err := f.Decode()
					if err != nil || !reflect.DeepEqual(r, first[i]) {
						t.Errorf("goroutine %d: Decode of %s = %v, %v; want %v as sequentially", g, f.Origin, r, err, first[i])
					}
				}
			})
		}
		wg.Wait()
	})

	t.Run("results owned by caller", func(t *testing.T) {
		for _, f := range found {
			r, err := f.Decode()
			if err != nil || r == nil {
				continue
			}
			before := r.Clone()
			r.Metadata.Name = "mutated"
			r.Metadata.Labels = map[string]string{"mutated": "yes"}
			for i := range r.Spec {
				r.Spec[i] = ' '
			}
			again, err := f.Decode()
			if err != nil {
				t.Fatal(err)
			}
			if d := diff(before, again); d != "" {
				t.Errorf("Decode of %s after mutating an earlier result: %s", f.Origin, d)
			}
		}
	})

	// Later writes change the tree, not the snapshot the Listed came from.
	h.put(t, flagType, newResource(flagType, "default", "f1", map[string]string{"i": "changed"}, `{"i":"changed"}`))
	if err := h.delete(t, flagType, "default", "f2"); err != nil {
		t.Fatal(err)
	}
	h.put(t, flagType, newResource(flagType, "default", "f5", nil, `{"i":5}`))

	t.Run("decode after the tree changed", func(t *testing.T) {
		var got []*controller.Resource
		for _, f := range found {
			if r, err := f.Decode(); err != nil {
				t.Fatalf("Decode of %s: %v", f.Origin, err)
			} else if r != nil {
				got = append(got, r)
			}
		}
		slices.SortFunc(got, func(a, b *controller.Resource) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
		if !reflect.DeepEqual(names(got), names(want)) {
			t.Fatalf("decoded %v after later writes, want %v as listed before", names(got), names(want))
		}
		for i := range want {
			if d := diff(want[i], got[i]); d != "" {
				t.Errorf("%s decoded after later writes: %s", want[i].Metadata.Name, d)
			}
		}
	})

	t.Run("equal keys decode equally", func(t *testing.T) {
		byKey := map[string]*controller.Resource{}
		check := func(tree string, found []controller.Listed) {
			for _, f := range found {
				if f.Key == "" {
					continue
				}
				r, err := f.Decode()
				if err != nil {
					t.Fatalf("Decode of %s: %v", f.Origin, err)
				}
				if prev, ok := byKey[f.Key]; ok && !reflect.DeepEqual(prev, r) {
					t.Errorf("key %q (%s, %s) decodes to %v and to %v", f.Key, tree, f.Origin, prev, r)
				}
				byKey[f.Key] = r
			}
		}
		check("before", found)
		after := &controller.ListRequest{FS: contentIDs{h.fs.Snapshot()}, Type: flagType, Namespace: "default"}
		got, foundAfter := keyedList(t, kl, after)
		check("after", foundAfter)
		// And ListKeyed of the new tree still agrees with List.
		want, err := h.c.List(t.Context(), after)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(names(got), names(want)) {
			t.Errorf("after writes, ListKeyed decodes to %v, List gives %v", names(got), names(want))
		}
	})
}
