package git_test

import (
	"path/filepath"
	"testing"

	"github.com/cup-dev/cup/internal/gittest"
	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/git"
	"github.com/cup-dev/cup/source/sourcetest"
)

// TestConformance runs the suite against sources over the suite's
// repositories served over smart HTTP with basic authentication, once
// with objects in memory and once in a cache directory.
func TestConformance(t *testing.T) {
	for _, cache := range []bool{false, true} {
		name := "memory"
		if cache {
			name = "cachedir"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			open := func(t *testing.T, dir string, opts ...git.Option) source.Source {
				srv := gittest.NewServer(t, gittest.WithRoot(filepath.Dir(dir)), gittest.WithBasicAuth("alice", "s3cret"))
				opts = append([]git.Option{
					git.WithAuth(git.BasicAuth("alice", "s3cret")),
					git.WithLogger(testLogger(t)),
					git.WithFetchInterval(-1),
				}, opts...)
				if cache {
					opts = append(opts, git.WithCacheDir(t.TempDir()))
				}
				src, err := git.Open(srv.URL(filepath.Base(dir)), opts...)
				if err != nil {
					t.Fatal(err)
				}
				if err := src.Start(t.Context()); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { src.Close() })
				return src
			}
			sourcetest.Run(t, sourcetest.Harness{
				Open: func(t *testing.T, dir string) source.Source { return open(t, dir) },
				OpenMode: func(t *testing.T, dir string, mode source.WriteMode, prefix string) source.Source {
					return open(t, dir, git.WithWriteMode(mode), git.WithBranchPrefix(prefix))
				},
				Sync: func(t *testing.T, src source.Source) {
					if err := src.(*git.Source).Fetch(t.Context()); err != nil {
						t.Fatal(err)
					}
				},
			})
		})
	}
}
