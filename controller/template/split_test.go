package template

import (
	"testing"

	"github.com/cup-dev/cup/controller"
)

// TestNameSplitterAgreesWithRendering checks that the shortcut checkListed
// takes for templates using the name verbatim finds what rendering finds.
func TestNameSplitterAgreesWithRendering(t *testing.T) {
	t.Parallel()
	typ := controller.Type{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Flag", Plural: "flags"}
	for _, tc := range []struct {
		resource, list string
		verbatim       bool
	}{
		{"", "", true},
		{"{{ .Namespace }}/{{ .Name }}.yaml", "{{ .Namespace }}/*.yaml", true},
		{"{{ .Namespace }}/{{ .Name }}/{{ .Name }}.json", "{{ .Namespace }}/*/*.json", true},
		{"items/{{ .Namespace }}/{{ shard .Name }}/{{ .Name }}.json", "items/{{ .Namespace }}/*/*.json", false},
		{"{{ .Namespace }}/{{ lower .Name }}.json", "{{ .Namespace }}/*.json", false},
		{"{{ .Namespace }}/{{ if .Group }}{{ .Name }}{{ end }}.json", "{{ .Namespace }}/*.json", false},
		{"{{ .Namespace }}/{{ $.Name }}.json", "{{ .Namespace }}/*.json", false},
	} {
		c, err := New(Spec{ResourceTemplate: tc.resource, ListTemplate: tc.list})
		if err != nil {
			t.Fatalf("%q: %v", tc.resource, err)
		}
		split := c.nameSplitter(typ, "default")
		if (split != nil) != tc.verbatim {
			t.Errorf("%q: split %q, want verbatim %v", tc.resource, split, tc.verbatim)
			continue
		}
		for _, name := range []string{"a", "My_Res", "a.b", "x/y", "..", "a*", "\uFFFF", ""} {
			for _, other := range []string{"a", "My_Res", "b", "x/y", "\uFFFF"} {
				p, err := c.resourcePath(typ, "default", other)
				if err != nil {
					continue
				}
				r := &controller.Resource{APIVersion: typ.APIVersion(), Kind: typ.Kind, Metadata: controller.Metadata{Name: name}}
				fast := c.checkListed(r, p, typ, "default", split)
				slow := c.checkListed(r, p, typ, "default", nil)
				if (fast == nil) != (slow == nil) {
					t.Errorf("%q: name %q at %s: with the shortcut %v, without %v", tc.resource, name, p, fast, slow)
				}
			}
		}
	}
}
