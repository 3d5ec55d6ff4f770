package memsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/internal/changeset"
	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

// Option configures a Source.
type Option func(*config)

type config struct {
	mode         source.WriteMode
	branchPrefix string
	maxRetries   int
	authorName   string
	authorEmail  string
	clock        func() time.Time
}

// WithWriteMode sets where updates commit. The default is
// source.ModeDirect.
func WithWriteMode(m source.WriteMode) Option { return func(c *config) { c.mode = m } }

// WithBranchPrefix sets the prefix of change-set branch names. The default
// is source.DefaultBranchPrefix.
func WithBranchPrefix(p string) Option { return func(c *config) { c.branchPrefix = p } }

// WithMaxRetries sets how many times an update is applied again on a newer
// head when another writer moved the branch, before it fails with
// source.ErrConflict. The default is 5.
func WithMaxRetries(n int) Option { return func(c *config) { c.maxRetries = n } }

// WithAuthor sets the identity the source commits as. The default is
// "cup <cup@localhost>".
func WithAuthor(name, email string) Option {
	return func(c *config) { c.authorName, c.authorEmail = name, email }
}

// WithClock sets the clock that dates commits. The default is time.Now.
func WithClock(now func() time.Time) Option { return func(c *config) { c.clock = now } }

// Source is a source over a Repo. It is safe for concurrent use.
type Source struct {
	repo  *Repo
	cfg   config
	locks changeset.Locks // one update of a branch at a time
}

var _ source.Source = (*Source)(nil)

// New returns a source over repo. It does no I/O.
func New(repo *Repo, opts ...Option) (*Source, error) {
	if repo == nil {
		return nil, errors.New("memsource: nil repository")
	}
	cfg := config{
		mode:         source.ModeDirect,
		branchPrefix: source.DefaultBranchPrefix,
		maxRetries:   5,
		authorName:   "cup",
		authorEmail:  "cup@localhost",
		clock:        time.Now,
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	cfg.authorName, cfg.authorEmail = gitfs.SanitizeIdent(cfg.authorName), gitfs.SanitizeIdent(cfg.authorEmail)
	switch {
	case cfg.authorName == "" || cfg.authorEmail == "":
		return nil, errors.New("memsource: author name and email must not be empty")
	case cfg.maxRetries < 0:
		return nil, fmt.Errorf("memsource: negative number of retries %d", cfg.maxRetries)
	case cfg.clock == nil:
		return nil, errors.New("memsource: nil clock")
	case cfg.mode != source.ModeDirect && cfg.mode != source.ModeBranch:
		return nil, fmt.Errorf("memsource: unknown write mode %d", cfg.mode)
	case !changeset.ValidPrefix(cfg.branchPrefix):
		return nil, fmt.Errorf("memsource: invalid change-set branch prefix %q", cfg.branchPrefix)
	}
	return &Source{repo: repo, cfg: cfg}, nil
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
		return resolved{}, notFound(rev, gitfs.ErrRefNotFound)
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
		return resolved{}, notFound(rev, err)
	}
	return resolved{commit: commit, tree: tree, branch: branch}, nil
}

func notFound(rev string, err error) error {
	if errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, gitfs.ErrNotCommit) ||
		errors.Is(err, gitfs.ErrRefNotFound) || errors.Is(err, plumbing.ErrReferenceNotFound) || errors.Is(err, io.EOF) {
		if rev == "" {
			rev = "the default branch"
		} else {
			rev = fmt.Sprintf("%q", rev)
		}
		return fmt.Errorf("%w: %s: %v", source.ErrRevisionNotFound, rev, err)
	}
	return err
}

// Update applies req.Apply on top of a branch and commits the result, with
// the semantics of source/local's Update: req.ChangeSet adds to a change
// set; source.ModeDirect moves the branch req.Revision names;
// source.ModeBranch makes a change set from its head. Idempotency keys,
// change-set owners, retries on a moved branch and dry runs behave as
// there.
func (s *Source) Update(ctx context.Context, req *source.UpdateRequest) (*source.UpdateResult, error) {
	if req == nil || req.Apply == nil {
		return nil, errors.New("memsource: update request without Apply")
	}
	if err := changeset.CheckRequest(req); err != nil {
		return nil, fmt.Errorf("memsource: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t, err := s.target(req)
	if err != nil {
		return nil, err
	}
	if req.DryRun {
		result, _, err := s.attempt(ctx, t, req)
		return result, err
	}
	if t.write != "" {
		unlock, err := s.locks.Lock(ctx, t.write)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	for attempt := 0; ; attempt++ {
		result, applyErr, err := s.attempt(ctx, t, req)
		if applyErr || !errors.Is(err, gitfs.ErrRefMoved) {
			return result, err
		}
		if attempt >= s.cfg.maxRetries {
			return nil, fmt.Errorf("%w: %s moved %d times while the change was being made; try again", source.ErrConflict, t.write, attempt+1)
		}
	}
}

// target is where an update goes (see source/local).
type target struct {
	rev, base, write  string
	create, changeSet bool
}

func (s *Source) target(req *source.UpdateRequest) (target, error) {
	if cs := req.ChangeSet; cs != "" {
		if !changeset.IsChangeSet(s.cfg.branchPrefix, cs) {
			return target{}, fmt.Errorf("%w: %q is not a change-set branch (%s<id>)", source.ErrChangeSetNotFound, cs, s.cfg.branchPrefix)
		}
		name := "refs/heads/" + cs
		t := target{rev: cs, base: name, write: name, changeSet: true}
		if _, err := s.head(t); err != nil {
			return target{}, err
		}
		return t, nil
	}
	res, err := s.resolve(req.Revision)
	if err != nil {
		return target{}, err
	}
	if res.branch == "" {
		return target{}, fmt.Errorf("%w: %q names a tag or commit; only branches can be updated", source.ErrNotWritable, req.Revision)
	}
	t := target{rev: req.Revision, base: res.branch, write: res.branch}
	if s.cfg.mode == source.ModeBranch {
		t.create, t.write = true, ""
		if req.IdempotencyKey != "" {
			t.write = "refs/heads/" + changeset.KeyBranchName(s.cfg.branchPrefix, req.Requester, req.IdempotencyKey)
		}
	}
	return t, nil
}

func (s *Source) head(t target) (resolved, error) {
	res, err := s.resolveRef(t.rev, t.base)
	if t.changeSet && errors.Is(err, source.ErrRevisionNotFound) {
		return resolved{}, fmt.Errorf("%w: %q: no such branch", source.ErrChangeSetNotFound, t.rev)
	}
	return res, err
}

func (s *Source) attempt(ctx context.Context, t target, req *source.UpdateRequest) (_ *source.UpdateResult, applyErr bool, _ error) {
	res, err := s.head(t)
	if err != nil {
		return nil, false, err
	}
	if result, err := s.replay(ctx, t, res.commit, req); result != nil || err != nil {
		return result, false, err
	}
	committer := source.Signature{Name: s.cfg.authorName, Email: s.cfg.authorEmail, When: s.cfg.clock()}
	p, applyErr, err := changeset.Prepare(ctx, s.repo.store,
		changeset.Base{Revision: t.rev, Commit: res.commit, Tree: res.tree, NewChangeSet: t.create},
		req, committer, nil)
	if err != nil {
		return nil, applyErr, err
	}
	result := p.Result
	if result.Unchanged || req.DryRun {
		if !t.create {
			result.Branch = strings.TrimPrefix(t.write, "refs/heads/")
		}
		return result, false, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	branch, err := s.move(t, res.commit, p.Commit)
	if err != nil {
		return nil, false, err
	}
	result.Branch = strings.TrimPrefix(branch, "refs/heads/")
	result.Commit = p.Commit.String()
	return result, false, nil
}

// maxNameAttempts bounds how many random change-set names an update tries.
const maxNameAttempts = 8

func (s *Source) move(t target, head, commit plumbing.Hash) (string, error) {
	switch {
	case !t.create:
		return t.write, s.repo.cas(t.write, head, commit)
	case t.write != "":
		return t.write, s.repo.cas(t.write, plumbing.ZeroHash, commit)
	}
	for range maxNameAttempts {
		name := "refs/heads/" + changeset.BranchName(s.cfg.branchPrefix, "")
		if err := s.repo.cas(name, plumbing.ZeroHash, commit); !errors.Is(err, gitfs.ErrRefMoved) {
			return name, err
		}
	}
	return "", fmt.Errorf("%w: %d random change-set names in a row were taken", source.ErrConflict, maxNameAttempts)
}

func (s *Source) replay(ctx context.Context, t target, head plumbing.Hash, req *source.UpdateRequest) (*source.UpdateResult, error) {
	if req.IdempotencyKey == "" || t.write == "" || req.DryRun {
		return nil, nil
	}
	if t.create {
		res, err := s.resolveRef(t.rev, t.write)
		if errors.Is(err, source.ErrRevisionNotFound) {
			return nil, nil // the key's change set is still to be made
		}
		if err != nil {
			return nil, err
		}
		head = res.commit
	}
	return changeset.Lookup(ctx, s.repo.store, req, t.write, head, t.create)
}
