package memsource_test

import (
	"sync"
	"testing"

	"github.com/cup-dev/cup/internal/memsource"
	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/sourcetest"
)

func TestConformance(t *testing.T) {
	var repos sync.Map // dir → *memsource.Repo
	open := func(t *testing.T, dir string, opts ...memsource.Option) source.Source {
		r, ok := repos.Load(dir)
		if !ok {
			t.Fatalf("no repository for %s", dir)
		}
		src, err := memsource.New(r.(*memsource.Repo), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	sourcetest.Run(t, sourcetest.Harness{
		Repo: func(t *testing.T, dir string) sourcetest.Repo {
			r := memsource.NewRepo()
			repos.Store(dir, r)
			t.Cleanup(func() { repos.Delete(dir) })
			return repo{r}
		},
		Open: func(t *testing.T, dir string) source.Source { return open(t, dir) },
		OpenMode: func(t *testing.T, dir string, mode source.WriteMode, prefix string) source.Source {
			return open(t, dir, memsource.WithWriteMode(mode), memsource.WithBranchPrefix(prefix))
		},
	})
}

// repo adapts a Repo to the suite.
type repo struct{ *memsource.Repo }

func (r repo) Log(rev string) ([]sourcetest.Commit, error) {
	log, err := r.Repo.Log(rev)
	if err != nil {
		return nil, err
	}
	out := make([]sourcetest.Commit, len(log))
	for i, c := range log {
		out[i] = sourcetest.Commit{ID: c.ID, Parents: c.Parents, Author: c.Author, Message: c.Message}
	}
	return out, nil
}
