// Loading the configuration and its modules, and building the server's types
// from them.

package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/wasm"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/config"
	"github.com/cup-dev/cup/internal/registry"
	"github.com/cup-dev/cup/server"
	"github.com/cup-dev/cup/source"
)

// configFolder is the folder inside a served repository that holds configuration.
const configFolder = ".cup"

// loadConfig reads the configuration directory and the .cup/ folder of the
// default branch, and merges them. It also reads the modules of WASM
// controllers, by controller name: a module's path is relative to the
// file declaring its controller, in the repository's commit for .cup/ and
// on disk for the configuration directory.
func loadConfig(ctx context.Context, src source.Source, dir string) (*config.Set, map[string]map[string][]byte, error) {
	snap, err := src.View(ctx, "")
	if err != nil {
		return nil, nil, fmt.Errorf("reading the default branch: %w", err)
	}
	modules := map[string]map[string][]byte{}
	set := &config.Set{}
	if _, err := fs.Stat(snap.FS, configFolder); err == nil {
		if set, err = config.Parse(snap.FS, configFolder); err != nil {
			return nil, nil, fmt.Errorf("configuration in the repository (commit %s): %w", snap.Commit[:12], err)
		}
		if err := readModules(set, snap.FS, modules); err != nil {
			return nil, nil, fmt.Errorf("configuration in the repository (commit %s): %w", snap.Commit[:12], err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("reading %s/ in the repository: %w", configFolder, err)
	}
	if dir != "" {
		fromDir, err := config.Parse(os.DirFS(dir), ".")
		if err != nil {
			return nil, nil, fmt.Errorf("configuration in %s: %w", dir, err)
		}
		if err := readModules(fromDir, os.DirFS(dir), modules); err != nil {
			return nil, nil, fmt.Errorf("configuration in %s: %w", dir, err)
		}
		for i, f := range fromDir.Skipped {
			fromDir.Skipped[i] = filepath.Join(dir, filepath.FromSlash(f))
		}
		if set, err = set.Merge(fromDir); err != nil {
			return nil, nil, err
		}
	} else if set, err = set.Merge(&config.Set{}); err != nil {
		return nil, nil, fmt.Errorf("configuration in the repository (commit %s): %w", snap.Commit[:12], err)
	}
	if len(set.Bindings) == 0 {
		return nil, nil, fmt.Errorf("no APIBinding configured: add configuration to --config or to %s/ in the repository", configFolder)
	}
	return set, modules, nil
}

// maxModuleBytes bounds the size of a file a controller needs (a WASM
// module).
const maxModuleBytes = 256 << 20

// readModules reads into modules the files each controller of set needs
// (the module of a WASM controller), as its kind in registry.Controllers
// names them, and each reconciler's WASM module (under
// reconcilerModules(name)), from fsys, where the set was loaded from.
func readModules(set *config.Set, fsys fs.FS, modules map[string]map[string][]byte) error {
	type needs struct {
		who, key string
		loc      config.Location
		files    []registry.File
	}
	var all []needs
	for _, c := range set.Controllers {
		kind, ok := registry.Controllers.Lookup(c.Type)
		if !ok || kind.Files == nil {
			continue
		}
		files, err := kind.Files(c.Spec)
		if err != nil {
			return fmt.Errorf("%s: controller %q: %w", c.Location, c.Name, err)
		}
		all = append(all, needs{fmt.Sprintf("controller %q", c.Name), c.Name, c.Location, files})
	}
	for _, r := range set.Reconcilers {
		if r.CUE != nil {
			if r.CUE.SchemaPath != "" {
				all = append(all, needs{fmt.Sprintf("reconciler %q", r.Name), reconcilerModules(r.Name), r.Location, []registry.File{{What: "schema", Path: r.CUE.SchemaPath}}})
			}
			continue
		}
		spec, err := wasm.ParseSpec(r.WASM)
		if err != nil {
			return fmt.Errorf("%s: reconciler %q: spec.transform.wasm: %w", r.Location, r.Name, err)
		}
		all = append(all, needs{fmt.Sprintf("reconciler %q", r.Name), reconcilerModules(r.Name), r.Location, []registry.File{{What: "module", Path: spec.Path}}})
	}
	for _, n := range all {
		for _, f := range n.files {
			if strings.HasPrefix(f.Path, "/") {
				// path.Join would quietly make it relative, and the error
				// would name a file nobody wrote.
				return fmt.Errorf("%s: %s: %s path %q is absolute: give it relative to the folder of %s, inside the configuration's tree",
					n.loc, n.who, f.What, f.Path, path.Base(n.loc.File))
			}
			p := path.Join(path.Dir(n.loc.File), f.Path)
			if !fs.ValidPath(p) {
				return fmt.Errorf("%s: %s: %s path %q leaves the configuration's tree", n.loc, n.who, f.What, f.Path)
			}
			fi, err := fs.Stat(fsys, p)
			if err == nil && fi.Size() > maxModuleBytes {
				err = fmt.Errorf("%d bytes, more than %d", fi.Size(), maxModuleBytes)
			}
			var b []byte
			if err == nil {
				b, err = fs.ReadFile(fsys, p)
			}
			if err != nil {
				return fmt.Errorf("%s: %s: reading %s %s: %w", n.loc, n.who, f.What, p, err)
			}
			if modules[n.key] == nil {
				modules[n.key] = map[string][]byte{}
			}
			modules[n.key][f.Path] = b
		}
	}
	return nil
}

// reconcilerModules is the key of a reconciler's files in the modules
// map: a space keeps it apart from every controller's name, which has none.
func reconcilerModules(name string) string { return "Reconciler " + name }

// Modules are the files the controllers of a configuration need (WASM
// modules) and the runtime that runs WASM modules.
type Modules struct {
	Runtime *wasm.Runtime
	// Files holds the files each controller's kind named, by controller
	// name and then by the path the controller's spec gives.
	Files map[string]map[string][]byte
}

// LoadTypes reads the configuration in directory dir of fsys (and the
// modules of its WASM controllers, which rt runs) and builds its served
// types, as cupd does for a repository's .cup/ folder.
func LoadTypes(ctx context.Context, fsys fs.FS, dir string, rt *wasm.Runtime) ([]*server.Type, error) {
	set, err := config.Load(fsys, dir)
	if err != nil {
		return nil, err
	}
	modules := map[string]map[string][]byte{}
	if err := readModules(set, fsys, modules); err != nil {
		return nil, err
	}
	return BuildTypes(ctx, set, &Modules{Runtime: rt, Files: modules})
}

// BuildTypes builds the served types of a configuration: a controller per
// Controller resource, by the factory its type registered in
// registry.Controllers (WASM modules are compiled now, with mods), a type
// per bound definition version.
func BuildTypes(ctx context.Context, set *config.Set, mods *Modules) ([]*server.Type, error) {
	if mods == nil {
		mods = &Modules{}
	}
	ctrls := map[string]controller.Controller{}
	for _, c := range set.Controllers {
		kind, ok := registry.Controllers.Lookup(c.Type)
		if !ok {
			return nil, fmt.Errorf("%s: controller %q: type %q is not supported by this build", c.Location, c.Name, c.Type)
		}
		ctrl, err := kind.New(ctx, registry.ControllerConfig{Name: c.Name, Spec: c.Spec, Files: mods.Files[c.Name], WASM: mods.Runtime})
		if err != nil {
			return nil, fmt.Errorf("%s: controller %q: %w", c.Location, c.Name, err)
		}
		ctrls[c.Name] = ctrl
	}
	defs := map[string]*config.Definition{}
	for _, d := range set.Definitions {
		defs[d.Group+"/"+d.Names.Plural] = d
	}
	var types []*server.Type
	for _, b := range set.Bindings {
		for _, ref := range b.Resources {
			d := defs[ref.Group+"/"+ref.Plural]
			if d == nil {
				return nil, fmt.Errorf("%s: binding %q: no definition of %s/%s", b.Location, b.Name, ref.Group, ref.Plural)
			}
			v, ok := d.Version(ref.Version)
			if !ok {
				return nil, fmt.Errorf("%s: binding %q: definition %s has no version %q", b.Location, b.Name, d.Name, ref.Version)
			}
			types = append(types, &server.Type{
				Type:           controller.Type{Group: d.Group, Version: v.Name, Kind: d.Names.Kind, Plural: d.Names.Plural},
				Singular:       d.Names.Singular,
				ShortNames:     d.Names.ShortNames,
				Schema:         v.Schema,
				SchemaTarget:   string(v.Target),
				PrinterColumns: printerColumns(v.PrinterColumns),
				Validate:       validator(v),
				Controller:     ctrls[b.Controller],
			})
		}
	}
	sort.Slice(types, func(i, j int) bool {
		return path.Join(types[i].Group, types[i].Version, types[i].Plural) < path.Join(types[j].Group, types[j].Version, types[j].Plural)
	})
	return types, nil
}

// validator adapts a definition version's JSON Schema to the server.
func validator(v *config.Version) func(any) []server.FieldViolation {
	return func(doc any) []server.FieldViolation {
		err := v.Validate(doc)
		if err == nil {
			return nil
		}
		var ve *config.ValidationError
		if !errors.As(err, &ve) {
			return []server.FieldViolation{{Description: err.Error()}}
		}
		out := make([]server.FieldViolation, 0, len(ve.Violations))
		for _, x := range ve.Violations {
			out = append(out, server.FieldViolation{Field: fieldPath(x.Path), Description: x.Message})
		}
		return out
	}
}

// fieldPath turns a JSON pointer ("/spec/variants/0/key") into a field path
// ("spec.variants[0].key").
func fieldPath(pointer string) string {
	if pointer == "" || pointer == "/" {
		return ""
	}
	var b strings.Builder
	for i, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if _, err := strconv.Atoi(tok); err == nil && i > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// printerColumns converts a version's printer columns for discovery.
func printerColumns(cols []config.PrinterColumn) []*cupv1alpha1.PrinterColumn {
	var out []*cupv1alpha1.PrinterColumn
	for _, c := range cols {
		out = append(out, &cupv1alpha1.PrinterColumn{Name: c.Name, Type: c.Type, JsonPath: c.JSONPath,
			Description: c.Description, Priority: c.Priority, Format: c.Format})
	}
	return out
}
