package app

import (
	"context"
	"fmt"
	"path"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/wasm"
	"github.com/cup-dev/cup/internal/config"
	"github.com/cup-dev/cup/runtime"
	"github.com/cup-dev/cup/runtime/cuelayers"
	rwasm "github.com/cup-dev/cup/runtime/wasm"
	"github.com/cup-dev/cup/server"
	"github.com/cup-dev/cup/source"
)

// BuildReconcilers builds the reconcilers of a configuration over the
// served types (which give each type its kind), compiling their WASM
// modules with mods; CUE transforms read layer files and commit times
// from store.
func BuildReconcilers(ctx context.Context, set *config.Set, types []*server.Type, mods *Modules, store cuelayers.Store) ([]*runtime.Reconciler, error) {
	byRef := map[controller.Type]controller.Type{}
	for _, t := range types {
		byRef[controller.Type{Group: t.Group, Version: t.Version, Plural: t.Plural}] = t.Type
	}
	served := func(r *config.Reconciler, field string, ref controller.Type) (controller.Type, error) {
		t, ok := byRef[ref]
		if !ok {
			return controller.Type{}, fmt.Errorf("%s: reconciler %q: %s: %s/%s/%s is not served: bind it in an APIBinding",
				r.Location, r.Name, field, ref.Group, ref.Version, ref.Plural)
		}
		return t, nil
	}
	var out []*runtime.Reconciler
	for _, c := range set.Reconcilers {
		r := &runtime.Reconciler{
			Name: c.Name,
			Write: runtime.Write{Mode: runtime.WriteMode(c.Mode), BatchWindow: c.BatchWindow,
				MaxWritesPerMinute: c.MaxWritesPerMinute},
		}
		var err error
		if r.For, err = served(c, "spec.for", c.For); err != nil {
			return nil, err
		}
		for i, w := range c.Watches {
			t, err := served(c, fmt.Sprintf("spec.watches[%d]", i), w.Type)
			if err != nil {
				return nil, err
			}
			r.Watches = append(r.Watches, runtime.Watch{Type: t, Mapper: runtime.Mapper{Kind: runtime.MapperKind(w.Mapper), Path: w.Path, Key: w.Key},
				Namespace: w.Namespace})
		}
		for i, o := range c.Outputs {
			t, err := served(c, fmt.Sprintf("spec.outputs[%d]", i), o.Type)
			if err != nil {
				return nil, err
			}
			r.Outputs = append(r.Outputs, runtime.Output{Type: t, Exclusive: o.Exclusive})
		}
		if c.CUE != nil {
			if r.Transform, err = buildCUE(c, served, mods, store); err != nil {
				return nil, err
			}
			r.UpdatesPrimary = c.CUE.Reference != ""
			out = append(out, r)
			continue
		}
		spec, err := wasm.ParseSpec(c.WASM)
		if err != nil {
			return nil, fmt.Errorf("%s: reconciler %q: spec.transform.wasm: %w", c.Location, c.Name, err)
		}
		module := mods.Files[reconcilerModules(c.Name)][spec.Path]
		if mods.Runtime == nil || module == nil {
			return nil, fmt.Errorf("%s: reconciler %q: no WASM module loaded", c.Location, c.Name)
		}
		if r.Transform, err = rwasm.New(ctx, mods.Runtime, c.Name, module, spec); err != nil {
			return nil, fmt.Errorf("%s: reconciler %q: %w", c.Location, c.Name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// buildCUE builds the cue transform of reconciler c: its schema is inline
// or a file mods holds.
func buildCUE(c *config.Reconciler, served func(*config.Reconciler, string, controller.Type) (controller.Type, error), mods *Modules, store cuelayers.Store) (runtime.Transform, error) {
	cc := cuelayers.Config{Schema: c.CUE.SchemaInline, SchemaPath: "<inline>", Format: c.CUE.Format, Reference: c.CUE.Reference,
		GCAfter: c.CUE.GCAfter, Timeout: c.CUE.Timeout, MaxMemory: c.CUE.MaxMemoryBytes}
	var err error
	if c.CUE.Layers != (controller.Type{}) {
		if cc.Layers, err = served(c, "spec.transform.cue.layers", c.CUE.Layers); err != nil {
			return nil, err
		}
	}
	if cc.Output, err = served(c, "spec.transform.cue.output.resource", c.CUE.Output); err != nil {
		return nil, err
	}
	if c.CUE.SchemaPath != "" {
		schema := mods.Files[reconcilerModules(c.Name)][c.CUE.SchemaPath]
		if schema == nil {
			return nil, fmt.Errorf("%s: reconciler %q: spec.transform.cue.schema: %s was not loaded", c.Location, c.Name, c.CUE.SchemaPath)
		}
		cc.Schema, cc.SchemaPath = string(schema), path.Join(path.Dir(c.Location.File), c.CUE.SchemaPath)
	}
	t, err := cuelayers.New(cc, store)
	if err != nil {
		return nil, fmt.Errorf("%s: reconciler %q: spec.transform.cue: %w", c.Location, c.Name, err)
	}
	return t, nil
}

// checkWriteModes refuses reconcilers whose write mode, where they set
// one, the source cannot honour: a direct reconciler when cupd writes change sets (its outputs
// would become change sets it did not ask for), a proposal reconciler when
// cupd commits on the branch (they would be committed without review).
func checkWriteModes(set *config.Set, mode source.WriteMode) error {
	for _, c := range set.Reconcilers {
		switch {
		case c.Mode == string(runtime.WriteDirect) && mode == source.ModeBranch:
			return fmt.Errorf("%s: reconciler %q: spec.write.mode is direct, but cupd writes change sets (--write-mode %s): set spec.write.mode: proposal, or run cupd with --reconcile=false",
				c.Location, c.Name, mode)
		case c.Mode == string(runtime.WriteProposal) && mode == source.ModeDirect:
			return fmt.Errorf("%s: reconciler %q: spec.write.mode is proposal, but cupd commits on the branch: run it with --write-mode proposal (or branch), or set spec.write.mode: direct",
				c.Location, c.Name)
		}
	}
	return nil
}
