package servertest

import (
	"context"
	"strings"
	"testing"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/runtime"
)

// The types WithBundles serves, for tests of reconcilers.
var (
	BundleType     = controller.Type{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Bundle", Plural: "bundles"}
	FlagBundleType = controller.Type{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "FlagBundle", Plural: "flagbundles"}
)

// bundleConfig serves Bundle and FlagBundle one JSON file per resource,
// under bundles/ and flagbundles/, with no reconciler.
const bundleConfig = `apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: bundles.flags.cup.dev}
spec:
  group: flags.cup.dev
  names: {kind: Bundle, singular: bundle, plural: bundles}
  versions: {v1alpha1: {schemaTarget: spec, schema: {type: object}}}
---
apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: flagbundles.flags.cup.dev}
spec:
  group: flags.cup.dev
  names: {kind: FlagBundle, singular: flagbundle, plural: flagbundles}
  versions: {v1alpha1: {schemaTarget: spec, schema: {type: object}}}
---
apiVersion: cup.dev/v1alpha1
kind: Controller
metadata: {name: bundles}
spec:
  type: template
  spec:
    list_template: "bundles/{{ .Namespace }}/*.json"
    resource_template: "bundles/{{ .Namespace }}/{{ .Name }}.json"
---
apiVersion: cup.dev/v1alpha1
kind: Controller
metadata: {name: flagbundles}
spec:
  type: template
  spec:
    list_template: "flagbundles/{{ .Namespace }}/*.json"
    resource_template: "flagbundles/{{ .Namespace }}/{{ .Name }}.json"
---
apiVersion: cup.dev/v1alpha1
kind: APIBinding
metadata: {name: bundles}
spec: {controller: bundles, resources: [flags.cup.dev/v1alpha1/bundles]}
---
apiVersion: cup.dev/v1alpha1
kind: APIBinding
metadata: {name: flagbundles}
spec: {controller: flagbundles, resources: [flags.cup.dev/v1alpha1/flagbundles]}
`

// WithBundles replaces the demo's bundles, flag bundles and their
// reconciler (whose transform is a WASM module the harness does not run)
// with the same two types and no reconciler, for a test to run its own:
// Bundle (bundles/<namespace>/<name>.json) and FlagBundle
// (flagbundles/<namespace>/<name>.json), and one Bundle, default/web,
// whose spec.selector selects the flags labelled team=web.
func WithBundles() Option {
	return func(o *options) {
		for p := range o.files {
			if strings.HasPrefix(p, "bundles/") || strings.HasPrefix(p, "flagbundles/") {
				delete(o.files, p)
			}
		}
		o.files[".cup/bundles.yaml"] = []byte(bundleConfig)
		o.files["bundles/default/web.json"] = []byte(`{"apiVersion": "flags.cup.dev/v1alpha1", "kind": "Bundle", "metadata": {"namespace": "default", "name": "web"}, "spec": {"selector": {"matchLabels": {"team": "web"}}}}`)
	}
}

// Reconcile runs the reconcilers rs over srv (runtime.New over its
// ReconcileStore, set on the server for status, the graph and pokes after
// writes) until the test ends, with o's options; a nil o.Logger logs to
// the test.
func Reconcile(t testing.TB, srv *Server, rs []*runtime.Reconciler, o runtime.Options) *runtime.Runtime {
	t.Helper()
	if o.Logger == nil {
		o.Logger = Logger(t)
	}
	rt, err := runtime.New(srv.Server.ReconcileStore(), rs, o)
	if err != nil {
		t.Fatal(err)
	}
	srv.Server.SetReconcilers(rt)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return rt
}
