package config_test

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/internal/config"
)

// FuzzLoad loads fuzzed bytes as the one YAML or JSON file of a
// configuration directory. Whatever the bytes: Load and Parse do not panic
// and return either a Set or an *Error wrapping ErrInvalid whose every
// problem, and the error's message, names the file; everything loaded is
// located in that file; Load fails whenever Parse does; and loading is
// deterministic.
func FuzzLoad(f *testing.F) {
	// Every configuration file of the package's tests, as JSON or YAML as
	// its name says.
	err := fs.WalkDir(os.DirFS("testdata"), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(p, "fuzz/") {
			return err
		}
		switch path.Ext(p) {
		case ".json", ".yaml", ".yml":
			data, err := os.ReadFile("testdata/" + p)
			if err != nil {
				return err
			}
			f.Add(data, path.Ext(p) == ".json")
		}
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []struct {
		data   string
		asJSON bool
	}{
		{"", false},
		{"", true},
		{"---\n---\n", false},
		{"[]", true},
		{"[1, null, {}]", true},
		{`{"apiVersion": "cup.dev/v1alpha1", "kind": "Controller", "metadata": {"name": "x"}, "spec": {"type": "template"}} {}`, true},
		{"a: &a [*a, *a]\nb: *a\n", false},
		{"apiVersion: cup.dev/v1alpha1\nkind: Controller\nmetadata: {name: x, name: y}\nspec: {type: wasm}\n", false},
		{"apiVersion: cup.dev/v1alpha1\nkind: ResourceDefinition\nmetadata: {name: a.b}\nspec:\n  group: b\n  names: {kind: A, singular: a, plural: as}\n  versions:\n    v1:\n      schema: {$ref: 'https://example.com/s.json'}\n", false},
		{"\xef\xbb\xbf\t- \x00", false},
	} {
		f.Add([]byte(s.data), s.asJSON)
	}
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool) {
		if len(data) > 16<<10 {
			t.Skip() // configuration files are small; big inputs only slow the fuzzer
		}
		name := "cup/config.yaml"
		if asJSON {
			name = "cup/config.json"
		}
		fsys := fstest.MapFS{name: {Data: data}}

		parsed, parseErr := config.Parse(fsys, ".")
		checkLoaded(t, "Parse", name, parsed, parseErr)
		loaded, loadErr := config.Load(fsys, ".")
		checkLoaded(t, "Load", name, loaded, loadErr)
		if parseErr != nil && loadErr == nil {
			t.Fatalf("Parse failed (%v) but Load succeeded", parseErr)
		}
		again, againErr := config.Load(fsys, ".")
		if setString(again) != setString(loaded) || errorString(againErr) != errorString(loadErr) {
			t.Fatalf("Load is not deterministic: %q, %v; then %q, %v", setString(loaded), loadErr, setString(again), againErr)
		}
	})
}

func checkLoaded(t *testing.T, op, file string, s *config.Set, err error) {
	t.Helper()
	if err != nil {
		if s != nil {
			t.Fatalf("%s returned a Set and the error %v", op, err)
		}
		var ce *config.Error
		if !errors.As(err, &ce) || !errors.Is(err, config.ErrInvalid) {
			t.Fatalf("%s: error %v (%T), want a *config.Error", op, err, err)
		}
		if len(ce.Problems) == 0 {
			t.Fatalf("%s: *config.Error without problems", op)
		}
		for _, p := range ce.Problems {
			if p.File != file || p.Document < 0 || p.Message == "" {
				t.Fatalf("%s: problem %+v is not located in %s, or says nothing", op, p, file)
			}
		}
		if !strings.Contains(err.Error(), file) {
			t.Fatalf("%s: error %q does not name %s", op, err, file)
		}
		return
	}
	if s == nil {
		t.Fatalf("%s returned neither a Set nor an error", op)
	}
	var locs []config.Location
	for _, d := range s.Definitions {
		locs = append(locs, d.Location)
	}
	for _, c := range s.Controllers {
		locs = append(locs, c.Location)
	}
	for _, b := range s.Bindings {
		locs = append(locs, b.Location)
	}
	for _, l := range locs {
		if l.File != file {
			t.Fatalf("%s: a resource is located at %v, want %s", op, l, file)
		}
	}
}

func setString(s *config.Set) string {
	if s == nil {
		return ""
	}
	return summary(s)
}

func errorString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
