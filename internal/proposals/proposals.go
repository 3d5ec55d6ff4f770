// Package proposals turns branch writes into proposals (pull or merge
// requests) and keeps track of them: the proposal write mode.
//
// A Manager wraps a source that writes change sets (source.ModeBranch) and
// an scm.Provider. Each update is a branch write followed by one more step:
// find the open proposal of the branch or open one. Adding to a change set
// updates its proposal's description. Retries never open a second
// proposal:
//
//   - a repeat with the same idempotency key is replayed by the source on
//     the same branch, and the branch's proposal is found (or, if opening
//     it failed the first time, opened now);
//   - a write identical to an open proposal cup made for the same resource
//     (or to a branch whose proposal could not be opened) answers with that
//     proposal.
//
// The Manager also answers the API's questions about proposals from a
// list of the proposals cup opened, refreshed from the SCM by Run and on
// webhook calls (Refresh); reads never wait for the SCM.
package proposals

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/source"
)

// Config configures a Manager.
type Config struct {
	// Source writes change sets: it must be in source.ModeBranch.
	// Required.
	Source source.Source
	// Provider opens and reads proposals. Required.
	Provider scm.Provider
	// DefaultBranch is the branch proposals are for when an update names
	// none. Required.
	DefaultBranch string
	// BranchPrefix is the source's change-set prefix; the proposals whose
	// head starts with it are cup's. Default source.DefaultBranchPrefix.
	BranchPrefix string
	// Labels are added to every proposal; Draft opens them as drafts.
	Labels []string
	Draft  bool
	// Templates render commit messages and proposals; nil uses
	// DefaultTemplates.
	Templates *Templates
	// RefreshInterval is how often Run reads the proposals from the SCM.
	// Zero or less keeps the default, DefaultRefreshInterval.
	RefreshInterval time.Duration
	// Logger receives refresh failures. Nil logs nothing.
	Logger *slog.Logger
}

// DefaultRefreshInterval is the default of Config.RefreshInterval (and so
// of cupd --proposals-refresh).
const DefaultRefreshInterval = 30 * time.Second

// Manager is a source.Source that proposes every change, and the record of
// the proposals it opened. It is safe for concurrent use.
type Manager struct {
	cfg Config

	mu      sync.Mutex
	list    []*scm.Tracked        // cup's proposals, newest first
	pending map[string]pendingSet // pushed branches whose proposal could not be opened

	refreshMu sync.Mutex
}

// pendingSet is a pushed change set without a proposal yet.
type pendingSet struct {
	base      string
	resources []source.ResourceRef
}

var _ source.Source = (*Manager)(nil)

// New returns a Manager. It does no I/O.
func New(cfg Config) (*Manager, error) {
	if cfg.Source == nil || cfg.Provider == nil {
		return nil, errors.New("proposals: a source and a provider are required")
	}
	if cfg.DefaultBranch == "" {
		return nil, errors.New("proposals: no default branch")
	}
	if cfg.BranchPrefix == "" {
		cfg.BranchPrefix = source.DefaultBranchPrefix
	}
	if cfg.Templates == nil {
		cfg.Templates = DefaultTemplates()
	}
	if cfg.RefreshInterval <= 0 {
		cfg.RefreshInterval = DefaultRefreshInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, pending: make(map[string]pendingSet)}, nil
}

// DefaultBranch is the branch proposals are for when an update names none
// (Config.DefaultBranch). It never fails.
func (m *Manager) DefaultBranch() (string, error) { return m.cfg.DefaultBranch, nil }

// View reads from the wrapped source.
func (m *Manager) View(ctx context.Context, rev string) (*source.Snapshot, error) {
	return m.cfg.Source.View(ctx, rev)
}

// Update writes the change as a change set and makes sure a proposal
// reviews it. When the branch was pushed but the SCM failed, the error
// wraps the SCM's sentinel and names the branch; repeating the request
// (with the same idempotency key, or identical) opens the proposal then.
func (m *Manager) Update(ctx context.Context, req *source.UpdateRequest) (*source.UpdateResult, error) {
	if req == nil || req.DryRun {
		return m.cfg.Source.Update(ctx, req)
	}
	base := req.Revision
	if base == "" {
		base = m.cfg.DefaultBranch
	}
	data := templateData(req, base)
	msg, err := render(m.cfg.Templates.Commit, data)
	if err != nil {
		return nil, fmt.Errorf("proposals: commit message template: %w", err)
	}
	if err := source.CheckMessage(msg); err != nil && source.CheckMessage(req.Message) == nil {
		// The operator's template, not the caller, wrote what the source
		// refuses (a reserved trailer, a control character): an Internal
		// error that the server logs, not the caller's InvalidArgument.
		return nil, fmt.Errorf("proposals: the commit message template renders a message the source refuses (%s); fix the template", err.Error())
	}
	if req.ChangeSet == "" && req.IdempotencyKey == "" {
		if res, err := m.identical(ctx, req); res != nil || err != nil {
			return res, err
		}
	}
	r := *req
	r.Message = msg
	res, err := m.cfg.Source.Update(ctx, &r)
	if err != nil || res.Unchanged {
		return res, err
	}
	prop, err := m.propose(ctx, res.Branch, req, data)
	if err != nil {
		m.mu.Lock()
		p := m.pending[res.Branch]
		m.pending[res.Branch] = pendingSet{base: base, resources: mergeRefs(p.resources, req.Resources)}
		m.mu.Unlock()
		return nil, fmt.Errorf("branch %s was pushed (commit %s), but its proposal could not be opened; repeat the request to open it: %w", res.Branch, short(res.Commit), err)
	}
	m.mu.Lock()
	delete(m.pending, res.Branch)
	m.mu.Unlock()
	res.Proposal = &source.ProposalRef{ID: prop.ID, URL: prop.URL}
	return res, nil
}

// templateData is what the templates see of req, a write proposed for
// base.
func templateData(req *source.UpdateRequest, base string) *TemplateData {
	return &TemplateData{Message: req.Message, Subject: subject(req.Message), Resources: req.Resources, Requester: req.Requester, Base: base}
}

// propose finds the open proposal of branch, bringing its description up
// to date, or opens one for data.Base.
func (m *Manager) propose(ctx context.Context, branch string, req *source.UpdateRequest, data *TemplateData) (*scm.Tracked, error) {
	// One lookup of this branch's proposal: the cost of a write does not
	// grow with the proposals the repository holds. A change set keeps the
	// base its proposal was opened for, which a later write into it need
	// not name.
	base := data.Base
	m.mu.Lock()
	for _, have := range m.list {
		if have.Head == branch && have.State == scm.StateOpen {
			base = have.Base
			break
		}
	}
	m.mu.Unlock()
	p, err := m.cfg.Provider.Find(ctx, branch, base)
	if err != nil && !errors.Is(err, scm.ErrNotFound) {
		return nil, err
	}
	data.Branch = branch
	if p != nil {
		have, more := resourcesOf(p.Body)
		all := mergeRefs(have, req.Resources)
		if len(all) != len(have) {
			data.Base = p.Base
			body, err := description(m.cfg.Templates.Body, data, all, more)
			if err != nil {
				return nil, fmt.Errorf("proposals: body template: %w", err)
			}
			if err := m.cfg.Provider.SetBody(ctx, p.ID, body); err != nil {
				return nil, err
			}
			p.Body = body
		}
		return m.remember(p), nil
	}
	m.mu.Lock()
	if ps, ok := m.pending[branch]; ok {
		data.Resources = mergeRefs(ps.resources, req.Resources)
	}
	m.mu.Unlock()
	title, err := render(m.cfg.Templates.Title, data)
	if err != nil {
		return nil, fmt.Errorf("proposals: title template: %w", err)
	}
	body, err := description(m.cfg.Templates.Body, data, data.Resources, 0)
	if err != nil {
		return nil, fmt.Errorf("proposals: body template: %w", err)
	}
	p, err = m.cfg.Provider.Open(ctx, &scm.OpenRequest{
		Title:  strings.TrimSpace(title),
		Body:   body,
		Head:   branch,
		Base:   data.Base,
		Labels: m.cfg.Labels,
		Draft:  m.cfg.Draft,
	})
	if err != nil {
		return nil, err
	}
	return m.remember(p), nil
}

// identical answers a write that an open proposal (or a pushed change set
// still without one) of the same resources already holds: applying it on
// that branch changes nothing.
func (m *Manager) identical(ctx context.Context, req *source.UpdateRequest) (*source.UpdateResult, error) {
	if len(req.Resources) == 0 {
		return nil, nil
	}
	type candidate struct {
		branch, base string
		prop         *scm.Tracked
	}
	var cands []candidate
	m.mu.Lock()
	for _, p := range m.list {
		if p.State == scm.StateOpen && touchesAll(p.Resources, req.Resources) {
			cands = append(cands, candidate{branch: p.Head, base: p.Base, prop: p})
		}
	}
	for branch, ps := range m.pending {
		if touchesAll(ps.resources, req.Resources) {
			cands = append(cands, candidate{branch: branch, base: ps.base})
		}
	}
	m.mu.Unlock()
	for _, c := range cands {
		dry := *req
		dry.DryRun, dry.ChangeSet = true, c.branch
		res, err := m.cfg.Source.Update(ctx, &dry)
		if err != nil || !res.Unchanged {
			continue // gone, or different: not this one
		}
		prop := c.prop
		if prop == nil {
			if prop, err = m.propose(ctx, c.branch, req, templateData(req, c.base)); err != nil {
				return nil, fmt.Errorf("branch %s holds this change, but its proposal could not be opened; repeat the request to open it: %w", c.branch, err)
			}
			m.mu.Lock()
			delete(m.pending, c.branch)
			m.mu.Unlock()
		}
		// A dry run on a change set starts from its head: res.Base is the
		// branch's commit.
		return &source.UpdateResult{
			Branch:   c.branch,
			Base:     res.Base,
			Commit:   res.Base,
			Replayed: true,
			Proposal: &source.ProposalRef{ID: prop.ID, URL: prop.URL},
		}, nil
	}
	return nil, nil
}

// touchesAll reports whether have holds every ref of want.
func touchesAll(have, want []source.ResourceRef) bool {
	// A set, not a scan per ref: a batch may name 10,000 resources.
	set := make(map[source.ResourceRef]bool, len(have))
	for _, h := range have {
		set[h] = true
	}
	for _, w := range want {
		if !set[w] {
			return false
		}
	}
	return true
}

// info is what the Manager knows of p.
func (m *Manager) info(p *scm.Proposal) *scm.Tracked {
	rs, _ := resourcesOf(p.Body)
	return &scm.Tracked{Proposal: *p, Resources: rs, Provider: m.cfg.Provider.Name()}
}

// remember records p in the list, replacing an older copy.
func (m *Manager) remember(p *scm.Proposal) *scm.Tracked {
	info := m.info(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, have := range m.list {
		if have.ID == p.ID {
			m.list[i] = info
			return info
		}
	}
	m.list = append([]*scm.Tracked{info}, m.list...)
	return info
}

// Run refreshes the list of proposals every RefreshInterval until ctx is
// done, logging failures. It returns nil when ctx is done.
func (m *Manager) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.RefreshInterval)
	defer t.Stop()
	for {
		if err := m.Refresh(ctx); err != nil && ctx.Err() == nil {
			m.cfg.Logger.WarnContext(ctx, "reading proposals from the SCM failed; serving the last list", "provider", m.cfg.Provider.Name(), "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Refresh reads cup's proposals from the SCM.
func (m *Manager) Refresh(ctx context.Context) error {
	m.refreshMu.Lock()
	defer m.refreshMu.Unlock()
	ps, err := m.cfg.Provider.List(ctx, &scm.ListRequest{HeadPrefix: m.cfg.BranchPrefix})
	if err != nil {
		return err
	}
	list := make([]*scm.Tracked, len(ps))
	for i, p := range ps {
		list[i] = m.info(p)
	}
	m.mu.Lock()
	m.list = list
	m.mu.Unlock()
	return nil
}

// RefreshProposal reads one proposal from the SCM, as when a webhook names
// it: one call, however many proposals the repository has. A proposal that
// is not cup's is ignored; one the SCM no longer knows leaves the list.
func (m *Manager) RefreshProposal(ctx context.Context, id string) error {
	p, err := m.cfg.Provider.Get(ctx, id)
	switch {
	case errors.Is(err, scm.ErrNotFound):
		m.mu.Lock()
		m.list = slices.DeleteFunc(m.list, func(have *scm.Tracked) bool { return have.ID == id })
		m.mu.Unlock()
		return nil
	case err != nil:
		return err
	case !strings.HasPrefix(p.Head, m.cfg.BranchPrefix):
		return nil
	}
	m.remember(p)
	return nil
}

// List returns the proposals keep selects from the last list read, newest
// first; a nil keep selects all. The proposals are shared, never changed
// once listed: callers must not modify them.
func (m *Manager) List(keep func(*scm.Tracked) bool) []*scm.Tracked {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*scm.Tracked
	for _, p := range m.list {
		if keep == nil || keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// Get returns a proposal, read from the SCM so that its state is current,
// and falls back on the last list when the SCM cannot be reached. A
// proposal that is not cup's is reported as scm.ErrNotFound.
func (m *Manager) Get(ctx context.Context, id string) (*scm.Tracked, error) {
	p, err := m.cfg.Provider.Get(ctx, id)
	if err == nil {
		if !strings.HasPrefix(p.Head, m.cfg.BranchPrefix) {
			return nil, fmt.Errorf("%w: proposal %s was not opened by cup", scm.ErrNotFound, id)
		}
		return m.remember(p), nil
	}
	if errors.Is(err, scm.ErrNotFound) || ctx.Err() != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, have := range m.list {
		if have.ID == id {
			return have, nil
		}
	}
	return nil, err
}

func subject(msg string) string {
	s, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	return strings.TrimSpace(s)
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

var _ source.History = (*Manager)(nil)

// errNoHistory is the answer of the History methods over a source without
// the ability.
var errNoHistory = errors.New("proposals: the source cannot read its history")

// Commit reads from the wrapped source; see source.History.
func (m *Manager) Commit(ctx context.Context, id string) (*source.Commit, error) {
	h, ok := m.cfg.Source.(source.History)
	if !ok {
		return nil, errNoHistory
	}
	return h.Commit(ctx, id)
}

// ChangedPaths reads from the wrapped source; see source.History.
func (m *Manager) ChangedPaths(ctx context.Context, from, to string) ([]string, error) {
	h, ok := m.cfg.Source.(source.History)
	if !ok {
		return nil, errNoHistory
	}
	return h.ChangedPaths(ctx, from, to)
}

// ContentID reads from the wrapped source; see source.History.
func (m *Manager) ContentID(ctx context.Context, commit, path string) (string, error) {
	h, ok := m.cfg.Source.(source.History)
	if !ok {
		return "", errNoHistory
	}
	return h.ContentID(ctx, commit, path)
}
