package controller_test

import (
	"encoding/json"
	"testing"

	"github.com/cup-dev/cup/controller"
)

func TestContentVersion(t *testing.T) {
	t.Parallel()
	base := func() *controller.Resource {
		return &controller.Resource{
			APIVersion: "flags.cup.dev/v1", Kind: "Flag",
			Metadata: controller.Metadata{Namespace: "default", Name: "a", Labels: map[string]string{"x": "1", "y": "2"}},
			Spec:     json.RawMessage(`{"enabled": true, "n": [1, 2]}`),
		}
	}
	v0, err := base().ContentVersion()
	if err != nil {
		t.Fatal(err)
	}
	same := map[string]func(*controller.Resource){
		"whitespace in spec":       func(r *controller.Resource) { r.Spec = json.RawMessage("{\n  \"enabled\":true,\"n\":[1,2]\n}") },
		"resourceVersion":          func(r *controller.Resource) { r.Metadata.ResourceVersion = "ff" },
		"label order":              func(r *controller.Resource) { r.Metadata.Labels = map[string]string{"y": "2", "x": "1"} },
		"empty vs nil labels":      func(r *controller.Resource) {},
		"nil vs empty annotations": func(r *controller.Resource) { r.Metadata.Annotations = map[string]string{} },
	}
	for name, change := range same {
		r := base()
		change(r)
		if v, err := r.ContentVersion(); err != nil || v != v0 {
			t.Errorf("%s: version %s, %v; want %s", name, v, err, v0)
		}
	}
	different := map[string]func(*controller.Resource){
		"spec value":  func(r *controller.Resource) { r.Spec = json.RawMessage(`{"enabled": false, "n": [1, 2]}`) },
		"name":        func(r *controller.Resource) { r.Metadata.Name = "b" },
		"namespace":   func(r *controller.Resource) { r.Metadata.Namespace = "other" },
		"kind":        func(r *controller.Resource) { r.Kind = "Other" },
		"label value": func(r *controller.Resource) { r.Metadata.Labels["x"] = "3" },
		"label to annotation": func(r *controller.Resource) {
			r.Metadata.Labels = map[string]string{"y": "2"}
			r.Metadata.Annotations = map[string]string{"x": "1"}
		},
		"field boundaries": func(r *controller.Resource) { r.APIVersion, r.Kind = "flags.cup.dev/v1F", "lag" },
	}
	for name, change := range different {
		r := base()
		change(r)
		if v, err := r.ContentVersion(); err != nil || v == v0 {
			t.Errorf("%s: version %s, %v; want a new one", name, v, err)
		}
	}
	empty := []json.RawMessage{nil, json.RawMessage("null"), json.RawMessage("{}"), json.RawMessage(" { } ")}
	var want string
	for i, spec := range empty {
		r := base()
		r.Spec = spec
		v, err := r.ContentVersion()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			want = v
		} else if v != want {
			t.Errorf("spec %q: version %s, want %s as for no spec", spec, v, want)
		}
	}
	if _, err := (&controller.Resource{Spec: json.RawMessage("{bad")}).ContentVersion(); err == nil {
		t.Error("a spec that is not JSON has a version")
	}
}
