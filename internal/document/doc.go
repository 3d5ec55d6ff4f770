// Package document reads resources from YAML and JSON files the way cup's
// file formats do (configuration in package config, RBAC policies in
// package rbac), and says where each problem is.
//
// # Reading
//
// [SplitYAML] splits a YAML stream into its documents, each with the line
// of the file it starts on, and [YAMLDoc.JSON] converts one to JSON,
// strictly, with a [*YAMLError] whose line numbers count from the top of
// the file. For JSON, [ScanJSON] finds duplicate keys, which encoding/json
// would silently resolve to the last value, and [Position] turns a
// decoder's byte offset into a line and a column.
//
// # Writing
//
// [JSONToYAML] writes JSON as YAML, keeping every string as it is, which
// sigs.k8s.io/yaml's JSONToYAML alone does not.
//
// # Locations
//
// A field path names a value the way messages do: "metadata.name",
// "rules[0].verbs[1]"; "" is the whole document. [JoinPath] and [IndexPath]
// build them. A [Locator] finds the line of the field at a path:
// [YAMLDoc.Locator] for a YAML document written in block style,
// [ScanJSON]'s [*JSONLocator] for JSON.
//
// # Shapes
//
// A [Shape] compares a decoded document ([Decode]) with the Go type it is
// about to be decoded into and reports every unknown field and every value
// of the wrong JSON type, each with its path, rather than the first only.
//
// # Problems
//
// Packages that use this one keep their own Problem and Error types, whose
// formats are theirs; [SortProblems] and [ErrorText] give them one order
// and one error text.
//
// Everything here is safe for concurrent use; a [Shape] is immutable.
package document
