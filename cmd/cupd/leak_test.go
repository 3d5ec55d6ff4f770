package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when cupd leaves goroutines behind after it
// shut down.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
