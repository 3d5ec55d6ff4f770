// Package reconciler is the Go SDK for cup's WASM reconcilers.
//
// A reconciler keeps derived resources of a Git repository in sync: for
// each primary resource, cupd gathers the input resources its mappers
// relate to it and asks a transform for every output the primary should
// have; it writes those that differ and deletes the primary's earlier
// outputs that are no longer among them. A WASM transform is a WASI
// preview 1 command module that cupd runs once per reconcile, with
//
//	reconcile <reconciler>
//
// as its arguments, the request as JSON on stdin,
//
//	{"reconciler": "...", "revision": "<commit>", "primary": {...},
//	 "inputs": [{...}, ...], "outputs": [{...}, ...]}
//
// and an empty, read-only file system: a reconcile reads its request and
// nothing else. It answers on stdout,
//
//	{"outputs": [{...}, ...], "conditions": [{"type": "...", "status": "True"}],
//	 "requeueAfter": "30s"}
//
// and exits with one of the protocol's codes:
//
//	0  success: stdout holds the response
//	1  failure of the module, with a message on stderr
//	3  the inputs are invalid (a field the module needs is missing), with a
//	   message on stderr; cupd reports InvalidInput and does not retry
//	   until an input changes
//
// A message is text or JSON {"message": "..."}. Modules have no network,
// no environment and a deterministic clock, and must be deterministic
// themselves: the same request gives the same response, on any replica.
//
// This package speaks that protocol so that a module is a [Handler] and a
// main function:
//
//	func main() {
//		reconciler.Main(reconciler.HandlerFunc(reconcile))
//	}
//
// Return an error made with [Invalid] (or wrapping [ErrInvalidInput]) for
// inputs the module cannot use; any other error, or a panic, makes the
// module exit 1. Build a module with the standard Go toolchain:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -ldflags='-s -w' -o bundle.wasm .
//
// Handlers are plain Go and can be tested without WASM: [Run] is the
// whole of [Main] but for the process.
//
// This module depends on the standard library only.
package reconciler
