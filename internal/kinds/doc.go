// Package kinds registers cupd's built-in controller types and SCM
// providers in package registry. Import it for its side effects:
//
//	import _ "github.com/cup-dev/cup/internal/kinds"
//
// Each kind is one file here: a few lines adapting the registry's factory
// to the implementation package, and one registration line. A new kind
// is a new implementation package and a new file.
package kinds
