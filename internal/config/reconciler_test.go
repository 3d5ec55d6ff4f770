package config_test

import (
	"testing"
	"testing/fstest"
	"time"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/config"
)

const reconcilerTypes = `apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: bundles.flags.cup.dev}
spec:
  group: flags.cup.dev
  names: {kind: Bundle, singular: bundle, plural: bundles}
  versions: {v1alpha1: {schema: {type: object}}}
---
apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: flags.flags.cup.dev}
spec:
  group: flags.cup.dev
  names: {kind: Flag, singular: flag, plural: flags}
  versions: {v1alpha1: {schema: {type: object}}}
---
apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: flagbundles.flags.cup.dev}
spec:
  group: flags.cup.dev
  names: {kind: FlagBundle, singular: flagbundle, plural: flagbundles}
  versions: {v1alpha1: {schema: {type: object}}}
---
apiVersion: cup.dev/v1alpha1
kind: Controller
metadata: {name: files}
spec: {type: template, spec: {list_template: "x/{{ .Namespace }}/*.json", resource_template: "x/{{ .Namespace }}/{{ .Name }}.json"}}
---
apiVersion: cup.dev/v1alpha1
kind: APIBinding
metadata: {name: files}
spec: {controller: files, resources: [flags.cup.dev/v1alpha1/bundles, flags.cup.dev/v1alpha1/flags, flags.cup.dev/v1alpha1/flagbundles]}
`

// TestLoadReconciler: a Reconciler loads with its types, mappers,
// outputs, transform and write settings, defaults filled in.
func TestLoadReconciler(t *testing.T) {
	fsys := fstest.MapFS{
		"types.yaml": {Data: []byte(reconcilerTypes)},
		"reconcilers/bundles.yaml": {Data: []byte(`apiVersion: cup.dev/v1alpha1
kind: Reconciler
metadata: {name: flag-bundles}
spec:
  for: flags.cup.dev/v1alpha1/bundles
  watches:
    - resource: flags.cup.dev/v1alpha1/flags
      map: {kind: selector, path: spec.selector}
  outputs:
    - resource: flags.cup.dev/v1alpha1/flagbundles
  transform:
    wasm: {path: flagbundle.wasm, timeout: 2s}
  write: {batchWindow: 500ms, maxWritesPerMinute: 30}
`)},
	}
	set, err := config.Load(fsys, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Reconcilers) != 1 {
		t.Fatalf("reconcilers: %+v", set.Reconcilers)
	}
	r := set.Reconcilers[0]
	flags := controller.Type{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags"}
	if r.Name != "flag-bundles" || r.For.Plural != "bundles" || len(r.Watches) != 1 || r.Watches[0].Type != flags ||
		r.Watches[0].Mapper != "selector" || r.Watches[0].Path != "spec.selector" || len(r.Outputs) != 1 || !r.Outputs[0].Exclusive ||
		string(r.WASM) != `{path: flagbundle.wasm, timeout: 2s}` && string(r.WASM) != `{"path":"flagbundle.wasm","timeout":"2s"}` ||
		r.Mode != "" || r.BatchWindow != 500*time.Millisecond || r.MaxWritesPerMinute != 30 || r.Location.File != "reconcilers/bundles.yaml" {
		t.Fatalf("reconciler %+v (wasm %s)", r, r.WASM)
	}
}

// TestLoadReconcilerInvalid: each mistake is a problem naming the field.
func TestLoadReconcilerInvalid(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{`{for: flags.cup.dev/v1alpha1/bundles, outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}]}`,
			`Reconciler "r": spec.transform.wasm is required: {"path": "<module>.wasm"}, relative to this file`},
		{`{for: flags.cup.dev/v1alpha1/nope, outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}], transform: {wasm: {path: m.wasm}}}`,
			`Reconciler "r": spec.for: no ResourceDefinition has group "flags.cup.dev" and plural "nope"`},
		{`{for: flags.cup.dev/v1alpha1/bundles, outputs: [], transform: {wasm: {path: m.wasm}}}`,
			`Reconciler "r": spec.outputs must list at least one type the reconciler writes`},
		{`{for: flags.cup.dev/v1alpha1/bundles, watches: [{resource: flags.cup.dev/v1alpha1/flags, map: {kind: label}}], outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}], transform: {wasm: {path: m.wasm}}}`,
			`Reconciler "r": spec.watches[0].map.kind "label" is not one of nameAligned, owner, selector, reference or referencedBy`},
		{`{for: flags.cup.dev/v1alpha1/bundles, watches: [{resource: flags.cup.dev/v1alpha1/flags, map: {kind: selector}}], outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}], transform: {wasm: {path: m.wasm}}}`,
			`Reconciler "r": spec.watches[0].map.path is required for a selector mapper, e.g. spec.selector`},
		{`{for: flags.cup.dev/v1alpha1/bundles, outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles, ownership: mine}], transform: {wasm: {path: m.wasm}}}`,
			`Reconciler "r": spec.outputs[0].ownership "mine" is not exclusive or shared`},
		{`{for: flags.cup.dev/v1alpha1/bundles, outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}], transform: {wasm: {path: m.wasm}}, write: {mode: sometimes}}`,
			`Reconciler "r": spec.write.mode "sometimes" is not direct or proposal`},
		{`{for: flags.cup.dev/v1alpha1/bundles, outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}], transform: {wasm: {path: m.wasm}}, write: {batchWindow: soon}}`,
			`Reconciler "r": spec.write.batchWindow "soon" is not a duration between 0s and 1h`},
		{`{for: flags.cup.dev/v1alpha1/bundles, outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}], transform: {wasm: {path: m.wasm}}, write: {maxWritesPerMinute: 1.5}}`,
			`Reconciler "r": spec.write.maxWritesPerMinute: 1.5 is not an integer of 64 bits`},
		{`{for: flags.cup.dev/v1alpha1/bundles, outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}], transform: {wasm: {path: m.wasm}}, write: {maxWritesPerMinute: many}}`,
			`Reconciler "r": spec.write.maxWritesPerMinute: expected integer, got string`},
		{`{for: flags.cup.dev/v1alpha1/bundles, outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}], transform: {wasm: {path: m.wasm}}, extra: 1}`,
			`Reconciler "r": unknown field "spec.extra"`},
		{`{for: flags.cup.dev/v1alpha1/bundles, outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}], transform: {wasm: {path: m.wasm}, cue: {output: {resource: flags.cup.dev/v1alpha1/flagbundles}}}}`,
			`Reconciler "r": spec.transform: give wasm or cue, not both`},
		{`{for: flags.cup.dev/v1alpha1/bundles, outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}], transform: {cue: {output: {resource: flags.cup.dev/v1alpha1/flags}}}}`,
			`Reconciler "r": spec.transform.cue.output.resource flags.cup.dev/v1alpha1/flags is not among spec.outputs`},
		{`{for: flags.cup.dev/v1alpha1/bundles, outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}], transform: {cue: {output: {resource: flags.cup.dev/v1alpha1/flagbundles, format: toml}}}}`,
			`Reconciler "r": spec.transform.cue.output.format "toml" is not json or yaml`},
		{`{for: flags.cup.dev/v1alpha1/bundles, outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}], transform: {cue: {output: {resource: flags.cup.dev/v1alpha1/flagbundles, reference: metadata.name}}}}`,
			`Reconciler "r": spec.transform.cue.output.reference "metadata.name": name a field of the primary's spec, such as spec.config`},
		{`{for: flags.cup.dev/v1alpha1/bundles, outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}], transform: {cue: {output: {resource: flags.cup.dev/v1alpha1/flagbundles}, gc: {after: never}}}}`,
			`Reconciler "r": spec.transform.cue.gc.after "never" is not a duration between 0s and 720h0m0s`},
		{`{for: flags.cup.dev/v1alpha1/bundles, outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}], transform: {cue: {output: {resource: flags.cup.dev/v1alpha1/flagbundles}, schema: {path: s.cue, inline: "x: int"}}}}`,
			`Reconciler "r": spec.transform.cue.schema: give path or inline, not both`},
		{`{for: flags.cup.dev/v1alpha1/bundles, outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}], transform: {cue: {output: {resource: flags.cup.dev/v1alpha1/flagbundles}, layer: x}}}`,
			`Reconciler "r": unknown field "spec.transform.cue.layer"`},
		{`{for: flags.cup.dev/v1alpha1/bundles, watches: [{resource: flags.cup.dev/v1alpha1/flags, map: {kind: reference, path: spec.x, namespace: org}}], outputs: [{resource: flags.cup.dev/v1alpha1/flagbundles}], transform: {wasm: {path: m.wasm}}}`,
			`Reconciler "r": spec.watches[0].map.namespace: only a selector mapper reads inputs from a fixed namespace`},
	} {
		fsys := fstest.MapFS{
			"types.yaml": {Data: []byte(reconcilerTypes)},
			"r.yaml":     {Data: []byte("apiVersion: cup.dev/v1alpha1\nkind: Reconciler\nmetadata: {name: r}\nspec: " + tc.spec + "\n")},
		}
		_, err := config.Load(fsys, ".")
		if err == nil {
			t.Errorf("%s: loaded", tc.spec)
			continue
		}
		got := problems(t, err)
		found := false
		for _, p := range got {
			if p == "r.yaml: "+tc.want || p == "r.yaml (document 1): "+tc.want {
				found = true
			}
		}
		if !found {
			t.Errorf("%s:\n got %q\nwant %q", tc.spec, got, tc.want)
		}
	}
}

// TestLoadCUEReconciler: a Reconciler with a cue transform loads with its
// layers, schema, output and bounds, and a selector mapper reading a
// fixed namespace.
func TestLoadCUEReconciler(t *testing.T) {
	fsys := fstest.MapFS{
		"types.yaml": {Data: []byte(reconcilerTypes)},
		"r.yaml": {Data: []byte(`apiVersion: cup.dev/v1alpha1
kind: Reconciler
metadata: {name: layered}
spec:
  for: flags.cup.dev/v1alpha1/bundles
  watches:
    - resource: flags.cup.dev/v1alpha1/flags
      map: {kind: selector, path: spec.layerSelector, namespace: org}
  outputs:
    - resource: flags.cup.dev/v1alpha1/flagbundles
  transform:
    cue:
      layers: flags.cup.dev/v1alpha1/flags
      schema: {path: schemas/bundle.cue}
      output: {resource: flags.cup.dev/v1alpha1/flagbundles, format: yaml, reference: spec.current}
      gc: {after: 15m}
      timeout: 3s
      maxMemoryBytes: 67108864
`)},
	}
	set, err := config.Load(fsys, ".")
	if err != nil {
		t.Fatal(err)
	}
	r := set.Reconcilers[0]
	c := r.CUE
	flags := controller.Type{Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags"}
	if c == nil || c.Layers != flags || c.SchemaPath != "schemas/bundle.cue" || c.Output.Plural != "flagbundles" || c.Format != "yaml" ||
		c.Reference != "spec.current" || c.GCAfter != 15*time.Minute || c.Timeout != 3*time.Second || c.MaxMemoryBytes != 64<<20 ||
		r.WASM != nil || r.Watches[0].Namespace != "org" {
		t.Fatalf("reconciler %+v, cue %+v", r, c)
	}
}
