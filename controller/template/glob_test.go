package template_test

import (
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/controller/template"
)

// TestGlobFilesAgreesWithFSGlob compares globFiles with fs.Glob less
// directories, on patterns with glob syntax in one element or several.
func TestGlobFilesAgreesWithFSGlob(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"items/default/00/a.json":        {},
		"items/default/00/b.yaml":        {},
		"items/default/3f/c.json":        {},
		"items/default/3f/nested/d.json": {},
		"items/default/ff.json":          {},
		"items/default/zz/e.json":        {},
		"items/staging/00/f.json":        {},
		"items/file-not-dir":             {},
		"other/default/00/g.json":        {},
		"top.json":                       {},
	}
	for _, pattern := range []string{
		"items/default/*/*.json",
		"items/*/00/*.json",
		"items/*/*/*",
		"*/default/*/*.json",
		"items/default/[0-9a-f][0-9a-f]/*.json",
		"items/default/?f/*.json",
		"items/file-not-dir/*/*.json",
		"items/missing/*/*.json",
		"items/default/*.json",
		"*.json",
		"items/default/00/a.json",
	} {
		want, err := fs.Glob(fsys, pattern)
		if err != nil {
			t.Fatal(err)
		}
		want = slices.DeleteFunc(want, func(m string) bool {
			fi, err := fs.Stat(fsys, m)
			return err == nil && fi.IsDir()
		})
		got, err := template.GlobFiles(fsys, pattern)
		if err != nil {
			t.Fatalf("globFiles(%q): %v", pattern, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("globFiles(%q) = %q, want %q", pattern, got, want)
		}
	}
}
