//go:build unix

package main

import "syscall"

// openFileLimit is the process's limit on open files, when it has one
// (unlimited is a huge number).
func openFileLimit() (uint64, bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, false
	}
	return uint64(l.Cur), true //nolint:unconvert // int64 on some systems; infinity is then huge, and ignored

}
