// The embedded demo: a repository built from an example to serve when none
// is given.

package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/cup-dev/cup/controller/wasm"
	"github.com/cup-dev/cup/examples"
	"github.com/cup-dev/cup/internal/gitrepo"
)

// buildDemo creates the demo repository from the embedded examples, with
// the WASM module of its Segment type from [examples.DemoWASM], which
// builds it at the first start from a checkout. Without the module the
// demo is served without that type.
//
// The modules start compiling with rt as soon as they are read, while the
// repository is made and the configuration read; finish, which must be
// called whatever the error, waits for that and lets go of them, so it
// belongs after the controllers that use them are built.
func (a *App) buildDemo(ctx context.Context, log *slog.Logger, st *startup, rt *wasm.Runtime) (finish func(context.Context) error, err error) {
	finish = func(context.Context) error { return nil }
	st.step(phaseDemo, "reading the demo's WASM modules (built with the go command when not embedded and not cached)")
	dir, err := os.MkdirTemp("", "cup-demo-*")
	if err != nil {
		return finish, fmt.Errorf("creating the demo repository: %w", err)
	}
	a.cleanup = func() { _ = os.RemoveAll(dir) }
	files, err := examples.DemoFiles()
	if err != nil {
		return finish, fmt.Errorf("reading the embedded demo: %w", err)
	}
	delete(files, "README.md")
	// A binary made by make build embeds the modules, and files holds them
	// already: read again, they would cost another copy of 8 MB.
	if _, ok := files[examples.DemoWASMFile]; ok {
		// embedded
	} else if b, err := examples.DemoWASM(ctx); err != nil {
		if ctx.Err() != nil {
			return finish, fmt.Errorf("building the demo's WASM module: %w", err)
		}
		log.Warn("serving the demo without its Segment type and its flag bundles: its WASM module is not embedded and cannot be built (run `make build`, or start cupd in a checkout with the go command on PATH)",
			"error", err)
		delete(files, examples.DemoWASMConfig)
		delete(files, examples.DemoBundleConfig) // the reconciler reads segments
	} else {
		files[examples.DemoWASMFile] = b
	}
	if _, ok := files[examples.DemoBundleConfig]; ok {
		if _, ok := files[examples.DemoBundleWASMFile]; ok {
			// embedded
		} else if b, err := examples.FlagBundleWASM(ctx); err != nil {
			if ctx.Err() != nil {
				return finish, fmt.Errorf("building the demo's reconciler module: %w", err)
			}
			log.Warn("serving the demo without its flag bundles: the reconciler's WASM module is not embedded and cannot be built",
				"error", err)
			delete(files, examples.DemoBundleConfig)
		} else {
			files[examples.DemoBundleWASMFile] = b
		}
	}
	var mods []wasm.Module
	for _, name := range []string{examples.DemoWASMFile, examples.DemoBundleWASMFile} {
		if b, ok := files[name]; ok {
			mods = append(mods, wasm.Module{Name: name, Bytes: b})
		}
	}
	if len(mods) > 0 {
		done := make(chan func(context.Context) error, 1)
		go func() { done <- rt.Precompile(ctx, mods, nil) }()
		finish = func(ctx context.Context) error { return (<-done)(ctx) }
	}
	st.step(phaseDemo, "creating the demo repository")
	// Stored uncompressed: the repository lasts as long as the process, and
	// compressing 8 MB of WASM, then inflating it again to read the
	// configuration, would take longer than compiling it from the cache.
	if _, err := gitrepo.Init(dir, "main", files, "Demo repository for cup", gitrepo.Uncompressed()); err != nil {
		return finish, fmt.Errorf("creating the demo repository: %w", err)
	}
	a.repo, a.demo = dir, true
	return finish, nil
}
