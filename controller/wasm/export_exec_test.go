package wasm

import "io/fs"

// EmptyTree is the tree Exec mounts for a request without one.
var EmptyTree fs.FS = emptyTree{}
