package gitfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// ErrNotCommit reports a revision that names an object other than a commit
// or a tag of a commit.
var ErrNotCommit = errors.New("object is not a commit")

// ObjectWriter writes objects into a repository.
//
// Implementations are safe for concurrent use. Writing an object that
// already exists succeeds.
type ObjectWriter interface {
	// WriteObject stores an object of type typ with the given content and
	// returns its id.
	WriteObject(typ plumbing.ObjectType, content []byte) (plumbing.Hash, error)
}

// Store reads and writes the objects of one repository and builds file
// systems over its trees.
//
// A go-git storer is not safe for concurrent use, so the Store makes every
// call to it while holding a lock. Decoded trees are served from the tree
// cache without taking that lock. A Store is safe for concurrent use.
type Store struct {
	mu      sync.Mutex // serialises calls into objects
	objects storer.EncodedObjectStorer
	dir     *ObjectDir // reads what it can without mu; may be nil
	trees   *TreeCache
	blobs   lru[[]byte] // contents of small blobs; never modified
	commits lru[*CommitInfo]
	writer  ObjectWriter
	refresh func() bool

	// big holds the last blob read that is too large for the blob cache,
	// up to maxBigBlob: a WASM controller that keeps a namespace in one
	// file reads all of it at every call, and the flagfile module's file
	// of 10,000 entries (6.6 MB) took 5 ms to inflate each time. It costs
	// at most maxBigBlob, and nothing with the blob cache off.
	bigMu  sync.Mutex
	bigKey plumbing.Hash
	big    []byte // never modified

	peelMu sync.Mutex
	peeled map[plumbing.Hash]peeled // commits and tags, which never change
}

// peeled is what Peel found for an object.
type peeled struct{ commit, tree plumbing.Hash }

// maxPeeled bounds the memo of Peel; it is emptied when full.
const maxPeeled = 1 << 14

type storeConfig struct {
	trees     *TreeCache
	blobBytes int64
	writer    ObjectWriter
	refresh   func() bool
	dir       *ObjectDir
}

// Option configures a Store.
type Option func(*storeConfig)

// WithTreeCache makes the store keep decoded trees in c, which may be
// shared with other stores. By default each store has a cache of its own of
// [DefaultTreeCacheSize] entries.
func WithTreeCache(c *TreeCache) Option {
	return func(cfg *storeConfig) { cfg.trees = c }
}

// WithBlobCache makes the store keep up to maxBytes of file content in
// memory, so that reading a recently read file does not reach the storer.
// Files over 1 MiB are not kept. With maxBytes <= 0 nothing is kept. The
// default is [DefaultBlobCacheSize].
func WithBlobCache(maxBytes int64) Option {
	return func(cfg *storeConfig) { cfg.blobBytes = maxBytes }
}

// WithObjectWriter makes the store write new objects through w instead of
// through the storer. By default objects are written with the storer's
// SetEncodedObject.
func WithObjectWriter(w ObjectWriter) Option {
	return func(cfg *storeConfig) { cfg.writer = w }
}

// WithRefresh sets a function the store calls, while holding its lock, when
// an object cannot be found; if it returns true the store looks the object
// up once more. Sources over repositories that other programs repack use it
// to make the storer re-read its pack indexes. By default missing objects
// are reported at once.
func WithRefresh(refresh func() bool) Option {
	return func(cfg *storeConfig) { cfg.refresh = refresh }
}

// WithObjectDir makes the store read objects through d first, without its
// lock, and through the storer only what d does not find (objects of
// alternates, say). d must read the objects directory the storer reads.
func WithObjectDir(d *ObjectDir) Option {
	return func(cfg *storeConfig) { cfg.dir = d }
}

// NewStore returns a store over objects. It does no I/O.
func NewStore(objects storer.EncodedObjectStorer, opts ...Option) *Store {
	cfg := storeConfig{blobBytes: DefaultBlobCacheSize}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.trees == nil {
		cfg.trees = NewTreeCache(DefaultTreeCacheSize)
	}
	return &Store{
		objects: objects,
		trees:   cfg.trees,
		blobs:   lru[[]byte]{max: cfg.blobBytes},
		commits: lru[*CommitInfo]{max: DefaultCommitCacheSize},
		writer:  cfg.writer,
		refresh: cfg.refresh,
		dir:     cfg.dir,
	}
}

// Exclusive calls f while holding the lock that guards the storer, so that f
// may use the storer (for instance through a go-git Repository) safely.
func (s *Store) Exclusive(f func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return f()
}

// FS returns a read-only file system over the tree with id root. It does no
// I/O; a missing tree shows as errors from the file system's methods.
func (s *Store) FS(root plumbing.Hash) *FS {
	return &FS{store: s, root: root}
}

// ReadObject returns the content of the object h, which must be of type typ
// (or of any type, for plumbing.AnyObject). A missing object gives an error
// wrapping plumbing.ErrObjectNotFound.
func (s *Store) ReadObject(typ plumbing.ObjectType, h plumbing.Hash) ([]byte, error) {
	if typ == plumbing.BlobObject {
		return s.readBlob(h)
	}
	gotType, data, err := s.readObject(typ, h)
	if err == nil && typ != plumbing.AnyObject && gotType != typ {
		err = plumbing.ErrObjectNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", typ, h, err)
	}
	return data, nil
}

// maxBigBlob is the largest blob Store.big keeps.
const maxBigBlob = 16 << 20

// readBlob returns the content of blob h, through the blob cache.
func (s *Store) readBlob(h plumbing.Hash) ([]byte, error) {
	if data, ok := s.blobs.get(h); ok {
		return bytes.Clone(data), nil
	}
	if data, ok := s.bigBlob(h); ok {
		return bytes.Clone(data), nil
	}
	data, err := s.readBlobUncached(h)
	if err == nil {
		s.cacheBlob(h, data)
	}
	return data, err
}

// ReadBlobOnce returns the content of blob h, as ReadObject does, but adds
// nothing to the blob cache: for a caller that reads each blob once and
// keeps what it makes of it, as a listing does whose resources are
// remembered by blob id. A listing of ten thousand files through the cache
// spent 12 ms of CPU (of 220) copying blobs into it, and evicted all the
// cache held before.
func (s *Store) ReadBlobOnce(h plumbing.Hash) ([]byte, error) {
	if data, ok := s.blobs.get(h); ok {
		return bytes.Clone(data), nil
	}
	return s.readBlobUncached(h)
}

// readBlobUncached reads blob h from the objects, past the blob cache.
func (s *Store) readBlobUncached(h plumbing.Hash) ([]byte, error) {
	typ, data, err := s.readObject(plumbing.BlobObject, h)
	if err == nil && typ != plumbing.BlobObject {
		err = plumbing.ErrObjectNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	return data, nil
}

func (s *Store) cacheBlob(h plumbing.Hash, data []byte) {
	switch {
	case len(data) <= maxCachedBlob:
		s.blobs.add(h, bytes.Clone(data), int64(len(data))+64)
	case len(data) <= maxBigBlob && s.blobs.max > 0:
		s.bigMu.Lock()
		defer s.bigMu.Unlock()
		s.bigKey, s.big = h, bytes.Clone(data)
	}
}

// bigBlob returns blob h if it is the one s.big holds.
func (s *Store) bigBlob(h plumbing.Hash) ([]byte, bool) {
	s.bigMu.Lock()
	defer s.bigMu.Unlock()
	return s.big, s.big != nil && s.bigKey == h
}

func (s *Store) readObject(typ plumbing.ObjectType, h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	if t, data, ok := s.kept(h); ok {
		return t, data, nil
	}
	if s.dir != nil {
		t, data, err := s.dir.Read(h)
		if !errors.Is(err, plumbing.ErrObjectNotFound) {
			return t, data, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, data, err := s.readLocked(typ, h)
	if err != nil && s.refresh != nil && missing(err) && s.refresh() {
		t, data, err = s.readLocked(typ, h)
	}
	return t, data, err
}

func (s *Store) readLocked(typ plumbing.ObjectType, h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	obj, err := s.objects.EncodedObject(typ, h)
	if err != nil {
		return 0, nil, err
	}
	r, err := obj.Reader()
	if err != nil {
		return 0, nil, err
	}
	defer r.Close()
	data := make([]byte, obj.Size())
	if _, err := io.ReadFull(r, data); err != nil {
		return 0, nil, err
	}
	return obj.Type(), data, nil
}

// missing reports whether err may mean that an object moved to a pack the
// storer does not know about yet.
func missing(err error) bool {
	return errors.Is(err, plumbing.ErrObjectNotFound) ||
		errors.Is(err, dotgit.ErrPackfileNotFound) ||
		errors.Is(err, dotgit.ErrIdxNotFound) ||
		errors.Is(err, fs.ErrNotExist)
}

// kept returns object h if the store's writer keeps it in memory, not
// yet written out.
func (s *Store) kept(h plumbing.Hash) (plumbing.ObjectType, []byte, bool) {
	switch w := s.writer.(type) {
	case *PackObjects:
		return w.read(h)
	case *Staging:
		return w.read(h)
	}
	return 0, nil, false
}

// objectSize returns the size of the content of object h.
func (s *Store) objectSize(h plumbing.Hash) (int64, error) {
	if data, ok := s.blobs.get(h); ok {
		return int64(len(data)), nil
	}
	if data, ok := s.bigBlob(h); ok {
		return int64(len(data)), nil
	}
	if _, data, ok := s.kept(h); ok {
		return int64(len(data)), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.objects.EncodedObjectSize(h)
	if err != nil && s.refresh != nil && missing(err) && s.refresh() {
		n, err = s.objects.EncodedObjectSize(h)
	}
	if err != nil {
		return 0, fmt.Errorf("read size of %s: %w", h, err)
	}
	return n, nil
}

// tree returns the decoded tree h, from the cache when it is there.
func (s *Store) tree(h plumbing.Hash) (*tree, error) {
	if t, ok := s.trees.get(h); ok {
		return t, nil
	}
	data, err := s.ReadObject(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	t, err := parseTree(data)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	s.trees.add(h, t)
	return t, nil
}

// treeEntry looks name up in tree h: in the decoded tree, or with scan
// and the tree not cached, by scanning its content (see [FS]).
func (s *Store) treeEntry(h plumbing.Hash, name string, scan bool) (entry, bool, error) {
	if t, ok := s.trees.get(h); ok || !scan {
		if !ok {
			var err error
			if t, err = s.tree(h); err != nil {
				return entry{}, false, err
			}
		}
		e, ok := t.lookup(name)
		if !ok {
			return entry{}, false, nil
		}
		return *e, true, nil
	}
	data, err := s.ReadObject(plumbing.TreeObject, h)
	if err != nil {
		return entry{}, false, err
	}
	e, ok, err := scanTree(data, name)
	if err != nil {
		return entry{}, false, fmt.Errorf("tree %s: %w", h, err)
	}
	return e, ok, nil
}

// Peel follows h through annotated tags to a commit and returns the commit
// and its tree. An object other than a commit or tag gives an error wrapping
// [ErrNotCommit]; a missing one, an error wrapping plumbing.ErrObjectNotFound.
// Results are memoised: commits and tags never change, and every read of a
// revision peels one.
func (s *Store) Peel(h plumbing.Hash) (commit, tree plumbing.Hash, err error) {
	s.peelMu.Lock()
	p, ok := s.peeled[h]
	s.peelMu.Unlock()
	if ok {
		return p.commit, p.tree, nil
	}
	if commit, tree, err = s.peel(h); err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, err
	}
	s.peelMu.Lock()
	if s.peeled == nil || len(s.peeled) >= maxPeeled {
		s.peeled = make(map[plumbing.Hash]peeled)
	}
	s.peeled[h] = peeled{commit, tree}
	s.peelMu.Unlock()
	return commit, tree, nil
}

func (s *Store) peel(h plumbing.Hash) (commit, tree plumbing.Hash, err error) {
	const maxDepth = 16
	for range maxDepth {
		typ, data, err := s.readObject(plumbing.AnyObject, h)
		if err != nil {
			return plumbing.ZeroHash, plumbing.ZeroHash, fmt.Errorf("read object %s: %w", h, err)
		}
		switch typ {
		case plumbing.CommitObject:
			tree, err := parseCommitTree(data)
			if err != nil {
				return plumbing.ZeroHash, plumbing.ZeroHash, fmt.Errorf("commit %s: %w", h, err)
			}
			return h, tree, nil
		case plumbing.TagObject:
			target, _, err := parseTagTarget(data)
			if err != nil {
				return plumbing.ZeroHash, plumbing.ZeroHash, fmt.Errorf("tag %s: %w", h, err)
			}
			h = target
		default:
			return plumbing.ZeroHash, plumbing.ZeroHash, fmt.Errorf("%s is a %s: %w", h, typ, ErrNotCommit)
		}
	}
	return plumbing.ZeroHash, plumbing.ZeroHash, fmt.Errorf("%s: tags nested too deep: %w", h, ErrNotCommit)
}

// WriteObject stores an object with the given content and returns its id,
// through the configured [ObjectWriter] or else through the storer.
func (s *Store) WriteObject(typ plumbing.ObjectType, content []byte) (plumbing.Hash, error) {
	h, err := s.writeObject(typ, content)
	if err == nil && typ == plumbing.BlobObject {
		s.cacheBlob(h, content)
	}
	return h, err
}

func (s *Store) writeObject(typ plumbing.ObjectType, content []byte) (plumbing.Hash, error) {
	if s.writer != nil {
		return s.writer.WriteObject(typ, content)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	obj := s.objects.NewEncodedObject()
	obj.SetType(typ)
	obj.SetSize(int64(len(content)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(content); err != nil {
		w.Close()
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.objects.SetEncodedObject(obj)
}
