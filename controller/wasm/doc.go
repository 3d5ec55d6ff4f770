// Package wasm implements the controller that delegates each call to a
// WebAssembly module: a WASI preview 1 command, such as a Go program built
// with GOOS=wasip1 GOARCH=wasm, run by wazero.
//
// # Protocol
//
// The protocol is the original Cup's, so modules written for it run
// unchanged. Every call instantiates the module afresh (it is compiled once,
// by [New]) and runs it as a command, with argv[0] the controller's name and
// then
//
//	get <kind> <namespace> <name>            print the resource as JSON
//	list <kind> <namespace> [key=value ...]  print the namespace's resources
//	put <kind> <namespace> <name>            store the resource read from stdin
//	delete <kind> <namespace> <name>         remove the resource
//
// A get must agree with a list of the same tree: it prints the resource
// the list holds of that name, and fails with not found for a name the
// list does not hold. cupd answers gets from a listing of the namespace
// when it holds one; a module whose get reads as much as its list (one
// that keeps a namespace in one file) says so with the Spec's
// GetCostsList, and cupd then lists the namespace in the background
// after its first get at a commit, and answers the gets that follow from
// that listing.
//
// Exit code 0 means success, 1 failure and 2 not found (for list: the
// namespace holds nothing; put gives it no meaning). list prints a JSON array of resources, or JSON
// resources one after another; its key=value arguments are label
// equalities the result must satisfy, which the module may use to skip work
// (the controller filters the result again). put receives the resource as
// [controller.Resource.MarshalFile] writes it.
//
// Since <kind> alone does not tell two kinds of the same name in different
// groups apart, the environment names the request's type, and holds nothing
// else (the host's environment never reaches a module):
//
//	CUP_API_VERSION  group/version, as in the resources' apiVersion
//	CUP_GROUP        the API group
//	CUP_VERSION      the API version
//	CUP_KIND         the kind, as in argv
//	CUP_PLURAL       the lower-case plural name of the kind, as in URLs
//
// The repository tree is mounted at "/": read-only for get and list (writes
// fail with "read-only file system"), writable for put and delete. A module
// writes through an overlay kept in memory: it reads its own writes, may
// make directories, rename and remove files and directories, and its
// changes reach the caller's [controller.WriteFS] only when it exits 0, so a
// failed call changes nothing. Paths cannot leave the tree; making a file or
// directory at a path a WriteFS refuses ([controller.CheckWritePath]: one
// inside .git in any case, or holding a backslash) fails with "operation not
// permitted".
//
// [Controller.Exec] runs a module for a protocol beyond these four verbs,
// such as a reconciler's (package runtime/wasm): with the arguments it is
// given after argv[0], bytes on stdin, a tree mounted read-only (or an
// empty one) and an empty environment, under the same sandbox and limits.
// It returns stdout, the exit code and what a failed module said, and
// leaves what they mean to its caller.
//
// # Errors
//
// A module reports failure on stderr, as text or as one JSON message
//
//	{"code": "invalid_argument", "message": "spec.rollout must be a percentage"}
//
// The code "invalid_argument" (or "invalid") gives an error wrapping
// [controller.ErrInvalid], which callers report as the caller's mistake;
// "not_found" wraps [controller.ErrNotFound], as exit code 2 does. So does
// exit code 1 of get or delete when the message ends in "not found": the
// original Cup's controllers report a missing resource that way. Anything
// else is the module's fault and wraps [controller.ErrFailed]: another exit
// code, a trap, and output that does not parse as the resources asked for
// (for get, no output at all). Errors name the module and carry what it
// said, up to about 1 KiB: the "message" of a JSON message (with or without
// a code), or else its stderr (or stdout, when stderr is empty), with a
// Go crash's stack traces (the runtime's and the goroutine dump) and a
// trap's stack trace cut off.
//
// A Go program that panics also exits 2; a controller tells it from "not
// found" by the Go runtime's report on stderr, and returns an error
// wrapping [controller.ErrFailed] that holds the panic.
//
// # Limits and determinism
//
// Each call is bounded by the [Spec]: in wall time (Timeout, or the caller's
// earlier deadline; the module is stopped, and the error wraps
// [context.DeadlineExceeded]), in linear memory (MemoryLimitPages) and in
// what it writes to stdout and to stderr (MaxOutputBytes); the files a put
// or delete opens and writes are held in memory, up to 256 MiB. Exceeding a
// limit of memory or output gives an error wrapping [controller.ErrLimit];
// for memory, one line that names the limit and memoryLimitPages, which
// raises it, with the Go runtime's line on the allocation that failed. The
// runtime's whole report, stack traces included, is logged at debug level
// (its first 16 KiB), as is that of a module that panicked.
//
// A module has no network (WASI preview 1 has none, and no other host
// functions are offered) and no host environment. Its clocks are fake ones
// that start at the same instant and advance a millisecond per reading,
// sleeping returns at once, and its random source is a ChaCha8 stream with a
// fixed seed, so that the same tree and request give the same result, as
// [controller.Controller] requires.
//
// # Costs
//
// A get or list is a function of its arguments, its environment and what
// it reads of the tree, so on a tree that names its files' content (a Git
// tree: [controller.ContentIDFS]) the Controller records the paths the
// module opened and what it found there: a file's content id and mode, a
// directory's entries when it listed them, an absence. The same call on a
// later tree where each of those paths looks the same is answered with the
// recorded output, without running the module ([WithReuseBytes] bounds
// what is kept): after a commit that changed other files, a read of a WASM
// type costs a few lookups.
//
// Compiling is the expensive part (about a second for a 3.6 MB Go module),
// done once per module by New and kept in the [Runtime]'s cache (on disk
// with [WithCacheDir], which makes it about 25 times faster after a
// restart). Each call then costs an instantiation: for a Go module about
// 1.5ms, mostly wazero copying the module's data and the Go runtime
// starting, plus what the program does. So that a timeout can stop a
// module in any loop, each module is compiled with a counter at the head
// of every loop, which every 16,384 iterations calls into Go and stops the
// module once its call has ended; a module it cannot be added to (one
// using SIMD, or with a start section) gets wazero's checks, a call into
// Go at every iteration, which make its loops several times slower.
package wasm
