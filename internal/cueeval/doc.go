// Package cueeval unifies configuration layers with CUE and returns the
// result as canonical JSON, with every problem traced to the line and
// column of the repository file that caused it.
//
// A layer is one resource's contribution: plain data (a resource's
// spec.values) or CUE source (its spec.cue). [Eval] sorts the layers by
// reference, unifies them, then unifies an optional schema, checks that the
// result is concrete and exports it. A configuration that does not unify is
// an [*Error] listing CUE's problems with their positions; an evaluation that
// exceeds a bound (time, memory, source size, nesting) is an error wrapping
// [ErrLimit].
//
// # Sandbox
//
// CUE offers no cancellation, and a small hostile layer can make it use
// unbounded time and memory. Eval therefore never evaluates in the calling
// process: it starts the running executable again as a worker, hands it the
// layers on stdin and reads the answer from stdout. The worker caps its own
// heap (a watchdog samples it every few milliseconds and exits with a
// distinct code) and runs with at most two threads of Go code; the caller
// kills the worker's process group when the evaluation takes too long or its
// context ends. A program that calls Eval must therefore call [Worker] first
// thing in main (a test binary, in TestMain), which turns the process into a
// worker when it was started as one.
//
// # Positions
//
// Each layer is compiled with its repository path as file name. When the
// file's content is given, positions point into it. A spec.values layer's
// data is placed at the positions of the field's data in the YAML file, as
// CUE's YAML decoder reads it (the data evaluated is still the layer's, so
// a number or a YAML 1.1 boolean read otherwise by the resource's reader
// keeps its value and its place). A spec.cue layer's source is placed at
// the line and column where the string's content sits in the file (a
// literal block, or a one-line string without escapes). When the file is
// missing, or does not hold the field in that shape, positions are
// relative to the field and [Position.Field] says so.
package cueeval
