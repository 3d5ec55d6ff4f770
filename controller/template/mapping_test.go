package template_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/template"
)

func TestMapPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, list, resource string
		unsupported          bool
	}{
		{name: "directories", list: "flags/{{ .Namespace }}/*.yaml", resource: "flags/{{ .Namespace }}/{{ .Name }}.yaml"},
		{name: "original Cup", list: "{{ .Namespace }}/{{ .Group }}-{{ .Version }}-{{ .Kind }}-*.json",
			resource: "{{ .Namespace }}/{{ .Group }}-{{ .Version }}-{{ .Kind }}-{{ .Name }}.json"},
		{name: "sharded", list: "{{ .Plural }}/{{ .Namespace }}/*/*.json", resource: "{{ .Plural }}/{{ .Namespace }}/{{ shard .Name }}/{{ .Name }}.json"},
		{name: "name twice", list: "{{ .Namespace }}/*/*.json", resource: "{{ .Namespace }}/{{ .Name }}/{{ .Name }}.json"},
		{name: "one element for both", list: "x/{{ .Namespace }}-*.json", resource: "x/{{ .Namespace }}-{{ .Name }}.json", unsupported: true},
		{name: "upper", list: "{{ .Namespace }}/*.json", resource: "{{ .Namespace }}/{{ upper .Name }}.json", unsupported: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newController(t, template.Spec{ListTemplate: tc.list, ResourceTemplate: tc.resource})
			for _, r := range []struct{ namespace, name string }{{"default", "a"}, {"prod-eu", "a.b-c"}, {"x", "x.json"}} {
				p := resourcePath(t, c, r.namespace, r.name)
				ns, name, ok, err := c.MapPath(flagType, p)
				if tc.unsupported {
					if !errors.Is(err, controller.ErrUnsupported) {
						t.Fatalf("MapPath(%q) = %v, want ErrUnsupported", p, err)
					}
					return
				}
				if err != nil || !ok || ns != r.namespace || name != r.name {
					t.Errorf("MapPath(%q) = %q, %q, %v, %v; want %q, %q", p, ns, name, ok, err, r.namespace, r.name)
				}
			}
			for _, p := range []string{"README.md", "flags/default/a.json", "default/a/b.json", "flags/default/x/a.yaml", "default/flags.cup.dev-v1alpha1-Segment-a.json"} {
				if ns, name, ok, err := c.MapPath(flagType, p); ok || err != nil {
					t.Errorf("MapPath(%q) = %q, %q, %v, %v; want no resource", p, ns, name, ok, err)
				}
			}
		})
	}
}

// resourcePath is where c puts a flag.
func resourcePath(t *testing.T, c *template.Controller, namespace, name string) string {
	t.Helper()
	fs := newMemFS(t, nil)
	put(t, c, fs, newFlag(namespace, name, `{"enabled": true}`))
	files := keys(fs.Files())
	if len(files) != 1 {
		t.Fatalf("put wrote %v", files)
	}
	return files[0]
}

func TestNamespaces(t *testing.T) {
	t.Parallel()
	c := newController(t, template.Spec{ListTemplate: "{{ .Namespace }}/{{ .Group }}-{{ .Version }}-{{ .Kind }}-*.json",
		ResourceTemplate: "{{ .Namespace }}/{{ .Group }}-{{ .Version }}-{{ .Kind }}-{{ .Name }}.json"})
	fs := newMemFS(t, map[string]string{
		"README.md": "x",
		"Bad_NS/flags.cup.dev-v1alpha1-Flag-a.json": "{}",
		"empty/other.json":                          "{}",
	})
	for _, r := range [][2]string{{"staging", "a"}, {"default", "a"}, {"default", "b"}} {
		put(t, c, fs, newFlag(r[0], r[1], `{}`))
	}
	got, err := c.Namespaces(t.Context(), fs, flagType)
	if err != nil || !slices.Equal(got, []string{"default", "staging"}) {
		t.Fatalf("Namespaces = %q, %v; want [default staging]", got, err)
	}
	c = newController(t, template.Spec{ListTemplate: "{{ .Namespace }}-*/*.json", ResourceTemplate: "{{ .Namespace }}-{{ .Name }}/x.json"})
	if _, err := c.Namespaces(t.Context(), fs, flagType); !errors.Is(err, controller.ErrUnsupported) {
		t.Fatalf("Namespaces with glob syntax beside the namespace: %v, want ErrUnsupported", err)
	}
}
