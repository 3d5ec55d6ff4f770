package memsource_test

import (
	"sync"
	"testing"
	"testing/fstest"

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

func TestOpen(t *testing.T) {
	t.Parallel()
	src, err := memsource.Open(map[string][]byte{"a/b.txt": []byte("b\n")})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := src.DefaultBranch(); err != nil || b != "main" {
		t.Fatalf("DefaultBranch = %q, %v; want main", b, err)
	}
	snap, err := src.View(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(snap.FS, "a/b.txt"); err != nil {
		t.Fatal(err)
	}
	if c, err := src.Repo().Resolve("main"); err != nil || c != snap.Commit {
		t.Fatalf("Resolve(main) = %s, %v; want %s", c, err, snap.Commit)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	t.Parallel()
	for _, opts := range [][]memsource.Option{
		{memsource.WithMaxRetries(-1)},
		{memsource.WithAuthor("", "x@example.com")},
		{memsource.WithClock(nil)},
		{memsource.WithWriteMode(source.WriteMode(9))},
		{memsource.WithBranchPrefix("bad prefix")},
	} {
		if _, err := memsource.New(memsource.NewRepo(), opts...); err == nil {
			t.Errorf("New accepted bad options")
		}
	}
	if _, err := memsource.New(nil); err == nil {
		t.Error("New accepted a nil repository")
	}
}
