package controller_test

import (
	"testing"

	"github.com/cup-dev/cup/sdk/go/controller"
	"github.com/cup-dev/cup/sdk/go/controller/controllertest"
)

func TestOSDir(t *testing.T) {
	t.Parallel()
	controllertest.TestDir(t, controller.OSDir(t.TempDir()))
}
