// Package examples holds the demo repository that cupd serves when started
// without a repository.
package examples

import (
	"embed"
	"io/fs"
	"strings"
)

// Demo is the demo repository's files, rooted at "demo".
//
//go:embed all:demo
var Demo embed.FS

// DemoFiles returns every file of the demo repository, README.md
// included, keyed by its path below "demo" ("flags/default/….yaml").
func DemoFiles() (map[string][]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(Demo, "demo", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Demo, p)
		if err != nil {
			return err
		}
		files[strings.TrimPrefix(p, "demo/")] = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}
