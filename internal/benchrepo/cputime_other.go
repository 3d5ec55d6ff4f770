//go:build !unix

package benchrepo

import "time"

// CPUTime is not measured here: it returns zero.
func CPUTime() time.Duration { return 0 }
