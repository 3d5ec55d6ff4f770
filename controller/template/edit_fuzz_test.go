package template_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/template"
)

// FuzzEditYAML sets a fuzzed spec field of a fuzzed YAML file to a fuzzed
// JSON value through Put. Whatever the input: the in-place edit does not
// panic; Put succeeds unless the value cannot be stored (ErrInvalid); the
// file then reads back as the resource written; and writing that resource
// again changes no byte.
func FuzzEditYAML(f *testing.F) {
	input, err := os.ReadFile(filepath.Join("testdata", "edit", "flag.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	const head = "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata:\n  name: new-login\n"
	for _, s := range []struct{ file, path, value string }{
		{string(input), "rollout.match.country", `"DE"`},
		{string(input), "variants", `[{"key": "x"}]`},
		{string(input), "description", `"a\nb"`},
		{string(input), "override.timeout", `"1m"`},
		{string(input), "rollout.segments", `["a, b", "#c"]`},
		{string(input), "new.deep.key", `12345678901234567890`},
		{string(input), "folded", `null`},
		{head + "spec:\n  a: [1, {b: 2}] # c\n", "a", `{"b": [1]}`},
		{head + "spec:\n  a: 'x' # c\n  b: |+\n    keep\n\n", "b", `"  indented\n"`},
		{head + "spec:\n- a\n", "a", `1`},
		{head + "  labels: {a: b}\nspec:\n  \"a\": \"x\"\n", "a", `"yes"`},
	} {
		f.Add(s.file, s.path, s.value)
	}
	spec := template.Spec{ListTemplate: `{{ .Namespace }}/*.yaml`, ResourceTemplate: `{{ .Namespace }}/{{ .Name }}.yaml`}
	f.Fuzz(func(t *testing.T, file, path, value string) {
		if len(file) > 4096 || len(path) > 64 || len(value) > 1024 {
			t.Skip()
		}
		const p = "default/new-login.yaml"
		mem := newMemFS(t, map[string]string{p: file})
		c := newController(t, spec)
		get := func() (*controller.Resource, error) {
			return c.Get(t.Context(), &controller.GetRequest{FS: mem, Type: flagType, Namespace: "default", Name: "new-login"})
		}
		r, err := get()
		if err != nil {
			return // not a resource to edit
		}
		if !setField(r, strings.Split(path, "."), value) {
			return
		}
		_, _ = template.PatchYAML([]byte(file), r) // must not panic
		err = c.Put(t.Context(), &controller.PutRequest{FS: mem, Type: flagType, Resource: r})
		if errors.Is(err, controller.ErrInvalid) {
			return
		}
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		got := mem.Files()[p]
		back, err := get()
		if err != nil {
			t.Fatalf("Get after Put: %v\n%s", err, got)
		}
		if !sameResource(t, back, r) {
			t.Fatalf("Get after Put = %+v %s, want %+v %s\nfile:\n%s", back.Metadata, back.Spec, r.Metadata, r.Spec, got)
		}
		if err := c.Put(t.Context(), &controller.PutRequest{FS: mem, Type: flagType, Resource: back}); err != nil {
			t.Fatalf("Put again: %v", err)
		}
		if again := mem.Files()[p]; !bytes.Equal(again, got) {
			t.Fatalf("writing the resource again changed the file:\n%s\nthen\n%s", got, again)
		}
	})
}

// setField sets r's spec field at path to the JSON value, creating objects
// on the way, or reports false if it cannot.
func setField(r *controller.Resource, path []string, value string) bool {
	dec := json.NewDecoder(strings.NewReader(value))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return false
	}
	var spec map[string]any
	if len(r.Spec) > 0 {
		dec := json.NewDecoder(bytes.NewReader(r.Spec))
		dec.UseNumber()
		if err := dec.Decode(&spec); err != nil {
			return false
		}
	}
	if spec == nil {
		spec = map[string]any{}
	}
	cur := spec
	for _, k := range path[:len(path)-1] {
		next, ok := cur[k].(map[string]any)
		if !ok {
			if _, exists := cur[k]; exists {
				return false
			}
			next = map[string]any{}
			cur[k] = next
		}
		cur = next
	}
	cur[path[len(path)-1]] = v
	data, err := json.Marshal(spec)
	if err != nil {
		return false
	}
	r.Spec = data
	return true
}
