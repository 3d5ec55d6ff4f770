package wasm_test

import (
	"testing"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/controllertest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	controllertest.Run(t, func(t *testing.T) controller.Controller {
		return newController(t, nil, "conform", nil)
	})
}

// TestExampleConformance runs the suite against the example controller,
// which keeps every resource of a namespace in one YAML file.
func TestExampleConformance(t *testing.T) {
	t.Parallel()
	controllertest.Run(t, func(t *testing.T) controller.Controller {
		return newController(t, nil, "flagfile", nil)
	})
}
