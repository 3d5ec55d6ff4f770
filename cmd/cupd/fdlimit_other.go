//go:build !unix

package main

// openFileLimit is the process's limit on open files, when it has one.
func openFileLimit() (uint64, bool) { return 0, false }
