package proposals_test

import (
	"testing"

	"github.com/cup-dev/cup/internal/proposals"
	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/local"
	"github.com/cup-dev/cup/source/sourcetest"
)

// TestConformance runs the source suite in proposal mode against a
// Manager over a local source writing change sets and an in-memory SCM.
func TestConformance(t *testing.T) {
	open := func(t *testing.T, dir, prefix string) source.Source {
		src, err := local.Open(dir, local.WithWriteMode(source.ModeBranch), local.WithBranchPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { src.Close() })
		m, err := proposals.New(proposals.Config{Source: src, Provider: &provider{}, DefaultBranch: "main", BranchPrefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	sourcetest.Run(t, sourcetest.Harness{
		Open: func(t *testing.T, dir string) source.Source { return open(t, dir, source.DefaultBranchPrefix) },
		OpenMode: func(t *testing.T, dir string, mode source.WriteMode, prefix string) source.Source {
			if mode != source.ModeBranch {
				t.Fatalf("asked for a source in %s mode", mode)
			}
			return open(t, dir, prefix)
		},
		Proposals: true,
	})
}
