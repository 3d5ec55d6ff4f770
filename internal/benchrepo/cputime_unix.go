//go:build unix

package benchrepo

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time the process has used, user and system: on a
// machine busy with other work it measures what an operation costs better
// than the time it takes, and on a machine with cores to spare an
// operation that blocks on nothing takes at most its CPU time.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
