package servertest

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing/fstest"

	"github.com/cup-dev/cup/examples"
	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/config"
	"github.com/cup-dev/cup/server"
)

// DemoFiles returns the files of the demo repository (examples/demo), by
// path, without README.md and without WASM modules, whether or not a build
// left one in the tree: the harness serves no WASM.
func DemoFiles() (map[string][]byte, error) {
	files, err := examples.DemoFiles()
	if err != nil {
		return nil, err
	}
	maps.DeleteFunc(files, func(p string, _ []byte) bool {
		return p == "README.md" || strings.HasSuffix(p, ".wasm")
	})
	return files, nil
}

// Types builds the served types of the configuration in dir of files (see
// internal/config), as cupd does (app.BuildTypes), but for controllers of
// the template type only: bindings to controllers of any other type (WASM)
// are left out, since the harness runs no WASM. Types are sorted by group,
// version and plural.
func Types(files map[string][]byte, dir string) ([]*server.Type, error) {
	fsys := fstest.MapFS{}
	for p, data := range files {
		fsys[p] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	set, err := config.Load(fsys, dir)
	if err != nil {
		return nil, err
	}
	kept := map[string]bool{}
	set.Controllers = slices.DeleteFunc(set.Controllers, func(c *config.Controller) bool {
		kept[c.Name] = c.Type == "template"
		return !kept[c.Name]
	})
	set.Bindings = slices.DeleteFunc(set.Bindings, func(b *config.Binding) bool { return !kept[b.Controller] })
	return app.BuildTypes(context.Background(), set, nil)
}
