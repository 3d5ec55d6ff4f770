// Package git is a [source.Source] over a remote Git repository, cloned
// and kept fresh with go-git.
//
// The remote may be reached over HTTPS or HTTP (with BasicAuth or
// TokenAuth), SSH (SSHKeyAuth) or as a local path or file:// URL. Its
// objects are kept in memory or, with WithCacheDir, in a bare repository
// on disk that later runs reuse.
//
// Reads never wait for the network: View resolves revisions against the
// state of the last fetch (or of the cache, before the first one), and
// every commit's tree is read from the local object store. Start loads the
// cache and fetches once; Run fetches on an interval; Fetch fetches on
// demand (a webhook may call it). A fetch cut short, by the network, a
// full disk or a kill, leaves the last state served and nothing behind
// that the next fetch would wrongly trust: commits are stored only after
// everything they reach. A cache directory out of space is reported as
// such (wrapping source.ErrUnavailable), and references a failed write
// left torn in it are removed and fetched again.
//
// Updates build the new tree from the base commit's tree without any
// checkout (only the trees along the changed paths are rebuilt), commit,
// and push exactly the new objects, so a write costs the same at 1,000 and
// at 10,000 files. The push names the old value of the branch, so the
// remote moves it only if nobody else did meanwhile:
//
//   - In source.ModeDirect a rejected push is followed by a fetch and the
//     change is applied again on the new head, a bounded number of times.
//   - In source.ModeBranch each update pushes a new branch <prefix><id>;
//     later updates may add commits to it (UpdateRequest.ChangeSet).
//   - A push whose answer is lost (the connection broke) is settled by a
//     fetch: if the branch holds the commit, the update succeeded.
//   - Updates with an idempotency key fetch first and look for a commit
//     carrying the key, so a repeated request is answered with the first
//     one's result, from any process, after any failure.
package git

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/writes"
	"github.com/cup-dev/cup/source"
)

// Source is a source over a remote repository. It is safe for concurrent
// use. Call Start before anything else, and Run to keep it fresh.
type Source struct {
	url      string
	endpoint *transport.Endpoint
	cfg      config

	startMu sync.Mutex
	store   *gitfs.Store
	locked  *lockedStorer // the storage, for go-git, under the store's lock
	closer  func() error
	cacheFS billy.Filesystem // the cache directory's, or nil
	state   atomic.Pointer[refState]
	stale   atomic.Bool // the cache's references may lag the state: fetch them all (see repairRefs)

	fetchMu      sync.Mutex            // one fetch at a time
	pushMu       sync.Mutex            // guards pushed
	pushed       map[string]pushedHead // the last push of each branch (see setHead)
	pushSeq      atomic.Uint64         // pushes recorded
	fetchStarted atomic.Uint64         // fetches begun; written under fetchMu
	fetchErr     error                 // the last fetch's error, under fetchMu

	eng *writes.Engine // target resolution, locking, retries, replay

	metrics *metrics // nil without WithMetrics
}

var _ source.Source = (*Source)(nil)

// refState is what the remote's references were at the last fetch, plus
// the pushes made since.
type refState struct {
	heads map[string]plumbing.Hash // short branch name → commit
	tags  map[string]plumbing.Hash // short tag name → object
	head  string                   // the branch the remote's HEAD names
}

type peeled struct {
	commit, tree plumbing.Hash
}

// Open returns a source over the repository at url: an http(s)://, ssh://
// or scp-like (git@host:path) URL, a file:// URL or a local path. It
// checks its arguments but does no I/O.
func Open(url string, opts ...Option) (*Source, error) {
	if url == "" {
		return nil, errors.New("git: empty repository URL")
	}
	if !IsURL(url) {
		abs, err := filepath.Abs(url)
		if err != nil {
			return nil, fmt.Errorf("git: %w", err)
		}
		url = abs
	}
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return nil, fmt.Errorf("git: repository URL %q: %w", url, err)
	}
	cfg := defaultConfig()
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.branch != "" && !gitfs.ValidRefName("refs/heads/"+cfg.branch) {
		return nil, fmt.Errorf("git: invalid branch name %q", cfg.branch)
	}
	eng, err := writes.New(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("git: %w", err)
	}
	cfg.Config = eng.Config()
	m, err := newMetrics(cfg.metrics)
	if err != nil {
		return nil, err
	}
	return &Source{
		url:      url,
		endpoint: ep,
		cfg:      cfg,
		eng:      eng,
		metrics:  m,
	}, nil
}

// IsURL reports whether repo names a repository by URL rather than by a
// path on this machine: it has a scheme (https://, ssh://, git://,
// file://) or is an scp-like address (git@host:path).
func IsURL(repo string) bool {
	if strings.Contains(repo, "://") {
		return true
	}
	at, colon := strings.Index(repo, "@"), strings.Index(repo, ":")
	return at > 0 && colon > at && !strings.Contains(repo[:colon], "/")
}

// Start opens the object store (creating the cache directory's repository
// when missing), loads the references a cache holds, and fetches. When the
// fetch fails it returns an error wrapping source.ErrUnavailable if the
// source is strict or has nothing to serve; a lenient source with a warm
// cache logs the failure and serves the cache. Start may be called again
// after it failed.
func (s *Source) Start(ctx context.Context) error {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if s.store == nil {
		if err := s.openStorage(); err != nil {
			return s.outOfSpace(err)
		}
	}
	cached, err := s.loadState("")
	if err != nil {
		return err
	}
	ferr := s.Fetch(ctx)
	switch {
	case ferr == nil:
		return nil
	case s.cfg.strict:
		s.state.Store(nil) // serve nothing rather than the cache
		return ferr
	case cached:
		s.cfg.Logger.WarnContext(ctx, "remote unreachable; serving the cached repository", "url", Redact(s.url), "error", ferr)
		return nil
	default:
		return ferr
	}
}

// Ready reports whether the source has something to serve: a fetch
// succeeded or a cache was loaded.
func (s *Source) Ready() bool { return s.state.Load() != nil }

// Close releases the files the source keeps open. The source must not be
// used afterwards.
func (s *Source) Close() error {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if s.closer == nil {
		return nil
	}
	return s.store.Exclusive(s.closer)
}

func (s *Source) openStorage() error {
	var st storage.Storer
	var opts []gitfs.Option
	switch dir := s.cfg.cacheDir; dir {
	case "":
		st = memory.NewStorage()
	default:
		if _, err := os.Stat(filepath.Join(dir, "HEAD")); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("git: cache directory: %w", err)
			}
			if _, err := gogit.PlainInit(dir, true); err != nil && !errors.Is(err, gogit.ErrRepositoryAlreadyExists) {
				return fmt.Errorf("git: cache directory %s: %w", dir, err)
			}
		} else if err != nil {
			return fmt.Errorf("git: cache directory: %w", err)
		}
		fsys := s.cfg.cacheFS
		if fsys == nil {
			fsys = osfs.New(dir)
		}
		removed, err := removeTornRefs(fsys)
		if err != nil {
			return fmt.Errorf("git: cache directory %s: references: %w", dir, err)
		}
		if len(removed) > 0 {
			s.cfg.Logger.Warn("removed references an interrupted write left torn in the cache directory; the next fetch writes them again",
				"dir", dir, "refs", removed)
		}
		s.cacheFS = fsys
		fst := filesystem.NewStorageWithOptions(gitfs.MapPacks(fsys), cache.NewObjectLRU(cache.MiByte),
			filesystem.Options{MaxOpenDescriptors: 32})
		s.closer = fst.Close
		st = fst
		if s.cfg.cacheFS == nil {
			// Objects are read as a local repository's are: by cupd
			// itself, on every core, without the store's lock; go-git only
			// for what that misses (what a fetch has not finished writing).
			objects := filepath.Join(dir, "objects")
			od := gitfs.NewObjectDir(objects)
			opts = append(opts, gitfs.WithObjectWriter(gitfs.NewLooseWriter(objects)), gitfs.WithObjectDir(od))
			s.closer = func() error { return errors.Join(fst.Close(), od.Close()) }
		}
	}
	opts = append(opts,
		gitfs.WithTreeCache(gitfs.NewTreeCache(s.cfg.treeCacheSize)),
		gitfs.WithBlobCache(s.cfg.blobCacheSize))
	s.store = gitfs.NewStore(st, opts...)
	s.locked = &lockedStorer{Storer: st, exclusive: s.store.Exclusive}
	return nil
}

// loadState reads the branches and tags the object store holds into the
// state reads use. head, when set, is the branch the remote's HEAD names;
// otherwise the stored HEAD says. It reports whether there was anything.
func (s *Source) loadState(head string) (bool, error) {
	st := &refState{heads: make(map[string]plumbing.Hash), tags: make(map[string]plumbing.Hash)}
	err := s.store.Exclusive(func() error {
		iter, err := s.locked.Storer.IterReferences()
		if err != nil {
			return err
		}
		defer iter.Close()
		return iter.ForEach(func(r *plumbing.Reference) error {
			if r.Type() != plumbing.HashReference {
				return nil
			}
			switch name := r.Name(); {
			case name.IsBranch():
				st.heads[name.Short()] = r.Hash()
			case name.IsTag():
				st.tags[strings.TrimPrefix(name.String(), "refs/tags/")] = r.Hash()
			}
			return nil
		})
	})
	if err != nil {
		return false, fmt.Errorf("git: read references: %w", err)
	}
	if head == "" {
		if ref, err := s.locked.Reference(plumbing.HEAD); err == nil && ref.Type() == plumbing.SymbolicReference {
			head = ref.Target().Short()
		}
	}
	st.head = head
	if len(st.heads) == 0 && len(st.tags) == 0 {
		return false, nil
	}
	s.state.Store(st)
	return true, nil
}

// setHead records a branch's new value after a successful push, so that
// reads see the write at once. The push landed whatever happens here, so a
// failure to record the branch in the cache directory (a full disk) is
// logged rather than returned: the state reads use has the new value, and
// the next fetch writes the cache's references again (see repairRefs).
//
// A fetch under way may have listed the remote's references before the
// push landed; it keeps the pushed value of the branch rather than record
// the older one it listed (see keepPushed), so a push never waits for a
// fetch, and reads never see the branch go back.
func (s *Source) setHead(ctx context.Context, branch string, h plumbing.Hash) {
	s.pushMu.Lock()
	if s.pushed == nil {
		s.pushed = make(map[string]pushedHead)
	}
	s.pushed[branch] = pushedHead{h, s.pushSeq.Add(1)}
	s.pushMu.Unlock()
	if err := s.locked.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(branch), h)); err != nil {
		s.cfg.Logger.WarnContext(ctx, "the push landed, but recording the branch in the cache failed; the next fetch records it",
			"branch", branch, "commit", h.String(), "error", err)
		s.repairRefs()
	}
	s.setState(map[string]plumbing.Hash{branch: h})
}

// A pushedHead is the commit a push moved a branch to, and the push's
// number.
type pushedHead struct {
	commit plumbing.Hash
	seq    uint64
}

// setState sets branches in the state reads use.
func (s *Source) setState(branches map[string]plumbing.Hash) {
	for {
		old := s.state.Load()
		next := &refState{heads: make(map[string]plumbing.Hash, len(old.heads)+len(branches)), tags: old.tags, head: old.head}
		maps.Copy(next.heads, old.heads)
		maps.Copy(next.heads, branches)
		if s.state.CompareAndSwap(old, next) {
			return
		}
	}
}

// keepPushed is called by a fetch, under fetchMu, once it recorded what it
// listed (or failed): the branches pushed since pushes numbered since (the fetch's
// start), which it may have listed before their push, are set back to
// their pushed commits, in the cache and in the state, and the next fetch
// lists them again (stale), which brings a newer commit if the remote has
// one.
func (s *Source) keepPushed(ctx context.Context, since uint64) {
	s.pushMu.Lock()
	kept := map[string]plumbing.Hash{}
	for branch, p := range s.pushed {
		if p.seq > since {
			kept[branch] = p.commit
		} else {
			delete(s.pushed, branch) // landed before this fetch listed
		}
	}
	s.pushMu.Unlock()
	if len(kept) == 0 {
		return
	}
	for branch, h := range kept {
		if err := s.locked.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(branch), h)); err != nil {
			s.cfg.Logger.WarnContext(ctx, "recording a branch pushed during a fetch in the cache failed; the next fetch records it",
				"branch", branch, "commit", h.String(), "error", err)
		}
	}
	s.setState(kept)
	s.stale.Store(true)
}

func (s *Source) current() (*refState, error) {
	st := s.state.Load()
	if st == nil {
		return nil, fmt.Errorf("%w: %s has not been fetched yet", source.ErrUnavailable, Redact(s.url))
	}
	return st, nil
}

// DefaultBranch returns the branch the revision "" names.
func (s *Source) DefaultBranch() (string, error) {
	st, err := s.current()
	if err != nil {
		return "", err
	}
	return s.defaultBranch(st), nil
}

func (s *Source) defaultBranch(st *refState) string {
	if s.cfg.branch != "" {
		return s.cfg.branch
	}
	return st.head
}

// View resolves rev against the last fetched state: "" (the default
// branch), a branch or tag name (branches win), a full reference name, a
// full commit id, or other revision syntax go-git understands (short ids,
// main~1). It never touches the network.
func (s *Source) View(ctx context.Context, rev string) (*source.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := s.current()
	if err != nil {
		return nil, err
	}
	res, err := s.resolve(st, rev)
	if err != nil {
		return nil, err
	}
	return &source.Snapshot{Revision: rev, Commit: res.commit.String(), FS: s.store.FS(res.tree)}, nil
}

type resolved struct {
	peeled
	branch string // short name, when rev names a branch
}

func (s *Source) resolve(st *refState, rev string) (resolved, error) {
	if err := source.CheckRevision(rev); err != nil {
		return resolved{}, err
	}
	if rev == "" {
		b := s.defaultBranch(st)
		h, ok := st.heads[b]
		if !ok {
			return resolved{}, fmt.Errorf("%w: the default branch %q", source.ErrRevisionNotFound, b)
		}
		return s.peelAs(rev, h, b)
	}
	if h, ok := gitfs.ParseHash(rev); ok {
		return s.peelAs(rev, h, "")
	}
	if !strings.ContainsAny(rev, "~^") {
		name := rev
		switch {
		case strings.HasPrefix(rev, "refs/heads/"):
			name = strings.TrimPrefix(rev, "refs/heads/")
			if h, ok := st.heads[name]; ok {
				return s.peelAs(rev, h, name)
			}
		case strings.HasPrefix(rev, "refs/tags/"):
			if h, ok := st.tags[strings.TrimPrefix(rev, "refs/tags/")]; ok {
				return s.peelAs(rev, h, "")
			}
		case rev == "HEAD":
			return s.resolve(st, "")
		default:
			if h, ok := st.heads[name]; ok {
				return s.peelAs(rev, h, name)
			}
			if h, ok := st.tags[name]; ok {
				return s.peelAs(rev, h, "")
			}
		}
	}
	g, err := gogit.Open(s.locked, nil)
	if err != nil {
		return resolved{}, fmt.Errorf("git: resolve %q: %w", rev, err)
	}
	h, err := gitfs.ResolveRevision(g, rev)
	if err != nil {
		return resolved{}, err
	}
	return s.peelAs(rev, h, "")
}

func (s *Source) peelAs(rev string, h plumbing.Hash, branch string) (resolved, error) {
	p, err := s.peel(h)
	if err != nil {
		return resolved{}, gitfs.RevisionNotFound(rev, err)
	}
	return resolved{peeled: p, branch: branch}, nil
}

func (s *Source) peel(h plumbing.Hash) (peeled, error) {
	commit, tree, err := s.store.Peel(h)
	return peeled{commit: commit, tree: tree}, err
}

// Redact drops the credentials a URL may hold (https://user:token@host/...),
// for messages and logs.
func Redact(url string) string {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return url
	}
	if at := strings.Index(rest, "@"); at >= 0 && at < strings.IndexByte(rest+"/", '/') {
		rest = "***@" + rest[at+1:]
	}
	return scheme + "://" + rest
}

var _ source.History = (*Source)(nil)

// Commit returns the commit id, from the objects fetched so far; see
// source.History.
func (s *Source) Commit(ctx context.Context, id string) (*source.Commit, error) {
	if _, err := s.current(); err != nil {
		return nil, err
	}
	return s.store.Commit(ctx, id)
}

// ChangedPaths returns the files that differ between two commits fetched
// so far; see source.History.
func (s *Source) ChangedPaths(ctx context.Context, from, to string) ([]string, error) {
	if _, err := s.current(); err != nil {
		return nil, err
	}
	return s.store.ChangedPaths(ctx, from, to)
}

// ContentID returns the id of a file's content in a commit fetched so far;
// see source.History.
func (s *Source) ContentID(ctx context.Context, commit, path string) (string, error) {
	if _, err := s.current(); err != nil {
		return "", err
	}
	return s.store.ContentID(ctx, commit, path)
}
