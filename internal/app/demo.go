// The embedded demo: a repository built from an example to serve when none
// is given.

package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/cup-dev/cup/examples"
	"github.com/cup-dev/cup/internal/gitrepo"
)

// buildDemo creates the demo repository from the embedded examples, with
// the WASM module of its Segment type from [examples.DemoWASM], which
// builds it at the first start from a checkout. Without the module the
// demo is served without that type.
func (a *App) buildDemo(ctx context.Context, log *slog.Logger, st *startup) error {
	st.step(phaseDemo, "reading the demo's WASM modules (built with the go command when not embedded and not cached)")
	dir, err := os.MkdirTemp("", "cup-demo-*")
	if err != nil {
		return fmt.Errorf("creating the demo repository: %w", err)
	}
	a.cleanup = func() { _ = os.RemoveAll(dir) }
	files, err := examples.DemoFiles()
	if err != nil {
		return fmt.Errorf("reading the embedded demo: %w", err)
	}
	delete(files, "README.md")
	if b, err := examples.DemoWASM(ctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("building the demo's WASM module: %w", err)
		}
		log.Warn("serving the demo without its Segment type and its flag bundles: its WASM module is not embedded and cannot be built (run `make build`, or start cupd in a checkout with the go command on PATH)",
			"error", err)
		delete(files, examples.DemoWASMConfig)
		delete(files, examples.DemoBundleConfig) // the reconciler reads segments
	} else {
		files[examples.DemoWASMFile] = b
	}
	if _, ok := files[examples.DemoBundleConfig]; ok {
		if b, err := examples.FlagBundleWASM(ctx); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("building the demo's reconciler module: %w", err)
			}
			log.Warn("serving the demo without its flag bundles: the reconciler's WASM module is not embedded and cannot be built",
				"error", err)
			delete(files, examples.DemoBundleConfig)
		} else {
			files[examples.DemoBundleWASMFile] = b
		}
	}
	st.step(phaseDemo, "creating the demo repository")
	if _, err := gitrepo.Init(dir, "main", files, "Demo repository for cup"); err != nil {
		return fmt.Errorf("creating the demo repository: %w", err)
	}
	a.repo, a.demo = dir, true
	return nil
}
