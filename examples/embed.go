// Package examples holds the demo repository that cupd serves when started
// without a repository.
package examples

import "embed"

// Demo is the demo repository's files, rooted at "demo".
//
//go:embed all:demo
var Demo embed.FS
