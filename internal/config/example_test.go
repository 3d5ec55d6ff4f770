package config_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing/fstest"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/config"
)

func ExampleLoad() {
	fsys := fstest.MapFS{
		".cup/flags.yaml": {Data: []byte(`apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: flags.flipt.io}
spec:
  group: flipt.io
  names: {kind: Flag, singular: flag, plural: flags}
  versions:
    v1:
      schema:
        type: object
        properties:
          enabled: {type: boolean}
---
apiVersion: cup.dev/v1alpha1
kind: Controller
metadata: {name: files}
spec:
  type: template
  spec: {encoding: yaml}
---
apiVersion: cup.dev/v1alpha1
kind: APIBinding
metadata: {name: flags}
spec:
  controller: files
  resources: [flipt.io/v1/flags]
`)},
	}
	set, err := config.Load(fsys, ".cup")
	if err != nil {
		fmt.Println(err)
		return
	}
	ref := controller.Type{Group: "flipt.io", Version: "v1", Plural: "flags"}
	binding, _ := set.BindingFor(ref)
	ctrl, _ := set.Controller(binding.Controller)
	fmt.Printf("%s/%s/%s is served by %s controller %q with %s (%s)\n", ref.Group, ref.Version, ref.Plural, ctrl.Type, ctrl.Name, ctrl.Spec, binding.Location)

	definition, _ := set.Definition(ref.Group, ref.Plural)
	version, _ := definition.Version(ref.Version)
	var resource any
	_ = json.Unmarshal([]byte(`{"kind": "Flag", "spec": {"enabled": "yes"}}`), &resource)
	var ve *config.ValidationError
	if err := version.Validate(resource); errors.As(err, &ve) {
		for _, v := range ve.Violations {
			fmt.Printf("%s: %s\n", v.Path, v.Message)
		}
	}
	// Output:
	// flipt.io/v1/flags is served by template controller "files" with {"encoding":"yaml"} (.cup/flags.yaml (document 3))
	// /spec/enabled: expected boolean, but got string
}

func ExampleError() {
	fsys := fstest.MapFS{
		"controllers.yaml": {Data: []byte(`apiVersion: cup.dev/v1alpha1
kind: Controller
metadata: {name: files}
spec: {type: templat, spce: {}}
`)},
	}
	_, err := config.Load(fsys, ".")
	fmt.Println(err)
	// Output:
	// invalid configuration: controllers.yaml: Controller "files": unknown field "spec.spce"
}
