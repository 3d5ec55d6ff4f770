package template_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/controllertest"
	"github.com/cup-dev/cup/controller/template"
)

var (
	flagType    = controller.Type{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Flag", Plural: "flags"}
	segmentType = controller.Type{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Segment", Plural: "segments"}
)

func newFlag(namespace, name, spec string) *controller.Resource {
	r := &controller.Resource{
		APIVersion: flagType.APIVersion(),
		Kind:       flagType.Kind,
		Metadata:   controller.Metadata{Namespace: namespace, Name: name},
	}
	if spec != "" {
		r.Spec = json.RawMessage(spec)
	}
	return r
}

func newMemFS(t *testing.T, files map[string]string) *controllertest.MemFS {
	t.Helper()
	b := make(map[string][]byte, len(files))
	for k, v := range files {
		b[k] = []byte(v)
	}
	m, err := controllertest.NewMemFS(b)
	if err != nil {
		t.Fatalf("NewMemFS: %v", err)
	}
	return m
}

func newController(t testing.TB, spec template.Spec, opts ...template.Option) *template.Controller {
	t.Helper()
	c, err := template.New(spec, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// put stores r, a Flag or a Segment.
func put(t *testing.T, c controller.Controller, fs controller.WriteFS, r *controller.Resource) {
	t.Helper()
	typ := flagType
	if r.Kind == segmentType.Kind {
		typ = segmentType
	}
	if err := c.Put(t.Context(), &controller.PutRequest{FS: fs, Type: typ, Resource: r}); err != nil {
		t.Fatalf("Put %s %s/%s: %v", r.Kind, r.Metadata.Namespace, r.Metadata.Name, err)
	}
}

func keys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
