// Package servertest runs a cup API server for tests of the server's
// behaviour, in milliseconds: the server of package server over an
// in-memory repository (internal/memsource) with template controllers,
// behind httptest on 127.0.0.1, with no application wiring (internal/app),
// no repository on disk and no WASM.
//
// [Start] serves the demo repository (examples/demo) by default: flags
// (flags.cup.dev/v1alpha1, YAML files under flags/<namespace>/) and
// services (apps.cup.dev/v1alpha1, JSON files under services/<namespace>/);
// the demo's WASM-served segments are left out. Options change the files,
// the types, the source in front of the repository and the server's
// options. The [Server] it returns gives Connect clients for each protocol
// the server speaks ([Protocols]), a REST helper, and the repository, to
// play another writer and to check what the server wrote.
//
// Tests of wiring (configuration files, authentication files, remote
// repositories, WASM controllers) start the whole application instead.
package servertest
