package local

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

// repo is an opened repository.
type repo struct {
	gitDir, commonDir string

	storage *filesystem.Storage
	objects *gitfs.ObjectDir // what the store reads first, on any number of cores
	store   *gitfs.Store
	refs    *gitfs.Refs

	packMu   sync.Mutex // guards packStat; held under the store's lock
	packStat fs.FileInfo

	gogitMu sync.Mutex
	gogit   *git.Repository // for revision syntax beyond names and ids

	writes *refStore // what the write engine moves branches with
	packer *packer   // writes the objects of commits before a branch moves to them
}

// peeled is a commit and its tree.
type peeled struct {
	commit, tree plumbing.Hash
}

// findGitDir finds the Git directory of the repository at path: path
// itself for a bare repository or a .git directory, else path/.git (a
// directory, or a file pointing to one). It also returns the common
// directory, which differs for linked worktrees.
func findGitDir(path string) (gitDir, commonDir string, err error) {
	switch {
	case isGitDir(path):
		gitDir = path
	default:
		dotGit := filepath.Join(path, ".git")
		fi, err := os.Stat(dotGit)
		switch {
		case err == nil && fi.IsDir():
			gitDir = dotGit
		case err == nil:
			data, err := os.ReadFile(dotGit)
			if err != nil {
				return "", "", fmt.Errorf("%w: %w", source.ErrUnavailable, err)
			}
			target, ok := bytes.CutPrefix(bytes.TrimSpace(data), []byte("gitdir:"))
			if !ok {
				return "", "", fmt.Errorf("%w: %s is not a gitdir file", source.ErrUnavailable, dotGit)
			}
			gitDir = string(bytes.TrimSpace(target))
			if !filepath.IsAbs(gitDir) {
				gitDir = filepath.Join(path, gitDir)
			}
		case errors.Is(err, fs.ErrNotExist):
			return "", "", fmt.Errorf("%w: %s is not a Git repository", source.ErrUnavailable, path)
		default:
			return "", "", fmt.Errorf("%w: %w", source.ErrUnavailable, err)
		}
		if !isGitDir(gitDir) {
			return "", "", fmt.Errorf("%w: %s is not a Git directory", source.ErrUnavailable, gitDir)
		}
	}
	commonDir = gitDir
	if data, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		commonDir = string(bytes.TrimSpace(data))
		if !filepath.IsAbs(commonDir) {
			commonDir = filepath.Join(gitDir, commonDir)
		}
	}
	return gitDir, commonDir, nil
}

func isGitDir(dir string) bool {
	if fi, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil || fi.IsDir() {
		return false
	}
	if fi, err := os.Stat(filepath.Join(dir, "objects")); err == nil && fi.IsDir() {
		return true
	}
	_, err := os.Stat(filepath.Join(dir, "commondir"))
	return err == nil
}

func openRepo(path string, cfg *config) (*repo, error) {
	gitDir, commonDir, err := findGitDir(path)
	if err != nil {
		return nil, err
	}
	gitConfig, _ := os.ReadFile(filepath.Join(commonDir, "config"))
	if gitConfig != nil {
		data := bytes.ToLower(gitConfig)
		if bytes.Contains(data, []byte("reftable")) {
			return nil, fmt.Errorf("%w: %s keeps its references in a reftable, which is not supported", source.ErrUnavailable, path)
		}
		if bytes.Contains(data, []byte("objectformat")) && bytes.Contains(data, []byte("sha256")) {
			return nil, fmt.Errorf("%w: %s is a SHA-256 repository, which is not supported", source.ErrUnavailable, path)
		}
	}
	var dotGitFS billy.Filesystem = gitfs.MapPacks(osfs.New(gitDir))
	if commonDir != gitDir {
		dotGitFS = dotgit.NewRepositoryFilesystem(dotGitFS, gitfs.MapPacks(osfs.New(commonDir)))
	}
	// Pack files stay open between reads (up to 32 of them), mapped into
	// memory: go-git would otherwise open and scan the pack for every
	// object. go-git's object
	// cache stays small: gitfs caches decoded trees and blobs itself, so a
	// large one would only hold the same blobs twice; it still serves the
	// delta bases of packed objects.
	storage := filesystem.NewStorageWithOptions(dotGitFS, cache.NewObjectLRU(1*cache.MiByte),
		filesystem.Options{MaxOpenDescriptors: 32})
	r := &repo{
		gitDir:    gitDir,
		commonDir: commonDir,
		storage:   storage,
		refs:      gitfs.NewRefs(gitDir, commonDir),
		objects:   gitfs.NewObjectDir(filepath.Join(commonDir, "objects")),
	}
	if r.packer, err = newPacker(filepath.Join(commonDir, "objects"), r.objects, looseLimit(gitConfig), cfg); err != nil {
		return nil, err
	}
	// Objects are read through r.objects, without the store's lock and
	// without go-git; go-git reads only what it does not find (objects of
	// alternates), and writes refs and resolves revision syntax.
	r.store = gitfs.NewStore(storage,
		gitfs.WithObjectDir(r.objects),
		gitfs.WithTreeCache(gitfs.NewTreeCache(cfg.treeCacheSize)),
		gitfs.WithBlobCache(cfg.blobCacheSize),
		gitfs.WithObjectWriter(r.packer.staging),
		gitfs.WithRefresh(func() bool { return r.refreshPacks(cfg) }),
	)
	return r, nil
}

// refreshPacks makes go-git read the pack indexes again when the pack
// directory changed since they were read: another program (git gc, git
// repack) may have moved objects into new packs. The store calls it, with
// its lock held, when an object cannot be found.
func (r *repo) refreshPacks(cfg *config) bool {
	start := time.Now()
	fi, err := os.Stat(filepath.Join(r.commonDir, "objects", "pack"))
	if err != nil {
		return false
	}
	r.packMu.Lock()
	defer r.packMu.Unlock()
	prev := r.packStat
	if prev != nil && os.SameFile(prev, fi) && prev.ModTime().Equal(fi.ModTime()) &&
		fi.ModTime().Before(start.Add(-2*time.Second)) {
		return false
	}
	r.packStat = fi
	_ = r.storage.Close() // drop open packs, some of which may be gone
	r.storage.Reindex()
	cfg.Logger.Debug("reloaded pack indexes", "dir", r.commonDir)
	return true
}

// peel returns the commit h names (following tags) and its tree.
func (r *repo) peel(h plumbing.Hash) (peeled, error) {
	commit, tree, err := r.store.Peel(h)
	return peeled{commit: commit, tree: tree}, err
}

// goGit returns a go-git repository over the storage, opening it on first
// use. Use it only inside r.store.Exclusive.
func (r *repo) goGit() (*git.Repository, error) {
	r.gogitMu.Lock()
	defer r.gogitMu.Unlock()
	if r.gogit == nil {
		g, err := git.Open(r.storage, nil)
		if err != nil {
			return nil, err
		}
		r.gogit = g
	}
	return r.gogit, nil
}

// bareFalse matches the line of a Git config that makes a repository
// non-bare: it has a work tree, the parent of its Git directory.
var bareFalse = regexp.MustCompile(`(?mi)^\s*bare\s*=\s*false\s*$`)

// checkedOut returns, by full reference name, the branches checked out in
// a work tree of r, each with the work tree's path (or, for a linked work
// tree, its Git directory): the main one's, when r has a work tree, and
// every linked work tree's. It reads them afresh, as git checkout changes
// them.
func (r *repo) checkedOut(servedPath string) map[string]string {
	out := map[string]string{}
	headOf := func(gitDir string) string {
		data, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
		if err != nil {
			return ""
		}
		ref, ok := bytes.CutPrefix(bytes.TrimSpace(data), []byte("ref:"))
		if !ok {
			return "" // detached
		}
		return string(bytes.TrimSpace(ref))
	}
	config, _ := os.ReadFile(filepath.Join(r.commonDir, "config"))
	// The main work tree: the repository is not bare by its config, or
	// was found as the .git of the path served.
	if bareFalse.Match(config) || (r.gitDir == r.commonDir && filepath.Base(r.gitDir) == ".git" && filepath.Dir(r.gitDir) == servedPath) {
		if ref := headOf(r.commonDir); ref != "" {
			out[ref] = filepath.Dir(r.commonDir)
		}
	}
	linked, _ := os.ReadDir(filepath.Join(r.commonDir, "worktrees"))
	for _, e := range linked {
		dir := filepath.Join(r.commonDir, "worktrees", e.Name())
		if ref := headOf(dir); ref != "" {
			where := dir
			if data, err := os.ReadFile(filepath.Join(dir, "gitdir")); err == nil {
				where = filepath.Dir(string(bytes.TrimSpace(data))) // the work tree's .git file
			}
			out[ref] = where
		}
	}
	return out
}

// errCheckedOut says why cup does not write directly to branch, checked out
// in the work tree at where.
func errCheckedOut(branch, where string) error {
	short, _ := strings.CutPrefix(branch, "refs/heads/")
	return fmt.Errorf("%w: branch %s is checked out in the work tree %s: a direct write would move it under the work tree, whose files and index then show cup's writes undone (git status lists them reversed, and the next commit there reverts them); "+
		"serve a bare clone (git clone --bare), another branch (cupd --branch), or write to new branches (cupd --write-mode=branch)",
		source.ErrNotWritable, short, where)
}
