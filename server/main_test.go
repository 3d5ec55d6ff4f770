package server_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves goroutines behind: the
// server starts none that outlive a request, and the interner's cleanups
// and parallel decoding end with the call that started them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
