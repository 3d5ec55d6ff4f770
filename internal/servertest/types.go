package servertest

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing/fstest"

	"github.com/cup-dev/cup/controller/template"
	"github.com/cup-dev/cup/examples"
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
// internal/config): a type per bound definition version, served by the
// template controller its binding names. Bindings to controllers of any
// other type (WASM) are left out: the harness runs no WASM. Types are
// sorted by group, version and plural.
func Types(files map[string][]byte, dir string) ([]*server.Type, error) {
	fsys := fstest.MapFS{}
	for p, data := range files {
		fsys[p] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	set, err := config.Load(fsys, dir)
	if err != nil {
		return nil, err
	}
	ctrls := map[string]*template.Controller{}
	for _, c := range set.Controllers {
		if c.Type != config.ControllerTemplate {
			continue
		}
		spec, err := template.ParseSpec(c.Spec)
		if err != nil {
			return nil, fmt.Errorf("%s: controller %q: %w", c.Location, c.Name, err)
		}
		tc, err := template.New(spec, template.WithCacheSize(0))
		if err != nil {
			return nil, fmt.Errorf("%s: controller %q: %w", c.Location, c.Name, err)
		}
		ctrls[c.Name] = tc
	}
	defs := map[string]*config.Definition{}
	for _, d := range set.Definitions {
		defs[d.Group+"/"+d.Names.Plural] = d
	}
	var types []*server.Type
	for _, b := range set.Bindings {
		ctrl := ctrls[b.Controller]
		if ctrl == nil {
			continue
		}
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
				Group:   d.Group,
				Version: v.Name,
				Names: server.Names{
					Kind: d.Names.Kind, Singular: d.Names.Singular, Plural: d.Names.Plural, ShortNames: d.Names.ShortNames,
				},
				Schema:       v.Schema,
				SchemaTarget: string(v.Target),
				Validate:     validator(v),
				Controller:   ctrl,
			})
		}
	}
	slices.SortFunc(types, func(a, b *server.Type) int {
		return strings.Compare(path.Join(a.Group, a.Version, a.Names.Plural), path.Join(b.Group, b.Version, b.Names.Plural))
	})
	return types, nil
}

// validator checks documents against v's schema, with field paths as
// cupd reports them ("spec.variants[0].key").
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
