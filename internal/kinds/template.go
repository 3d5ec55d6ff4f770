package kinds

import (
	"context"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/template"
	"github.com/cup-dev/cup/internal/registry"
)

func init() {
	registry.Controllers.Register("template", registry.ControllerKind{New: newTemplate})
}

func newTemplate(_ context.Context, c registry.ControllerConfig) (controller.Controller, error) {
	spec, err := template.ParseSpec(c.Spec)
	if err != nil {
		return nil, err
	}
	// No decode cache: the server lists through ListKeyed and keeps
	// decoded resources by content itself, so a second copy would only
	// cost memory.
	return template.New(spec, template.WithCacheSize(0))
}
