package memsource

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/gitops"
	"github.com/cup-dev/cup/source"
)

// Identity is the author and committer of the commits and tags a Repo
// makes itself (Init, Commit, Tag), as opposed to those sources make.
var Identity = source.Signature{Name: "memsource", Email: "memsource@localhost"}

// Repo is a Git repository held in memory: objects in a go-git memory
// storage, references in a map that moves by compare-and-swap. Commit ids
// are Git's, so a tree built here has the ids the same tree has on disk.
//
// Besides serving Sources (see New), a Repo changes itself the way another
// writer would (Commit, Branch, Tag) and reads back what sources wrote
// (Resolve, Log, Files, Branches): the same operations internal/gitrepo
// offers on disk. It is safe for concurrent use.
type Repo struct {
	mem   *memory.Storage
	store *gitfs.Store

	mu   sync.Mutex // guards refs and head, and mem's references
	head string     // the reference HEAD names ("" before Init)
	gg   *git.Repository
}

// NewRepo returns an empty repository. Call Init before serving it.
func NewRepo() *Repo {
	mem := memory.NewStorage()
	return &Repo{mem: mem, store: gitfs.NewStore(mem)}
}

// Init makes the repository's first commit, holding files (slash-separated
// paths), on branch, which HEAD then names. The commit's id depends only
// on the arguments. Init fails if the repository has a HEAD already.
func (r *Repo) Init(branch string, files map[string][]byte, message string) (string, error) {
	ref := "refs/heads/" + branch
	if !gitfs.ValidRefName(ref) {
		return "", fmt.Errorf("memsource: invalid branch name %q", branch)
	}
	commit, err := gitops.InitialCommit(context.Background(), r.store, files, Identity, message)
	if err != nil {
		return "", fmt.Errorf("memsource: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.head != "" {
		return "", fmt.Errorf("memsource: repository already initialised on %s", r.head)
	}
	r.head = ref
	if err := r.mem.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.ReferenceName(ref))); err != nil {
		return "", err
	}
	return commit.String(), r.mem.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(ref), commit))
}

// ref returns the hash the full reference name holds, and whether it
// exists.
func (r *Repo) ref(name string) (plumbing.Hash, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refLocked(name)
}

func (r *Repo) refLocked(name string) (plumbing.Hash, bool) {
	ref, err := r.mem.Reference(plumbing.ReferenceName(name))
	if err != nil || ref.Type() != plumbing.HashReference {
		return plumbing.ZeroHash, false
	}
	return ref.Hash(), true
}

// headRef returns the full name of the branch HEAD names.
func (r *Repo) headRef() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.head
}

// cas points the full reference name at to if it holds from (the zero
// hash: if it does not exist), and fails with an error wrapping
// gitfs.ErrRefMoved otherwise.
func (r *Repo) cas(name string, from, to plumbing.Hash) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur, ok := r.refLocked(name)
	if cur != from || (ok && from.IsZero()) {
		return fmt.Errorf("%w: %s is at %s, not %s", gitfs.ErrRefMoved, name, cur, from)
	}
	return r.mem.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(name), to))
}

// resolveRevision resolves revision syntax beyond names and ids (short
// ids, main~1) with go-git.
func (r *Repo) resolveRevision(rev string) (plumbing.Hash, error) {
	var h plumbing.Hash
	err := r.store.Exclusive(func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.gg == nil {
			g, err := git.Open(r.mem, nil)
			if err != nil {
				return fmt.Errorf("resolve %q: %w", rev, err)
			}
			r.gg = g
		}
		var err error
		h, err = gitfs.ResolveRevision(r.gg, rev)
		return err
	})
	return h, err
}

// resolve returns the commit rev names: a full commit id, a full reference
// name, a branch, a tag (annotated tags peeled) or HEAD.
func (r *Repo) resolve(rev string) (plumbing.Hash, error) {
	if h, ok := gitfs.ParseHash(rev); ok {
		commit, _, err := r.store.Peel(h)
		return commit, err
	}
	if rev == "HEAD" {
		rev = r.headRef()
	}
	for _, name := range []string{rev, "refs/heads/" + rev, "refs/tags/" + rev} {
		if h, ok := r.ref(name); ok && gitfs.ValidRefName(name) {
			commit, _, err := r.store.Peel(h)
			return commit, err
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("revision %q: %w", rev, gitfs.ErrRefNotFound)
}

// Commit adds a commit on top of branch: each file with content is
// written, each with nil content removed. The branch moves only if it
// still holds the commit the new one was made on. It returns the new
// commit id.
func (r *Repo) Commit(branch string, files map[string][]byte, message string) (string, error) {
	ref := "refs/heads/" + branch
	head, ok := r.ref(ref)
	if !ok {
		return "", fmt.Errorf("branch %q: %w", branch, gitfs.ErrRefNotFound)
	}
	commit, err := gitops.Commit(context.Background(), r.store, head, files, Identity, message)
	if err != nil {
		return "", err
	}
	if err := r.cas(ref, head, commit); err != nil {
		return "", err
	}
	return commit.String(), nil
}

// Branch creates branch name at the commit rev names (see Resolve).
func (r *Repo) Branch(name, rev string) error {
	ref := "refs/heads/" + name
	if !gitfs.ValidRefName(ref) {
		return fmt.Errorf("memsource: invalid branch name %q", name)
	}
	commit, err := r.resolve(rev)
	if err != nil {
		return err
	}
	return r.cas(ref, plumbing.ZeroHash, commit)
}

// DeleteBranch removes branch name, as merging a proposal and deleting
// its branch on a host does.
func (r *Repo) DeleteBranch(name string) error {
	ref := plumbing.ReferenceName("refs/heads/" + name)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.refLocked(ref.String()); !ok {
		return fmt.Errorf("branch %q: %w", name, gitfs.ErrRefNotFound)
	}
	return r.mem.RemoveReference(ref)
}

// Tag creates tag name at the commit rev names (see Resolve): an annotated
// tag holding message, or a lightweight one when message is empty. It
// returns the id the tag's reference holds: the tag object's or the
// commit's.
func (r *Repo) Tag(name, rev, message string) (string, error) {
	ref := "refs/tags/" + name
	if !gitfs.ValidRefName(ref) {
		return "", fmt.Errorf("memsource: invalid tag name %q", name)
	}
	commit, err := r.resolve(rev)
	if err != nil {
		return "", err
	}
	target, err := gitops.TagTarget(r.store, commit, name, Identity, message)
	if err != nil {
		return "", err
	}
	if err := r.cas(ref, plumbing.ZeroHash, target); err != nil {
		return "", err
	}
	return target.String(), nil
}

// Resolve returns the id of the commit rev names: a full commit id, a full
// reference name, a branch, a tag (annotated tags are peeled) or HEAD.
func (r *Repo) Resolve(rev string) (string, error) {
	h, err := r.resolve(rev)
	if err != nil {
		return "", err
	}
	return h.String(), nil
}

// CommitInfo describes a commit.
type CommitInfo = gitops.CommitInfo

// Log returns the first-parent history of rev (see Resolve), newest first.
func (r *Repo) Log(rev string) ([]CommitInfo, error) {
	h, err := r.resolve(rev)
	if err != nil {
		return nil, err
	}
	return gitops.Log(r.store, h)
}

// Files returns every file in the tree of rev (see Resolve), by path.
// Symbolic links are returned as their targets.
func (r *Repo) Files(rev string) (map[string][]byte, error) {
	h, err := r.resolve(rev)
	if err != nil {
		return nil, err
	}
	return gitops.Files(r.store, h)
}

// Branches returns the branches whose short names start with prefix, by
// short name, with the commits they hold.
func (r *Repo) Branches(prefix string) (map[string]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	iter, err := r.mem.IterReferences()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string)
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		if name, ok := strings.CutPrefix(ref.Name().String(), "refs/heads/"+prefix); ok && ref.Type() == plumbing.HashReference {
			out[prefix+name] = ref.Hash().String()
		}
		return nil
	})
	return out, err
}
