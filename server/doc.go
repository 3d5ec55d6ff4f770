// Package server serves cup's API: the Connect services (gRPC, gRPC-Web and
// Connect's JSON and binary forms on one handler), the REST form under /apis,
// gRPC server reflection, and health endpoints.
//
// A Server knows the types it serves ([Type]: a definition's names and schema
// plus the controller bound to it) and one [source.Source]. Requests are
// validated (protovalidate rules from the proto, then the type's JSON Schema
// on writes) before a controller runs. Everything read from a commit is
// memoised by commit id: commits never change and controllers are
// deterministic, so cached reads are never stale.
//
// # Layers
//
// A call passes four layers, each knowing less of protocols than the one
// before:
//
//	adapters      connect.go, rest.go, rest_watch.go, decode.go, discovery.go,
//	    │         proposals.go
//	    │         decode a request, encode the answer; nothing else
//	chain         chain.go, auth.go, limits.go, validate.go, errors.go
//	    │         request id, timeout, authentication, the call's start and
//	    │         end, validation, error mapping and logging, written once
//	core          core.go, check.go, write.go, listing.go, entry.go,
//	    │         interner.go, memo.go, calls.go, inflight.go, problems.go,
//	    │         watch.go, watchhub.go, events.go, history.go
//	    │         get, list, put and delete of resources, in no protocol's
//	    │         terms; authorization; sentinel errors
//	contracts     controller.Controller, source.Source (and scm.SCM behind
//	              proposals): files in, resources out; commits and refs
//
// The adapters are thin: the Connect services (connect.go) and the REST
// form (rest.go) turn what a call names into the core's terms — a ref, a
// listQuery, a putInput and writeOptions — and its answer into a message
// or JSON. The REST form decodes its body straight into a
// controller.Resource (decode.go), its spec kept as the JSON the caller
// sent; the Connect form brings its spec from a google.protobuf.Struct,
// or as JSON in spec_json. So REST and Connect differ only in decoding and
// encoding.
//
// The chain runs around both adapters. Its HTTP steps wrap every request
// (Handler): withRequestID, withTimeout, authenticate, the body budget.
// Its call steps are entered by Connect's interceptor and by the REST
// routes (rest, restCall): startCall, validation, the adapter and the core,
// then finish, which maps the error to a code (toConnect, the one place
// that does) and logs the call. Metrics and tracing hook in at startCall
// and finish.
//
// The core answers with entries — a controller.Resource encoded once in
// its REST form, shared between requests and commits (interner) and
// memoised by commit (memo) — and with the contract packages' sentinel
// errors (controller.ErrNotFound and friends, source.ErrConflict, …) or
// InvalidArgument errors naming the field. It asks the policy before it
// looks anything up, and bounds controller calls (calls.go), writes and
// request bodies (limits.go, inflight.go).
//
// Change over time: a commit's events (events.go) are the resources its
// diff against its first parent changed, found from the changed paths
// (controller.PathMapper) or by comparing listings, computed once per
// commit, type and namespace and memoised for every watcher. A watch
// (watch.go) walks the branch's first-parent history from where it starts
// and follows the head (watchHub, which polls it while watches are open
// and is poked by every write); history (history.go) walks the same
// history backwards for one resource. Both need the source's
// source.History ability.
//
// Reconcilers: ReconcileStore (reconcile.go) is the server as the reconciler
// runtime reads and writes it; SetReconcilers hands the runtime back
// ([Reconcilers]), and status.go serves what it derives: a resource's
// conditions (GetStatus, GetResponse.status, the REST form's status and
// its /status subresource) and the dependency graph (GetDependencyGraph).
// Every write that makes a commit pokes the runtime, as it pokes watchHub.
//
// Below the core, controllers map resources onto files in a snapshot of
// the source, and the source turns a write into a commit (or a proposal).
// Neither knows of the server.
package server
