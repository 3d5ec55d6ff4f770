// Package wasm implements the reconciler runtime's WASM transform: a
// [runtime.Transform] that runs a WebAssembly module, a WASI preview 1
// command such as a Go program built with GOOS=wasip1 GOARCH=wasm and the
// SDK in github.com/cup-dev/cup/sdk/go/reconciler.
//
// # Protocol
//
// Each reconcile instantiates the module afresh (it is compiled once, by
// [New]) and runs it with argv[0] the transform's name and then
//
//	reconcile <reconciler>
//
// the JSON of the [runtime.Request] on stdin, an empty read-only file
// system at "/" (a reconcile reads its inputs and nothing else) and an
// empty environment. Its exit code says how it went:
//
//	0  stdout holds the JSON of the [runtime.Response]
//	3  the inputs are invalid: the error wraps [runtime.ErrInvalidInput]
//	   and carries what the module said
//	*  any other code (1 for a failure, 2 for a Go panic): the error wraps
//	   [controller.ErrFailed], with the exit code and what the module said
//
// What a module says is text on stderr (or on stdout, when stderr is
// empty) or a JSON message {"message": "..."}, as for WASM controllers,
// bounded to about 1 KiB, with a Go crash's goroutine dump cut off.
//
// The response is read strictly: unknown fields, trailing data, bytes that
// are not UTF-8 and values nested more than 512 deep are errors wrapping
// [controller.ErrFailed], as is a response without an "outputs" array
// (write "outputs": [] for none: the runtime deletes the outputs a
// response leaves out). Each output is read as
// [controller.ParseResource] reads a file, its spec kept as raw JSON, so
// that numbers and key order pass through unchanged; it needs an
// apiVersion, a kind and a name, and may appear once. Conditions have a
// type, not one of the runtime's own, and a status of True, False or
// Unknown, and no more than a reason and a message: the runtime derives
// the rest.
//
// # Limits
//
// A reconcile runs in the sandbox of a WASM controller's calls, bounded
// by the same [cwasm.Spec] (see package controller/wasm): a module that
// needs more memory, writes more output or runs longer than the Spec
// allows is stopped, with an error wrapping [controller.ErrLimit] (and
// [context.DeadlineExceeded] for the timeout). A trap wraps
// [controller.ErrFailed]. The caller's context's end stops it too, with
// the context's error.
package wasm
