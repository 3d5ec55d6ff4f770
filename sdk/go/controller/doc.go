// Package controller is the Go SDK for cup's WASM controllers.
//
// A WASM controller maps cup API resources onto files of a Git repository.
// It is a WASI preview 1 command module that cupd runs once per request with
// the repository tree of the resolved commit mounted at "/":
//
//	get    <kind> <namespace> <name>            print the resource; exit 2 if missing
//	list   <kind> <namespace> [key=value ...]   print the resources whose labels match
//	put    <kind> <namespace> <name>            create or replace the resource on stdin
//	delete <kind> <namespace> <name>            remove the resource; exit 2 if missing
//
// The tree is read-only for get and list. For put and delete it is writable,
// and the files the module writes and removes become the new commit. The
// environment names the request's type (CUP_API_VERSION, CUP_GROUP,
// CUP_VERSION, CUP_KIND, CUP_PLURAL) and holds nothing else. Modules have no
// network and a deterministic clock, and must be deterministic themselves:
// the same tree and request give the same result.
//
// This package speaks that protocol so that a module is a [Handler] and a
// main function:
//
//	func main() {
//		controller.Handle("Flag", flags{})
//		controller.Main()
//	}
//
// [Main] parses the arguments and environment into a request, calls the
// handler registered for the kind, completes what it returns (apiVersion,
// kind, namespace), prints the result as JSON and exits with the protocol's
// code: 0 on success, 2 when the handler returns an error wrapping
// [ErrNotFound], and 1 for any other error, with the message on stderr. Errors made with [Invalid] (or
// wrapping [ErrInvalid]) are printed as
//
//	{"code":"invalid_argument","message":"..."}
//
// which cupd returns to the caller as InvalidArgument; other errors are
// internal errors of the module. A panic in a handler is recovered and
// reported as an internal error.
//
// Build a module with the standard Go toolchain:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -ldflags='-s -w' -o flags.wasm .
//
// Handlers are plain Go and can be tested without WASM: [Mux.Run] (or [Run])
// is the whole of [Main] but for the process, and package controllertest
// holds an in-memory [Dir] and calls a [Mux] as cupd calls a module.
//
// This module depends on the standard library only.
package controller
