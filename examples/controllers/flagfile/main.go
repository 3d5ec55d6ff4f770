// Command flagfile is a cup WASM controller that keeps every resource of a
// namespace in one YAML file, instead of one file per resource.
//
// It serves any kind. Resources of a type in namespace N live in the file
//
//	<plural>.<group>/N.yaml
//
// named after the type's full name as Kubernetes spells a CRD's, from the
// plural and group the host passes in CUP_PLURAL and CUP_GROUP (cupd always
// does): Segments of flags.cup.dev live in segments.flags.cup.dev/N.yaml, so
// types of different API groups never share a file. A host that passes the
// kind only (the original Cup) gets <lower-case kind>s/N.yaml instead
// (Segment → segments/; no English plural rules, so Policy → policys/), where
// two kinds of the same name in different groups share their files. Plurals,
// groups and kinds are ASCII letters, digits, dots and dashes; a namespace
// must be a valid file name.
//
// The file is a mapping from resource name to entry, in the order written:
//
//	# Segments of the production namespace.
//	beta-testers:
//	  labels:
//	    team: growth
//	  annotations:
//	    owner: ana@example.com
//	  spec:
//	    rules:
//	      - attribute: plan
//	        values: [pro, team]
//	internal: # staff only
//	  spec:
//	    rules: []
//
// or a sequence of entries that carry their name:
//
//	# Segments of the production namespace.
//	- name: beta-testers
//	  labels:
//	    team: growth
//	  spec:
//	    rules: []
//
// An entry has the optional fields labels and annotations (string to string)
// and spec (a mapping, served as the resource's JSON spec with its keys in
// the file's order); any other field makes the file malformed, as do
// duplicate names. Entries store no apiVersion: resources get the one cupd
// names in the environment.
//
// get and list read the file; a missing file is an empty namespace. A get,
// put or delete of a file written plainly (see scan.go) reads the lines of
// its entry, of those beside it, and the name of every other: a name written
// twice fails a list and a call naming it, and an entry malformed otherwise
// fails a list, not a call naming another. put rewrites the lines of one
// entry, or appends a new entry after the last one, and leaves every other
// line of the file as it was, byte for byte: other entries, their order,
// blank lines and comments. Within the rewritten entry, nodes whose content
// stays keep their comments and style. A put that changes nothing writes
// nothing. delete removes the entry's lines with the comment lines directly
// above it, and the file when no entry is left. Every rewrite is parsed
// again and checked before it is written, so an edit that would change
// another entry fails instead. A file that is not valid YAML or not in this
// form is an error naming the file and line.
//
// Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -ldflags='-s -w' -o flagfile.wasm .
package main

import (
	"runtime/debug"

	"github.com/cup-dev/cup/sdk/go/controller"
)

func main() {
	// A call keeps little: a list one batch of entries (see scan.go), a
	// put or delete one copy of the file. Collecting garbage when the heap
	// has grown by four times what is live, rather than by as much, saves
	// most of the collections of a list of thousands of entries; the soft
	// limit makes them come earlier near the default memory limit of
	// cupd's WASM controllers, 16 MiB, of which the Go runtime and the
	// module's data take a few.
	debug.SetGCPercent(400)
	debug.SetMemoryLimit(10 << 20)
	controller.Handle(controller.AnyKind, handler{})
	controller.Main()
}
