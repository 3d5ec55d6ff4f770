package app_test

import (
	"os"
	"testing"

	"github.com/cup-dev/cup/internal/cueeval"
)

// TestMain lets the test binary serve as the CUE evaluator that the
// demo's layered configuration starts (see cueeval.Worker).
func TestMain(m *testing.M) {
	cueeval.Worker()
	os.Exit(m.Run())
}
