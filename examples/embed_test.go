package examples_test

import (
	"strings"
	"testing"

	"github.com/cup-dev/cup/examples"
)

func TestDemoFiles(t *testing.T) {
	t.Parallel()
	files, err := examples.DemoFiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(files["README.md"]) == 0 {
		t.Error("README.md missing")
	}
	for name := range files {
		if strings.HasPrefix(name, "demo/") || strings.HasPrefix(name, "/") {
			t.Errorf("file %q: want a path below demo", name)
		}
	}
}
