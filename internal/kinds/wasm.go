package kinds

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/wasm"
	"github.com/cup-dev/cup/internal/registry"
)

func init() {
	registry.Controllers.Register("wasm", registry.ControllerKind{Files: wasmFiles, New: newWASM})
}

func wasmFiles(raw json.RawMessage) ([]registry.File, error) {
	spec, err := wasm.ParseSpec(raw)
	if err != nil {
		return nil, err
	}
	return []registry.File{{What: "module", Path: spec.Path}}, nil
}

func newWASM(ctx context.Context, c registry.ControllerConfig) (controller.Controller, error) {
	spec, err := wasm.ParseSpec(c.Spec)
	if err != nil {
		return nil, err
	}
	module := c.Files[spec.Path]
	if c.WASM == nil || module == nil {
		return nil, errors.New("no WASM module loaded")
	}
	return wasm.New(ctx, c.WASM, c.Name, module, spec)
}
