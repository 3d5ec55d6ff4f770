package memsource

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/internal/changeset"
	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/writes"
	"github.com/cup-dev/cup/source"
)

// Option configures a Source. Options set the write engine's
// configuration (internal/writes), which owns their defaults and checks.
type Option func(*writes.Config)

// WithWriteMode sets where updates commit. The default is
// source.ModeDirect.
func WithWriteMode(m source.WriteMode) Option { return Option(writes.WithMode(m)) }

// WithBranchPrefix sets the prefix of change-set branch names. The default
// is source.DefaultBranchPrefix.
func WithBranchPrefix(p string) Option { return Option(writes.WithBranchPrefix(p)) }

// WithMaxRetries sets how many times an update is applied again on a newer
// head when another writer moved the branch, before it fails with
// source.ErrConflict. The default is 5.
func WithMaxRetries(n int) Option { return Option(writes.WithMaxRetries(n)) }

// WithAuthor sets the identity the source commits as. The default is
// "cup <cup@localhost>".
func WithAuthor(name, email string) Option { return Option(writes.WithAuthor(name, email)) }

// WithClock sets the clock that dates commits. The default is time.Now.
func WithClock(now func() time.Time) Option { return Option(writes.WithClock(now)) }

// Source is a source over a Repo. It is safe for concurrent use.
type Source struct {
	repo *Repo
	eng  *writes.Engine // target resolution, locking, retries, replay
}

var _ source.Source = (*Source)(nil)

// New returns a source over repo. It does no I/O.
func New(repo *Repo, opts ...Option) (*Source, error) {
	if repo == nil {
		return nil, errors.New("memsource: nil repository")
	}
	cfg := writes.DefaultConfig()
	for _, opt := range opts {
		opt(&cfg)
	}
	eng, err := writes.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("memsource: %w", err)
	}
	return &Source{repo: repo, eng: eng}, nil
}

// Open returns a source over a new repository whose branch main holds
// files in one commit: the quickest way to a source with content.
func Open(files map[string][]byte, opts ...Option) (*Source, error) {
	r := NewRepo()
	if _, err := r.Init("main", files, "initial\n"); err != nil {
		return nil, err
	}
	return New(r, opts...)
}

// DefaultBranch returns the branch the revision "" names: the one the
// repository's HEAD names.
func (s *Source) DefaultBranch() (string, error) {
	return strings.TrimPrefix(s.repo.headRef(), "refs/heads/"), nil
}

// Repo returns the repository the source serves.
func (s *Source) Repo() *Repo { return s.repo }

// resolved is what a revision names: a commit, its tree, and the full name
// of the branch when the revision names one.
type resolved struct {
	commit, tree plumbing.Hash
	branch       string
}

// View resolves rev to a snapshot. rev may be "" (the branch HEAD names),
// a branch or tag name (branches win), a full reference name, a full
// commit id, or other revision syntax go-git understands (short ids,
// main~1). Annotated tags are peeled to their commit.
func (s *Source) View(ctx context.Context, rev string) (*source.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err := s.resolve(rev)
	if err != nil {
		return nil, err
	}
	return &source.Snapshot{Revision: rev, Commit: res.commit.String(), FS: s.repo.store.FS(res.tree)}, nil
}

func (s *Source) resolve(rev string) (resolved, error) {
	if err := source.CheckRevision(rev); err != nil {
		return resolved{}, err
	}
	if rev == "" {
		head := s.repo.headRef()
		if head == "" {
			return resolved{}, fmt.Errorf("%w: the repository has no commits", source.ErrRevisionNotFound)
		}
		return s.resolveRef(rev, head)
	}
	if h, ok := gitfs.ParseHash(rev); ok {
		return s.peel(rev, h, "")
	}
	if !strings.ContainsAny(rev, "~^") {
		candidates := []string{"refs/heads/" + rev, "refs/tags/" + rev}
		if strings.HasPrefix(rev, "refs/") {
			candidates = []string{rev}
		}
		for _, name := range candidates {
			if !gitfs.ValidRefName(name) {
				continue
			}
			res, err := s.resolveRef(rev, name)
			if errors.Is(err, source.ErrRevisionNotFound) {
				continue
			}
			return res, err
		}
	}
	h, err := s.repo.resolveRevision(rev)
	if err != nil {
		return resolved{}, err
	}
	return s.peel(rev, h, "")
}

func (s *Source) resolveRef(rev, name string) (resolved, error) {
	h, ok := s.repo.ref(name)
	if !ok {
		return resolved{}, gitfs.RevisionNotFound(rev, gitfs.ErrRefNotFound)
	}
	branch := ""
	if strings.HasPrefix(name, "refs/heads/") {
		branch = name
	}
	return s.peel(rev, h, branch)
}

func (s *Source) peel(rev string, h plumbing.Hash, branch string) (resolved, error) {
	commit, tree, err := s.repo.store.Peel(h)
	if err != nil {
		return resolved{}, gitfs.RevisionNotFound(rev, err)
	}
	return resolved{commit: commit, tree: tree, branch: branch}, nil
}

// Update applies req.Apply on top of a branch and commits the result, with
// the semantics of source/local's Update: req.ChangeSet adds to a change
// set; source.ModeDirect moves the branch req.Revision names;
// source.ModeBranch makes a change set from its head. Idempotency keys,
// change-set owners, retries on a moved branch and dry runs behave as
// there, since both run the same write engine (internal/writes).
func (s *Source) Update(ctx context.Context, req *source.UpdateRequest) (*source.UpdateResult, error) {
	if req == nil || req.Apply == nil {
		return nil, errors.New("memsource: update request without Apply")
	}
	if err := changeset.CheckRequest(req); err != nil {
		return nil, fmt.Errorf("memsource: %w", err)
	}
	return s.eng.Update(ctx, refStore{s}, s.repo.store, req)
}

// refStore gives the write engine the branches of the source's Repo:
// objects go into its memory storage as the commit is made, so moving a
// branch is a compare-and-swap of the reference map.
type refStore struct{ s *Source }

var _ writes.RefStore = refStore{}

func (rs refStore) Resolve(_ context.Context, rev string) (writes.Ref, error) {
	var (
		res resolved
		err error
	)
	if name, ok := strings.CutPrefix(rev, "refs/heads/"); ok && gitfs.ValidRefName(rev) && name != "" {
		res, err = rs.s.resolveRef(rev, rev)
	} else {
		res, err = rs.s.resolve(rev)
	}
	if err != nil {
		return writes.Ref{}, err
	}
	return writes.Ref{Commit: res.commit, Tree: res.tree, Branch: res.branch}, nil
}

func (rs refStore) CompareAndSwap(_ context.Context, u writes.Swap) error {
	return rs.s.repo.cas(u.Branch, u.Old, u.New)
}

var _ source.History = (*Source)(nil)

// Commit returns the commit id; see source.History.
func (s *Source) Commit(ctx context.Context, id string) (*source.Commit, error) {
	return s.repo.store.Commit(ctx, id)
}

// ChangedPaths returns the files that differ between two commits; see
// source.History.
func (s *Source) ChangedPaths(ctx context.Context, from, to string) ([]string, error) {
	return s.repo.store.ChangedPaths(ctx, from, to)
}

// ContentID returns the id of a file's content in a commit; see
// source.History.
func (s *Source) ContentID(ctx context.Context, commit, path string) (string, error) {
	return s.repo.store.ContentID(ctx, commit, path)
}
