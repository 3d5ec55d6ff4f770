package sourcetest

import (
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/source"
)

// Repo is a test's repository as the suite sees it, behind the sources'
// backs: the suite builds the fixture in it, commits through it as another
// writer would, and reads back what sources wrote. Revisions are full
// commit ids, full reference names, branch names or tag names (annotated
// tags peeled to their commit). Its methods may be called from any
// goroutine, also from inside an update's ApplyFunc.
//
// The default Repo is a bare repository on local disk, changed with
// internal/gitrepo; Harness.Repo supplies another.
type Repo interface {
	// Init makes the repository's first commit, holding files, on branch,
	// which the default revision then names. It returns the commit id.
	Init(branch string, files map[string][]byte, message string) (string, error)
	// Commit adds a commit on top of branch: each file with content is
	// written, each with nil content removed. It returns the commit id.
	Commit(branch string, files map[string][]byte, message string) (string, error)
	// Branch creates branch name at the commit rev names.
	Branch(name, rev string) error
	// Tag creates tag name at the commit rev names: annotated, holding
	// message, or lightweight when message is empty. It returns the id the
	// tag's reference holds.
	Tag(name, rev, message string) (string, error)
	// Resolve returns the id of the commit rev names.
	Resolve(rev string) (string, error)
	// Log returns the first-parent history of rev, newest first.
	Log(rev string) ([]Commit, error)
	// Files returns every file in the tree of rev, by path.
	Files(rev string) (map[string][]byte, error)
	// Branches returns the branches whose short names start with prefix,
	// by short name, with the commits they hold.
	Branches(prefix string) (map[string]string, error)
}

// Commit describes a commit, for Repo.Log.
type Commit struct {
	ID      string
	Parents []string
	Author  source.Signature
	Message string
}

// diskRepo is the bare repository on local disk at its path.
type diskRepo string

func (d diskRepo) Init(branch string, files map[string][]byte, message string) (string, error) {
	return gitrepo.Init(string(d), branch, files, message)
}

func (d diskRepo) Commit(branch string, files map[string][]byte, message string) (string, error) {
	return gitrepo.Commit(string(d), branch, files, message)
}

func (d diskRepo) Branch(name, rev string) error { return gitrepo.Branch(string(d), name, rev) }

func (d diskRepo) Tag(name, rev, message string) (string, error) {
	return gitrepo.Tag(string(d), name, rev, message)
}

func (d diskRepo) Resolve(rev string) (string, error) { return gitrepo.Resolve(string(d), rev) }

func (d diskRepo) Log(rev string) ([]Commit, error) {
	log, err := gitrepo.Log(string(d), rev)
	if err != nil {
		return nil, err
	}
	out := make([]Commit, len(log))
	for i, c := range log {
		out[i] = Commit{ID: c.ID, Parents: c.Parents, Author: c.Author, Message: c.Message}
	}
	return out, nil
}

func (d diskRepo) Files(rev string) (map[string][]byte, error) { return gitrepo.Files(string(d), rev) }

func (d diskRepo) Branches(prefix string) (map[string]string, error) {
	st := filesystem.NewStorage(osfs.New(string(d)), cache.NewObjectLRU(cache.KiByte))
	defer st.Close()
	iter, err := st.IterReferences()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string)
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		if name, ok := strings.CutPrefix(ref.Name().String(), "refs/heads/"+prefix); ok {
			out[prefix+name] = ref.Hash().String()
		}
		return nil
	})
	return out, err
}
