// Package gitrepo creates and changes Git repositories on disk for tests,
// benchmarks and demos, without the git command.
//
// Init builds its commit in memory and writes it as a single pack, so a
// repository of ten thousand files takes well under a second to make;
// Commit writes loose objects and rebuilds only the trees along the changed
// paths. References move with Git's lock-file protocol, so the functions
// here can race with a running source the way another git process would.
// The repositories pass git fsck --strict.
package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/gitops"
	"github.com/cup-dev/cup/source"
)

// Identity is the author and committer of the commits and tags made here.
var Identity = source.Signature{Name: "gitrepo", Email: "gitrepo@localhost"}

// repo is an open bare repository.
type repo struct {
	dir   string
	store *gitfs.Store
	refs  *gitfs.Refs
}

func open(dir string) (*repo, error) {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		return nil, fmt.Errorf("%s is not a bare repository: %w", dir, err)
	}
	st := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRU(8*cache.MiByte))
	// A pack removed under go-git (git gc, or cupd merging the packs of
	// its writes) is looked for again.
	refresh := func() bool {
		_ = st.Close()
		st.Reindex()
		return true
	}
	return &repo{
		dir:   dir,
		store: gitfs.NewStore(st, gitfs.WithObjectWriter(gitfs.NewLooseWriter(filepath.Join(dir, "objects"))), gitfs.WithRefresh(refresh)),
		refs:  gitfs.NewRefs(dir, dir),
	}, nil
}

// InitOption configures Init.
type InitOption func(*initConfig)

type initConfig struct{ uncompressed bool }

// Uncompressed makes Init store the objects uncompressed: quicker to
// write and to read back, larger on disk. The demo's repository, which
// lives as long as the process and holds megabytes of WASM, is made so.
func Uncompressed() InitOption { return func(c *initConfig) { c.uncompressed = true } }

// Init creates a bare repository at dir, which must not exist or be empty,
// whose HEAD names branch and whose only commit holds files (paths
// slash-separated) with the given message. It returns the commit id, which
// depends only on the arguments.
func Init(dir, branch string, files map[string][]byte, message string, opts ...InitOption) (string, error) {
	var cfg initConfig
	for _, o := range opts {
		o(&cfg)
	}
	if !gitfs.ValidRefName("refs/heads/" + branch) {
		return "", fmt.Errorf("invalid branch name %q", branch)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return "", fmt.Errorf("%s is not empty", dir)
	}
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o777); err != nil {
			return "", err
		}
	}
	config := "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n"
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte(config), 0o666); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/"+branch+"\n"), 0o666); err != nil {
		return "", err
	}
	// Build in memory and write a single pack: one file instead of one per
	// object is what makes large repositories quick to create. The objects
	// are kept as written, not copied, until they are packed.
	objs := new(gitfs.PackObjects)
	st := gitfs.NewStore(memory.NewStorage(), gitfs.WithObjectWriter(objs))
	ctx := context.Background()
	commit, err := gitops.InitialCommit(ctx, st, files, Identity, message)
	if err != nil {
		return "", err
	}
	var popts []gitfs.PackOption
	if cfg.uncompressed {
		popts = append(popts, gitfs.WithoutCompression())
	}
	// Sorted, so that the same files make the same pack.
	ids := objs.IDs()
	slices.SortFunc(ids, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
	if err := st.WritePackFiles(filepath.Join(dir, "objects", "pack"), ids, popts...); err != nil {
		return "", err
	}
	r, err := open(dir)
	if err != nil {
		return "", err
	}
	if err := r.refs.Update(ctx, "refs/heads/"+branch, plumbing.ZeroHash, commit, nil); err != nil {
		return "", err
	}
	return commit.String(), nil
}

// KeepLoose sets gc.auto to 0 in the configuration of the repository at
// dir, so that neither git gc --auto nor cupd packs its loose objects: for
// measuring reads of loose objects.
func KeepLoose(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString("[gc]\n\tauto = 0\n")
	return errors.Join(err, f.Close())
}

// Unpack turns every packed object of the bare repository at dir into a
// loose object and removes the packs, as git unpack-objects followed by
// deleting the pack would: a repository whose objects are all loose, as one
// that only cupd and git commit have written to (and git gc has not packed)
// is.
func Unpack(dir string) error {
	r, err := open(dir)
	if err != nil {
		return err
	}
	st := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRU(cache.MiByte))
	defer st.Close()
	iter, err := st.IterEncodedObjects(plumbing.AnyObject)
	if err != nil {
		return err
	}
	w := gitfs.NewLooseWriter(filepath.Join(dir, "objects"))
	err = iter.ForEach(func(obj plumbing.EncodedObject) error {
		data, err := r.store.ReadObject(obj.Type(), obj.Hash())
		if err != nil {
			return err
		}
		_, err = w.WriteObject(obj.Type(), data)
		return err
	})
	if err != nil {
		return err
	}
	packs, err := filepath.Glob(filepath.Join(dir, "objects", "pack", "pack-*"))
	if err != nil {
		return err
	}
	for _, p := range packs {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	return nil
}

// Commit adds a commit on top of branch in the bare repository at dir: each
// file with content is written, each with nil content removed. The branch
// moves only if it still holds the commit the new one was made on. It
// returns the new commit id.
func Commit(dir, branch string, files map[string][]byte, message string) (string, error) {
	r, err := open(dir)
	if err != nil {
		return "", err
	}
	ref := "refs/heads/" + branch
	head, _, err := r.refs.Resolve(ref)
	if err != nil {
		return "", err
	}
	ctx := context.Background()
	commit, err := gitops.Commit(ctx, r.store, head, files, Identity, message)
	if err != nil {
		return "", err
	}
	sig := Identity
	sig.When = time.Now()
	if err := r.refs.Update(ctx, ref, head, commit, &gitfs.ReflogEntry{Who: sig, Message: "commit: " + message}); err != nil {
		return "", err
	}
	return commit.String(), nil
}

// Branch creates branch name at the commit rev names (see Resolve).
func Branch(dir, name, rev string) error {
	r, err := open(dir)
	if err != nil {
		return err
	}
	commit, err := r.resolve(rev)
	if err != nil {
		return err
	}
	return r.refs.Update(context.Background(), "refs/heads/"+name, plumbing.ZeroHash, commit, nil)
}

// Tag creates tag name at the commit rev names (see Resolve): an annotated
// tag holding message, or a lightweight one when message is empty. It
// returns the id the tag's reference holds: the tag object's or the
// commit's.
func Tag(dir, name, rev, message string) (string, error) {
	r, err := open(dir)
	if err != nil {
		return "", err
	}
	commit, err := r.resolve(rev)
	if err != nil {
		return "", err
	}
	target, err := gitops.TagTarget(r.store, commit, name, Identity, message)
	if err != nil {
		return "", err
	}
	if err := r.refs.Update(context.Background(), "refs/tags/"+name, plumbing.ZeroHash, target, nil); err != nil {
		return "", err
	}
	return target.String(), nil
}

// Resolve returns the id of the commit rev names in the bare repository at
// dir: a full commit id, a full reference name, a branch, a tag (annotated
// tags are peeled) or HEAD.
func Resolve(dir, rev string) (string, error) {
	r, err := open(dir)
	if err != nil {
		return "", err
	}
	h, err := r.resolve(rev)
	if err != nil {
		return "", err
	}
	return h.String(), nil
}

func (r *repo) resolve(rev string) (plumbing.Hash, error) {
	if h, ok := gitfs.ParseHash(rev); ok {
		commit, _, err := r.store.Peel(h)
		return commit, err
	}
	for _, name := range []string{rev, "refs/heads/" + rev, "refs/tags/" + rev} {
		if !gitfs.ValidRefName(name) {
			continue
		}
		h, _, err := r.refs.Resolve(name)
		if errors.Is(err, gitfs.ErrRefNotFound) {
			continue
		}
		if err != nil {
			return plumbing.ZeroHash, err
		}
		commit, _, err := r.store.Peel(h)
		return commit, err
	}
	return plumbing.ZeroHash, fmt.Errorf("revision %q: %w", rev, gitfs.ErrRefNotFound)
}

// CommitInfo describes a commit.
type CommitInfo = gitops.CommitInfo

// Log returns the first-parent history of rev (see Resolve), newest first.
func Log(dir, rev string) ([]CommitInfo, error) {
	r, err := open(dir)
	if err != nil {
		return nil, err
	}
	h, err := r.resolve(rev)
	if err != nil {
		return nil, err
	}
	return gitops.Log(r.store, h)
}

// Files returns every file in the tree of rev (see Resolve), by path.
// Symbolic links are returned as their targets.
func Files(dir, rev string) (map[string][]byte, error) {
	r, err := open(dir)
	if err != nil {
		return nil, err
	}
	h, err := r.resolve(rev)
	if err != nil {
		return nil, err
	}
	return gitops.Files(r.store, h)
}

// Generate returns n small files named <dir>/file-00000.yaml and up (at
// the root when dir is ""), each with distinct content.
func Generate(dir string, n int) map[string][]byte {
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	files := make(map[string][]byte, n)
	for i := range n {
		name := fmt.Sprintf("file-%05d", i)
		files[prefix+name+".yaml"] = fmt.Appendf(nil, "name: %s\nvalue: %d\n", name, i)
	}
	return files
}
