package local_test

import (
	"testing"

	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/local"
	"github.com/cup-dev/cup/source/sourcetest"
)

func TestConformance(t *testing.T) {
	sourcetest.Run(t, sourcetest.Harness{
		Open: func(t *testing.T, dir string) source.Source {
			src, err := local.Open(dir, local.WithLogger(testLogger(t)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { src.Close() })
			return src
		},
	})
}
