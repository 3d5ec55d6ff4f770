// Package web serves cup's browser UI: the Preact app in this folder, which
// `make ui` builds with Vite into dist/app (index.html and assets/ with
// content-hashed names) and the binary embeds. The app talks to cupd only
// through the generated client (gen/ts) over gRPC-Web, so what this
// package serves holds no data: cupd serves it outside authentication,
// and the app asks for credentials itself.
//
// The build is not committed. A binary built without it embeds only
// dist/README.md: [Dist] is then empty, and the [Handler] answers 503 and
// says how to build the UI.
package web

import (
	"embed"
	"io/fs"
)

// dist is web/dist: the placeholder README.md, and app/ once `make ui`
// ran. "all:" keeps files whose names begin with "." or "_", which Vite
// may give chunks.
//
//go:embed all:dist
var dist embed.FS

// Dist returns the UI build embedded in this binary, the files `make ui`
// wrote into web/dist/app: index.html and assets/. Without a build it
// returns an empty file system.
func Dist() fs.FS {
	if _, err := fs.Stat(dist, "dist/app/index.html"); err == nil {
		if sub, err := fs.Sub(dist, "dist/app"); err == nil { // fails only for an invalid name
			return sub
		}
	}
	return embed.FS{} // the zero FS is empty
}
