package gitfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Staging is an ObjectWriter for a repository's objects directory that
// keeps the objects written to it in memory until Flush puts them on disk
// together, for a writer that moves a branch only after Flush: a store
// given one ([WithObjectWriter]) reads the objects it keeps, so that a
// group of commits builds each on the last, and nothing else sees them
// until the branch moves.
//
// Flush writes the objects of two commits or more, or of many objects, as
// one pack, its trees as deltas of the tree before them
// ([WithTreeDeltas]), and anything less as loose objects. A group of
// writes to a directory of 10,000 files then writes its first tree whole
// and each one after it in a few dozen bytes, where loose objects take
// 450 KB each, and creates two files rather than four a commit: a file
// creation is the dearest part of a small write on some disks (about
// 130 µs of the kernel's time on ext4 here). The packs it writes are the
// caller's to merge ([MergePacks]) before they pile up; [StagingOnFlush]
// tells it of each.
//
// What it keeps is bounded: once it holds [StagingFlushBytes] of content,
// a write flushes what it holds as a pack, ahead of the branch's move
// (objects that nothing reaches yet are harmless), so that a group of
// commits in a directory of 100,000 files does not hold 64 trees of
// 4.5 MB.
//
// An object that the objects directory holds already is not kept again;
// its file (loose object or pack) is freshened instead, as git does.
// A Staging is safe for concurrent use.
type Staging struct {
	dir     string // the objects directory
	objs    *ObjectDir
	loose   *LooseWriter
	onFlush func(FlushResult)

	mu      sync.RWMutex
	pending map[plumbing.Hash]packObject
	order   []plumbing.Hash // of pending, in the order written
	bytes   int64           // of pending's content
	count   atomic.Int32    // len(pending), read without mu

	flushMu sync.Mutex // one flush at a time
}

// StagingFlushBytes is how much content a Staging keeps before a write
// flushes it.
const StagingFlushBytes = 16 << 20

// MaxStagedBytes bounds the content a Staging keeps when flushing fails:
// a write beyond it fails until a Flush makes room.
const MaxStagedBytes = 256 << 20

// ErrStagingFull reports a write refused at MaxStagedBytes.
var ErrStagingFull = errors.New("too many objects waiting to be written")

// packObjects is how many objects of one flush make it write a pack even
// for one commit (a change of many files).
const packObjects = 64

// StagingOption configures a Staging.
type StagingOption func(*Staging)

// StagingOnFlush makes a Staging call f after each flush that wrote
// something, Flush's or a write's, with what it wrote.
func StagingOnFlush(f func(FlushResult)) StagingOption {
	return func(s *Staging) { s.onFlush = f }
}

// NewStaging returns a Staging over objectsDir, the "objects" directory of
// a repository, which objs reads.
func NewStaging(objectsDir string, objs *ObjectDir, opts ...StagingOption) *Staging {
	s := &Staging{
		dir:     objectsDir,
		objs:    objs,
		loose:   NewLooseWriter(objectsDir),
		pending: make(map[plumbing.Hash]packObject),
	}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// WriteObject keeps content as the object of type typ until the next
// Flush, unless it is kept already or the objects directory has it. It
// keeps content, not a copy: content must not change afterwards.
func (s *Staging) WriteObject(typ plumbing.ObjectType, content []byte) (plumbing.Hash, error) {
	h := HashObject(typ, content)
	if _, _, ok := s.read(h); ok {
		return h, nil
	}
	if name := s.objs.where(h); name != "" {
		// As git freshens an object it would write again, so that a
		// git gc under way does not prune it as unreachable and old.
		now := time.Now()
		_ = os.Chtimes(name, now, now)
		return h, nil
	}
	s.mu.Lock()
	if _, ok := s.pending[h]; ok {
		s.mu.Unlock()
		return h, nil
	}
	if s.bytes+int64(len(content)) > MaxStagedBytes {
		n := s.bytes
		s.mu.Unlock()
		return plumbing.ZeroHash, fmt.Errorf("write %s %s: %w (%d bytes)", typ, h, ErrStagingFull, n)
	}
	s.pending[h] = packObject{typ, content}
	s.order = append(s.order, h)
	s.bytes += int64(len(content))
	s.count.Store(int32(len(s.pending)))
	full := s.bytes >= StagingFlushBytes
	s.mu.Unlock()
	if full {
		// A failure keeps the objects; the Flush before the branch moves
		// reports it.
		_, _ = s.flush(true)
	}
	return h, nil
}

// read returns object h if s keeps it.
func (s *Staging) read(h plumbing.Hash) (plumbing.ObjectType, []byte, bool) {
	if s.count.Load() == 0 {
		return 0, nil, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.pending[h]
	return o.typ, o.data, ok
}

// readPending reads an object s keeps, for a pack.
func (s *Staging) readPending(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	if typ, data, ok := s.read(h); ok {
		return typ, data, nil
	}
	return 0, nil, fmt.Errorf("%w: %s is not staged", plumbing.ErrObjectNotFound, h)
}

// FlushResult says what a flush wrote.
type FlushResult struct {
	// Objects is the number of objects written.
	Objects int
	// Pack is the path of the pack written, without .pack or .idx; ""
	// when the objects were written loose.
	Pack string
	// PackBytes is the size of the pack file.
	PackBytes int64
}

// Flush writes every object s keeps into the objects directory and
// forgets them once they are there. On failure it keeps them for the next
// Flush: another writer may count on one of them. A caller moves a branch
// to commits written through s only after Flush returns nil.
func (s *Staging) Flush() (FlushResult, error) { return s.flush(false) }

// flush is Flush; pack writes a pack whatever the objects.
func (s *Staging) flush(pack bool) (FlushResult, error) {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.mu.RLock()
	ids := s.order[:len(s.order):len(s.order)]
	commits := 0
	for _, id := range ids {
		if s.pending[id].typ == plumbing.CommitObject {
			commits++
		}
	}
	s.mu.RUnlock()
	if len(ids) == 0 {
		return FlushResult{}, nil
	}
	res := FlushResult{Objects: len(ids)}
	if pack || commits >= 2 || len(ids) >= packObjects {
		name, size, err := writePackFiles(filepath.Join(s.dir, "pack"), ids, s.readPending, WithTreeDeltas())
		if err != nil {
			return FlushResult{}, fmt.Errorf("write %d objects as a pack: %w", len(ids), err)
		}
		res.Pack, res.PackBytes = name, size
		s.objs.Refresh() // for where to find them
	} else {
		for _, id := range ids {
			typ, data, _ := s.read(id)
			if _, err := s.loose.write(id, typ, data); err != nil {
				return FlushResult{}, err
			}
		}
	}
	// The objects directory shows them from now on; a reader that looked
	// in s a moment ago and finds them gone looks there next.
	s.mu.Lock()
	for _, id := range ids {
		s.bytes -= int64(len(s.pending[id].data))
		delete(s.pending, id)
	}
	s.order = append(s.order[:0], s.order[len(ids):]...)
	s.count.Store(int32(len(s.pending)))
	s.mu.Unlock()
	if s.onFlush != nil {
		s.onFlush(res)
	}
	return res, nil
}
