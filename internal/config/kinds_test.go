package config_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/internal/config"
	_ "github.com/cup-dev/cup/internal/kinds" // the built-in controller types
	"github.com/cup-dev/cup/internal/registry"
)

func TestControllerTypesComeFromTheRegistry(t *testing.T) {
	t.Parallel()
	doc := func(typ string) fstest.MapFS {
		return fstest.MapFS{"c.yaml": &fstest.MapFile{Data: []byte(
			"apiVersion: cup.dev/v1alpha1\nkind: Controller\nmetadata: {name: c}\nspec: {type: " + typ + "}\n")}}
	}
	names := registry.Controllers.Names()
	if len(names) < 2 {
		t.Fatalf("registry.Controllers = %v, want the built-in types template and wasm", names)
	}
	for _, typ := range names {
		if _, err := config.Parse(doc(typ), "."); err != nil {
			t.Errorf("Parse(type %s) = %v, want it accepted: the type is registered", typ, err)
		}
	}
	_, err := config.Parse(doc("lambda"), ".")
	if want := `spec.type "lambda" is not one of ` + strings.Join(names, ", "); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Parse(type lambda) = %v, want it refused, saying %q", err, want)
	}
}
