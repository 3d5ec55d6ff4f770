package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"syscall"
	"time"

	gogit "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage"

	"github.com/cup-dev/cup/source"
)

// refSpecs mirror the remote's branches and tags; branches deleted there
// are deleted here.
var refSpecs = []gitconfig.RefSpec{"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"}

// Run fetches every interval (see WithFetchInterval) until ctx is done,
// logging failures; reads keep being served from the last state. It
// returns nil when ctx is done. Start must have succeeded.
func (s *Source) Run(ctx context.Context) error {
	if s.cfg.interval <= 0 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(s.cfg.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := s.Fetch(ctx); err != nil && ctx.Err() == nil {
				s.cfg.Logger.WarnContext(ctx, "fetch failed; serving the last fetched state", "url", Redact(s.url), "error", err)
			}
		}
	}
}

// Fetch brings the remote's branches and tags into the source. Reads go
// on meanwhile and see the new state once the fetch is complete. Failures
// wrap source.ErrUnavailable; one for want of space in the cache directory
// says so, and leaves the last state served.
func (s *Source) Fetch(ctx context.Context) error {
	if s.store == nil {
		return fmt.Errorf("%w: the source was not started", source.ErrUnavailable)
	}
	// A fetch that started after this call did brings what this one
	// would: callers that queue behind a fetch in flight (the keyed writes
	// of a group, a webhook per push) share the next one.
	after := s.fetchStarted.Load()
	s.fetchMu.Lock()
	defer s.fetchMu.Unlock()
	// Fetches run one at a time under fetchMu: the last one begun has ended.
	if s.fetchStarted.Load() > after && !errors.Is(s.fetchErr, context.Canceled) && !errors.Is(s.fetchErr, context.DeadlineExceeded) {
		return s.fetchErr // not its caller's having left
	}
	s.fetchStarted.Add(1)
	err := s.fetchLocked(ctx)
	s.fetchErr = err
	return err
}

// fetchLocked is Fetch under fetchMu.
func (s *Source) fetchLocked(ctx context.Context) error {
	ctx, o := s.startOp(ctx, "git.fetch")
	stale := s.stale.Swap(false)
	since := s.pushSeq.Load() // before the fetch lists the remote
	changed, err := s.fetch(ctx, stale)
	s.keepPushed(ctx, since)
	if err != nil && stale {
		s.stale.Store(true)
	}
	err = s.outOfSpace(err)
	outcome := fetchOutcome(ctx, changed, err)
	s.metrics.fetched(outcome, o.end(outcome, err))
	return err
}

// fetch is Fetch, under fetchMu. Unless stale, it stops when the remote's
// references are those of the current state; changed reports that it did
// not.
func (s *Source) fetch(ctx context.Context, stale bool) (changed bool, _ error) {
	start := time.Now()
	hold := newHoldingStorer(s.locked)
	var st storage.Storer = hold
	if s.state.Load() == nil {
		// A first clone into a cache directory: write the pack as it comes
		// rather than an object at a time (4 s instead of 0.3 s for 10,000
		// files). Later fetches may get thin packs, whose deltas name
		// objects outside the pack, which go-git's pack writer cannot
		// resolve, so they go through the parser.
		if pw, ok := s.locked.Storer.(storer.PackfileWriter); ok {
			st = &packStorer{lockedStorer: s.locked, pw: pw}
		}
	}
	remote := gogit.NewRemote(st, &gitconfig.RemoteConfig{Name: "origin", URLs: []string{s.url}})
	refs, err := remote.ListContext(ctx, &gogit.ListOptions{Auth: s.cfg.auth})
	if err != nil {
		if errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return true, s.fetched(ctx, start, "", nil)
		}
		return false, s.unavailable(ctx, "list references of", err)
	}
	head, heads, tags := "", make(map[string]plumbing.Hash), make(map[string]plumbing.Hash)
	for _, r := range refs {
		switch name := r.Name(); {
		case name == plumbing.HEAD && r.Type() == plumbing.SymbolicReference:
			head = r.Target().Short()
		case r.Type() != plumbing.HashReference:
		case name.IsBranch():
			heads[name.Short()] = r.Hash()
		case name.IsTag():
			tags[name.String()[len("refs/tags/"):]] = r.Hash()
		}
	}
	if st := s.state.Load(); st != nil && !stale && maps.Equal(st.heads, heads) && maps.Equal(st.tags, tags) && (head == "" || head == st.head) {
		return false, nil // nothing new
	}
	err = remote.FetchContext(ctx, &gogit.FetchOptions{
		RefSpecs: refSpecs,
		Auth:     s.cfg.auth,
		Force:    true,
		Prune:    true,
		Tags:     gogit.NoTags,
	})
	if err != nil && !errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return false, s.unavailable(ctx, "fetch", err)
	}
	if err := hold.flush(); err != nil {
		return false, s.unavailable(ctx, "fetch", err)
	}
	return true, s.fetched(ctx, start, head, heads)
}

func (s *Source) fetched(ctx context.Context, start time.Time, head string, heads map[string]plumbing.Hash) error {
	if head != "" {
		// Only when it changed: every write of a reference may be cut
		// short (see repairRefs).
		want := plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.NewBranchReferenceName(head))
		if have, err := s.locked.Reference(plumbing.HEAD); err != nil || have.Type() != want.Type() || have.Target() != want.Target() {
			if err := s.locked.SetReference(want); err != nil {
				return fmt.Errorf("git: record HEAD: %w", err)
			}
		}
	}
	if _, err := s.loadState(head); err != nil {
		return err
	}
	if s.state.Load() == nil {
		s.state.Store(&refState{heads: map[string]plumbing.Hash{}, tags: map[string]plumbing.Hash{}, head: head})
	}
	s.cfg.Logger.DebugContext(ctx, "fetched", "url", Redact(s.url), "branches", len(heads), "took", time.Since(start))
	return nil
}

func (s *Source) unavailable(ctx context.Context, what string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return s.outOfSpace(fmt.Errorf("%s %s: %w", what, Redact(s.url), err)) // not the remote's fault
	}
	return fmt.Errorf("%w: %s %s: %w", source.ErrUnavailable, what, Redact(s.url), err)
}

// lockedStorer gives go-git the source's storage, taking the object
// store's lock around every call, so that fetches and pushes run while
// reads go on. Go-git's storages are not safe for concurrent use.
type lockedStorer struct {
	storage.Storer
	exclusive func(func() error) error
}

func (l *lockedStorer) do(f func() error) error { return l.exclusive(f) }

func (l *lockedStorer) NewEncodedObject() plumbing.EncodedObject {
	return &plumbing.MemoryObject{}
}

func (l *lockedStorer) SetEncodedObject(o plumbing.EncodedObject) (h plumbing.Hash, err error) {
	err = l.do(func() error { h, err = l.Storer.SetEncodedObject(o); return err })
	return h, err
}

func (l *lockedStorer) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (o plumbing.EncodedObject, err error) {
	err = l.do(func() error {
		o, err = l.Storer.EncodedObject(t, h)
		if err != nil {
			return err
		}
		// The object may read lazily from a pack; read it now, under the lock.
		mo := &plumbing.MemoryObject{}
		mo.SetType(o.Type())
		r, err := o.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		if _, err := io.Copy(mo, r); err != nil {
			return err
		}
		o = mo
		return nil
	})
	return o, err
}

// IterEncodedObjects lists the ids under the lock and reads each object
// under it as the iterator reaches it. Go-git uses it to expand short
// commit ids.
func (l *lockedStorer) IterEncodedObjects(t plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	var hashes []plumbing.Hash
	err := l.do(func() error {
		iter, err := l.Storer.IterEncodedObjects(t)
		if err != nil {
			return err
		}
		defer iter.Close()
		return iter.ForEach(func(o plumbing.EncodedObject) error { hashes = append(hashes, o.Hash()); return nil })
	})
	if err != nil {
		return nil, err
	}
	return storer.NewEncodedObjectLookupIter(l, t, hashes), nil
}

func (l *lockedStorer) HasEncodedObject(h plumbing.Hash) error {
	return l.do(func() error { return l.Storer.HasEncodedObject(h) })
}

func (l *lockedStorer) EncodedObjectSize(h plumbing.Hash) (n int64, err error) {
	err = l.do(func() error { n, err = l.Storer.EncodedObjectSize(h); return err })
	return n, err
}

func (l *lockedStorer) SetReference(r *plumbing.Reference) error {
	return l.do(func() error { return l.Storer.SetReference(r) })
}

func (l *lockedStorer) CheckAndSetReference(new, old *plumbing.Reference) error {
	return l.do(func() error { return l.Storer.CheckAndSetReference(new, old) })
}

func (l *lockedStorer) Reference(n plumbing.ReferenceName) (r *plumbing.Reference, err error) {
	err = l.do(func() error { r, err = l.Storer.Reference(n); return err })
	return r, err
}

func (l *lockedStorer) IterReferences() (storer.ReferenceIter, error) {
	var refs []*plumbing.Reference
	err := l.do(func() error {
		iter, err := l.Storer.IterReferences()
		if err != nil {
			return err
		}
		defer iter.Close()
		return iter.ForEach(func(r *plumbing.Reference) error { refs = append(refs, r); return nil })
	})
	if err != nil {
		return nil, err
	}
	return storer.NewReferenceSliceIter(refs), nil
}

func (l *lockedStorer) RemoveReference(n plumbing.ReferenceName) error {
	return l.do(func() error { return l.Storer.RemoveReference(n) })
}

func (l *lockedStorer) CountLooseRefs() (n int, err error) {
	err = l.do(func() error { n, err = l.Storer.CountLooseRefs(); return err })
	return n, err
}

func (l *lockedStorer) PackRefs() error {
	return l.do(l.Storer.PackRefs)
}

func (l *lockedStorer) SetShallow(h []plumbing.Hash) error {
	return l.do(func() error { return l.Storer.SetShallow(h) })
}

func (l *lockedStorer) Shallow() (h []plumbing.Hash, err error) {
	err = l.do(func() error { h, err = l.Storer.Shallow(); return err })
	return h, err
}

func (l *lockedStorer) Config() (c *gitconfig.Config, err error) {
	err = l.do(func() error { c, err = l.Storer.Config(); return err })
	return c, err
}

func (l *lockedStorer) SetConfig(c *gitconfig.Config) error {
	return l.do(func() error { return l.Storer.SetConfig(c) })
}

// packStorer is a lockedStorer that writes fetched packs whole.
type packStorer struct {
	*lockedStorer
	pw storer.PackfileWriter
}

func (p *packStorer) PackfileWriter() (io.WriteCloser, error) {
	var w io.WriteCloser
	err := p.do(func() (err error) { w, err = p.pw.PackfileWriter(); return err })
	if err != nil {
		return nil, err
	}
	return &lockedCloser{WriteCloser: w, do: p.do}, nil
}

// lockedCloser closes a pack writer under the store's lock: closing
// indexes the pack into the storage.
type lockedCloser struct {
	io.WriteCloser
	do func(func() error) error
}

func (c *lockedCloser) Close() error { return c.do(c.WriteCloser.Close) }
