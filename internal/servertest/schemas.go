package servertest

import (
	"embed"
	"io/fs"
	"strings"
)

//go:embed all:testdata/schemas
var schemas embed.FS

// SchemaFiles returns the files of a repository (testdata/schemas) whose
// definitions use what OpenAPI 3.0 cannot say as JSON Schema does: $ref
// cycles, $defs and anchors, const, type lists with null, numeric
// exclusive bounds, tuples, patternProperties, oneOf and not over
// keywords OpenAPI lacks, numbers that float64 cannot hold, draft-07 and
// 2020-12; with one resource of each type, in namespace default.
func SchemaFiles() (map[string][]byte, error) {
	const root = "testdata/schemas"
	files := map[string][]byte{}
	err := fs.WalkDir(schemas, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := schemas.ReadFile(p)
		files[strings.TrimPrefix(p, root+"/")] = b
		return err
	})
	return files, err
}
