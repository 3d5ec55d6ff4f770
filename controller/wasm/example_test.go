package wasm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"maps"
	"slices"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/controllertest"
	"github.com/cup-dev/cup/controller/wasm"
)

// This runs a controller module, testdata/conform, which keeps each
// resource in its own file.
func Example() {
	ctx := context.Background()
	rt, err := wasm.NewRuntime()
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)

	spec, err := wasm.ParseSpec([]byte(`{"path": "conform.wasm", "timeout": "5s"}`))
	if err != nil {
		log.Fatal(err)
	}
	module := modules["conform"] // the bytes of spec.Path, e.g. from os.ReadFile
	c, err := wasm.New(ctx, rt, "flags", module, spec)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)

	typ := controller.Type{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Flag", Plural: "flags"}
	tree, err := controllertest.NewMemFS(nil)
	if err != nil {
		log.Fatal(err)
	}
	err = c.Put(ctx, &controller.PutRequest{FS: tree, Type: typ, Resource: &controller.Resource{
		APIVersion: typ.APIVersion(),
		Kind:       typ.Kind,
		Metadata:   controller.Metadata{Namespace: "default", Name: "new-login"},
		Spec:       json.RawMessage(`{"enabled": true}`),
	}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(slices.Sorted(maps.Keys(tree.Files())))

	r, err := c.Get(ctx, &controller.GetRequest{FS: tree.Snapshot(), Type: typ, Namespace: "default", Name: "new-login"})
	if err != nil {
		log.Fatal(err)
	}
	var spec2 bytes.Buffer
	_ = json.Compact(&spec2, r.Spec)
	fmt.Println(r.Metadata.Name, spec2.String())

	_, err = c.Get(ctx, &controller.GetRequest{FS: tree.Snapshot(), Type: typ, Namespace: "default", Name: "old-login"})
	fmt.Println(err)
	// Output:
	// [flags.cup.dev/v1alpha1/flags/default/new-login.json]
	// new-login {"enabled":true}
	// module "flags": get flags.cup.dev/v1alpha1 Flag default/old-login: not found: Flag default/old-login not found
}
