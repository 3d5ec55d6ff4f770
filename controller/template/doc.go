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
// Rendered paths stay inside the tree: a path that is absolute, has empty,
// "." or ".." elements, enters .git or carries a NUL byte is rejected with an
// error wrapping [controller.ErrInvalid], whatever the template or the names
// in the request.
//
// Decoding is cached by the SHA-256 of file content, which never goes stale
// and carries over between commits (see [WithCacheSize]).
package template
