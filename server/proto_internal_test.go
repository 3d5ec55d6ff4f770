package server

import (
	"encoding/json"
	"testing"

	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/lru"
)

// TestProtoOfEntriesOfOneVersion: a spec of {} and no spec have one
// content version, but not one message (an empty Struct, and none); the
// cache of messages gives each its own, whichever is asked for first.
func TestProtoOfEntriesOfOneVersion(t *testing.T) {
	entryOf := func(spec string) *entry {
		t.Helper()
		r := &controller.Resource{APIVersion: "t.cup.dev/v1", Kind: "Item", Metadata: controller.Metadata{Namespace: "default", Name: "a"}}
		if spec != "" {
			r.Spec = json.RawMessage(spec)
		}
		e, err := newEntry(r)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	empty, none, null := entryOf("{}"), entryOf(""), entryOf("null")
	if empty.version != none.version || none.version != null.version {
		t.Fatal("the three specs no longer share a content version: this test needs other resources")
	}
	for _, order := range [][]*entry{{empty, none, null}, {none, null, empty}} {
		s := &Server{protos: lru.New[*cupv1alpha1.Resource](protoCacheBytes)}
		for _, e := range order {
			pb, err := s.proto(e)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := pb.Spec != nil, e == empty; got != want {
				t.Errorf("the message of %s has a spec: %v, want %v", e.json, got, want)
			}
		}
	}
}
