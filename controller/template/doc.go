// Package template implements the built-in controller that maps each resource
// to one file, at a path rendered by a Go [text/template].
//
// A Controller is configured by a [Spec] with two templates: the resource
// template renders the path of one resource's file (Get, Put, Delete), and
// the list template renders a glob pattern matching the files of one
// namespace (List). With the defaults, the flags.cup.dev/v1alpha1 Flag named
// new-login in namespace default lives at
//
//	default/flags.cup.dev-v1alpha1-Flag-new-login.json
//
// and List reads default/*.json, skipping files of other kinds.
//
// The path is a resource's identity: a listed file holds the resource whose
// path the resource template renders, or it is a [controller.Problem] (as is
// a file that does not decode). Get of the name the path gives reports such
// a file as [controller.ErrMalformed]; List fails on it, and ListProblems and
// ListKeyed list the other files and report it.
//
// Files hold one resource each in the form of [controller.Resource], as JSON
// or YAML. Writes are stable: writing a resource gives the same bytes every
// time, and writing a resource the file already holds leaves the file alone,
// so that unchanged resources never show up in a diff.
//
// People and cupd edit the same files, so writing a changed resource edits its
// file rather than replacing it. In a YAML file only the text of what changed
// is rewritten: comments, blank lines, key order, indentation and the quoting
// of untouched values stay, and changing one scalar changes one line. Keys the
// file lacks are appended at the end of their mapping, in the request's order,
// or, when the mapping's keys are sorted (as cup writes them), go to their
// sorted place, so that editing a file cup wrote gives the file cup would
// write afresh; keys the request lacks are removed with the comment lines
// above them (and comment lines indented under them). A sequence with as many
// elements as before is edited element by element, any other is rewritten
// where it stands. A JSON file keeps its indentation and key order. When an
// edit cannot be made in place (a document in flow style, merge keys, an
// anchored value changed under its aliases), or would not read back as the
// resource written, the file is written afresh as a new file would be.
//
// Rendered paths stay inside the tree: a path that is absolute, has empty,
// "." or ".." elements, enters .git or carries a NUL byte is rejected with an
// error wrapping [controller.ErrInvalid], whatever the template or the names
// in the request.
//
// Decoding is cached by the SHA-256 of file content, which never goes stale
// and carries over between commits (see [WithCacheSize]).
package template
