package server_test

import (
	"context"
	"sort"
	"testing"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/memsource"
	"github.com/cup-dev/cup/internal/servertest"
)

// newFixture serves a fresh in-memory copy of the demo repository's flags
// and services with the unit-level harness (internal/servertest): no
// application wiring, no repository on disk, no WASM. Most tests use it;
// tests of wiring use newAppFixture.
func newFixture(t *testing.T, opts ...servertest.Option) *fixture {
	t.Helper()
	h := servertest.Start(t, opts...)
	return &fixture{url: h.URL, src: h.Source, repo: memRepository{h.Repo}}
}

// repository is the repository a fixture serves, to play another writer
// and to check what the server wrote.
type repository interface {
	Commit(branch string, files map[string][]byte, message string) (string, error)
	Branch(name, rev string) error
	Tag(name, rev, message string) (string, error)
	Resolve(rev string) (string, error)
	Log(rev string) ([]gitrepo.CommitInfo, error)
	Files(rev string) (map[string][]byte, error)
	// Refs lists every reference, to prove a failed write left none behind.
	Refs() ([]string, error)
}

// memRepository is a repository in memory.
type memRepository struct{ *memsource.Repo }

func (r memRepository) Log(rev string) ([]gitrepo.CommitInfo, error) {
	log, err := r.Repo.Log(rev)
	if err != nil {
		return nil, err
	}
	out := make([]gitrepo.CommitInfo, len(log))
	for i, c := range log {
		out[i] = gitrepo.CommitInfo(c)
	}
	return out, nil
}

func (r memRepository) Refs() ([]string, error) {
	branches, err := r.Branches("")
	if err != nil {
		return nil, err
	}
	var out []string
	for name, commit := range branches {
		out = append(out, commit+" refs/heads/"+name)
	}
	sort.Strings(out)
	return out, nil
}

// diskRepository is the bare repository on disk at its path.
type diskRepository string

func (d diskRepository) Commit(branch string, files map[string][]byte, message string) (string, error) {
	return gitrepo.Commit(string(d), branch, files, message)
}
func (d diskRepository) Branch(name, rev string) error { return gitrepo.Branch(string(d), name, rev) }
func (d diskRepository) Tag(name, rev, message string) (string, error) {
	return gitrepo.Tag(string(d), name, rev, message)
}
func (d diskRepository) Resolve(rev string) (string, error) { return gitrepo.Resolve(string(d), rev) }
func (d diskRepository) Log(rev string) ([]gitrepo.CommitInfo, error) {
	return gitrepo.Log(string(d), rev)
}
func (d diskRepository) Files(rev string) (map[string][]byte, error) {
	return gitrepo.Files(string(d), rev)
}
func (d diskRepository) Refs() ([]string, error) { return readRefList(string(d)) }

// head is the commit the default branch points to.
func (f *fixture) head(t *testing.T) string {
	t.Helper()
	snap, err := f.src.View(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return snap.Commit
}

// refs lists every reference of the repository, to prove a failed write left none behind.
func (f *fixture) refs(t *testing.T) []string {
	t.Helper()
	refs, err := f.repo.Refs()
	if err != nil {
		t.Fatal(err)
	}
	return refs
}
