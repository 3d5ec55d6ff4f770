// Command flagfile is a cup WASM controller that keeps every resource of a
// namespace in one YAML file, instead of one file per resource.
//
// It serves any kind. Resources of kind K in namespace N live in the file
//
//	<plural>/N.yaml
//
// where <plural> is K in lower case with an "s" appended (Segment →
// segments/, Flag → flags/; no English plural rules, so Policy → policys/),
// because that needs nothing but the kind on the command line. So two kinds
// of the same name in different API groups share their files: bind flagfile
// to one group per kind. Kinds are ASCII letters and digits; a namespace must
// be a valid file name.
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
// get and list read the file; a missing file is an empty namespace. put
// rewrites the lines of one entry, or appends a new entry after the last one,
// and leaves every other line of the file as it was, byte for byte: other
// entries, their order, blank lines and comments. Within the rewritten entry,
// nodes whose content stays keep their comments and style. A put that
// changes nothing writes nothing. delete removes the entry's lines with the
// comment lines directly above it, and the file when no entry is left. Every
// rewrite is parsed again and checked before it is written, so an edit that
// would change another entry fails instead. A file that is not valid YAML or
// not in this form is an error naming the file and line.
//
// Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -ldflags='-s -w' -o flagfile.wasm .
package main

import "github.com/cup-dev/cup/sdk/go/controller"

func main() {
	controller.Handle(controller.AnyKind, handler{})
	controller.Main()
}
