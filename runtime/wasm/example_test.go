package wasm_test

import (
	"context"
	"fmt"
	"log"
	"testing"

	"github.com/cup-dev/cup/controller"
	cwasm "github.com/cup-dev/cup/controller/wasm"
	"github.com/cup-dev/cup/runtime"
	"github.com/cup-dev/cup/runtime/wasm"
)

func wasmNew(t testing.TB, module []byte) (*wasm.Transform, error) {
	return wasm.New(t.Context(), shared, "bad", module, &cwasm.Spec{Path: "bad.wasm"})
}

// This runs the example reconciler of examples/reconcilers/flagbundle,
// which gathers a Bundle's Flags and Segments into a FlagBundle.
func Example() {
	ctx := context.Background()
	rt, err := cwasm.NewRuntime()
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)

	module := modules["flagbundle"] // e.g. from os.ReadFile
	tr, err := wasm.New(ctx, rt, "flagbundle", module, &cwasm.Spec{Path: "flagbundle.wasm"})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close(ctx)

	resource := func(data string) *controller.Resource {
		r, err := controller.ParseResource([]byte(data))
		if err != nil {
			log.Fatal(err)
		}
		return r
	}
	resp, err := tr.Reconcile(ctx, &runtime.Request{
		Reconciler: "flag-bundles",
		Primary:    resource(`{"apiVersion": "flags.cup.dev/v1alpha1", "kind": "Bundle", "metadata": {"namespace": "default", "name": "web"}}`),
		Inputs: []*controller.Resource{
			resource(`{"apiVersion": "flags.cup.dev/v1alpha1", "kind": "Flag", "metadata": {"namespace": "default", "name": "dark-mode"}, "spec": {"rollout": 0.1}}`),
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range resp.Outputs {
		fmt.Println(o.Kind, o.Metadata.Namespace, o.Metadata.Name, string(o.Spec))
	}

	_, err = tr.Reconcile(ctx, &runtime.Request{
		Reconciler: "flag-bundles",
		Primary:    resource(`{"apiVersion": "flags.cup.dev/v1alpha1", "kind": "Bundle", "metadata": {"namespace": "default", "name": "web"}}`),
		Inputs:     []*controller.Resource{resource(`{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "key"}}`)},
	})
	fmt.Println(err)
	// Output:
	// FlagBundle default web {"flags":{"dark-mode":{"rollout":0.1}},"segments":{}}
	// module "flagbundle": reconcile flag-bundles: invalid input: input v1 Secret "key": a Bundle gathers only Flags and Segments of flags.cup.dev/v1alpha1
}
