// Command flagbundle is a cup WASM reconciler that publishes a namespace's
// feature flags as one evaluation bundle.
//
// Its primary is a Bundle (flags.cup.dev/v1alpha1), whose optional spec
// says which Flags and Segments it gathers:
//
//	apiVersion: flags.cup.dev/v1alpha1
//	kind: Bundle
//	metadata: {namespace: default, name: web}
//	spec:
//	  selector:
//	    matchLabels: {team: web}
//
// cupd does the selecting: its mappers hand the module the Flags and
// Segments of the Bundle as inputs. The module answers exactly one
// output, a FlagBundle (flags.cup.dev/v1alpha1) of the Bundle's namespace
// and name, whose spec maps each flag's and each segment's name to its
// spec, as is:
//
//	{"flags": {"dark-mode": {...}, "new-checkout": {...}},
//	 "segments": {"beta-testers": {...}}}
//
// Keys are sorted and specs are copied byte for byte (numbers such as 0.1
// or 12345678901234567890 unchanged); a Flag or Segment without a spec
// maps to {}. An input of another kind, or two inputs of a kind with the
// same name, make the inputs invalid (exit code 3).
//
// Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -ldflags='-s -w' -o flagbundle.wasm .
package main

import "github.com/cup-dev/cup/sdk/go/reconciler"

func main() {
	reconciler.Main(reconciler.HandlerFunc(reconcile))
}
