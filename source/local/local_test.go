package local_test

import (
	"testing"

	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/local"
	"github.com/cup-dev/cup/source/sourcetest"
)

func TestConformance(t *testing.T) {
	open := func(t *testing.T, dir string, opts ...local.Option) source.Source {
		src, err := local.Open(dir, append([]local.Option{local.WithLogger(testLogger(t))}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { src.Close() })
		return src
	}
	sourcetest.Run(t, sourcetest.Harness{
		Open: func(t *testing.T, dir string) source.Source { return open(t, dir) },
		OpenMode: func(t *testing.T, dir string, mode source.WriteMode, prefix string) source.Source {
			return open(t, dir, local.WithWriteMode(mode), local.WithBranchPrefix(prefix))
		},
	})
}
