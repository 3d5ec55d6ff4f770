package template_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/controllertest"
	"github.com/cup-dev/cup/controller/template"
)

func ExampleNew() {
	// The spec of a Controller configuration resource, here in the original
	// Cup's terms.
	spec, err := template.ParseSpec(json.RawMessage(`{
		"directory_template": "{{ .Namespace }}/{{ .Plural }}/*.yaml",
		"path_template": "{{ .Namespace }}/{{ .Plural }}/{{ .Name }}.yaml"
	}`))
	if err != nil {
		log.Fatal(err)
	}
	c, err := template.New(spec)
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	tree, err := controllertest.NewMemFS(nil)
	if err != nil {
		log.Fatal(err)
	}
	flags := controller.Type{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Flag", Plural: "flags"}
	err = c.Put(ctx, &controller.PutRequest{FS: tree, Type: flags, Resource: &controller.Resource{
		APIVersion: flags.APIVersion(),
		Kind:       flags.Kind,
		Metadata:   controller.Metadata{Namespace: "default", Name: "new-login", Labels: map[string]string{"team": "identity"}},
		Spec:       json.RawMessage(`{"enabled": true}`),
	}})
	if err != nil {
		log.Fatal(err)
	}
	for name, data := range tree.Files() {
		fmt.Printf("%s:\n%s", name, data)
	}

	list, err := c.List(ctx, &controller.ListRequest{FS: tree, Type: flags, Namespace: "default"})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range list {
		fmt.Printf("listed %s/%s: %s\n", r.Metadata.Namespace, r.Metadata.Name, r.Spec)
	}
	// Output:
	// default/flags/new-login.yaml:
	// apiVersion: flags.cup.dev/v1alpha1
	// kind: Flag
	// metadata:
	//   labels:
	//     team: identity
	//   name: new-login
	//   namespace: default
	// spec:
	//   enabled: true
	// listed default/new-login: {"enabled":true}
}
