package proposals_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cup-dev/cup/internal/changeset"
	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/proposals"
	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/local"
)

// provider is an in-memory scm.Provider that records its calls and can
// be made to fail.
type provider struct {
	mu    sync.Mutex
	props []*scm.Proposal
	calls []string
	fail  map[string]error // by method
}

func (p *provider) Name() string { return "fake" }

func (p *provider) call(method string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, method)
	return p.fail[method]
}

func (p *provider) setFail(method string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail == nil {
		p.fail = map[string]error{}
	}
	p.fail[method] = err
}

func (p *provider) count(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.calls {
		if c == method {
			n++
		}
	}
	return n
}

func (p *provider) Open(_ context.Context, req *scm.OpenRequest) (*scm.Proposal, error) {
	if err := p.call("Open"); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	id := strconv.Itoa(len(p.props) + 1)
	pr := &scm.Proposal{ID: id, URL: "https://scm.example/pr/" + id, Title: req.Title, Body: req.Body,
		Head: req.Head, Base: req.Base, State: scm.StateOpen, Draft: req.Draft, Labels: req.Labels}
	p.props = append(p.props, pr)
	c := *pr
	return &c, nil
}

func (p *provider) Get(_ context.Context, id string) (*scm.Proposal, error) {
	if err := p.call("Get"); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pr := range p.props {
		if pr.ID == id {
			c := *pr
			return &c, nil
		}
	}
	return nil, fmt.Errorf("%w: #%s", scm.ErrNotFound, id)
}

func (p *provider) List(_ context.Context, req *scm.ListRequest) ([]*scm.Proposal, error) {
	if err := p.call("List"); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*scm.Proposal
	for i := len(p.props) - 1; i >= 0; i-- {
		pr := p.props[i]
		if (req.State == scm.StateUnspecified || pr.State == req.State) && (req.Head == "" || pr.Head == req.Head) &&
			strings.HasPrefix(pr.Head, req.HeadPrefix) {
			c := *pr
			out = append(out, &c)
		}
	}
	return out, nil
}

func (p *provider) Find(_ context.Context, head, base string) (*scm.Proposal, error) {
	if err := p.call("Find"); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.props) - 1; i >= 0; i-- {
		if pr := p.props[i]; pr.Head == head && pr.Base == base && pr.State == scm.StateOpen {
			c := *pr
			return &c, nil
		}
	}
	return nil, fmt.Errorf("%w: no open proposal from %s into %s", scm.ErrNotFound, head, base)
}

func (p *provider) SetBody(_ context.Context, id, body string) error {
	if err := p.call("SetBody"); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pr := range p.props {
		if pr.ID == id {
			pr.Body = body
			return nil
		}
	}
	return scm.ErrNotFound
}

type fixture struct {
	dir string
	src *local.Source
	scm *provider
	m   *proposals.Manager
}

func newFixture(t *testing.T, opts ...func(*proposals.Config)) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), scm: &provider{}}
	if _, err := gitrepo.Init(f.dir, "main", map[string][]byte{"flags/default/a.yaml": []byte("a: 1\n")}, "initial\n"); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.src, err = local.Open(f.dir, local.WithWriteMode(source.ModeBranch)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.src.Close() })
	cfg := proposals.Config{Source: f.src, Provider: f.scm, DefaultBranch: "main", Labels: []string{"cup"}}
	for _, o := range opts {
		o(&cfg)
	}
	if f.m, err = proposals.New(cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

var flagA = source.ResourceRef{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Flag", Plural: "flags", Namespace: "default", Name: "a"}
var flagB = source.ResourceRef{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Flag", Plural: "flags", Namespace: "default", Name: "b"}

func put(ref source.ResourceRef, content string) *source.UpdateRequest {
	return &source.UpdateRequest{
		Message:   "Update Flag " + ref.Namespace + "/" + ref.Name + "\n\nby the API\n",
		Resources: []source.ResourceRef{ref},
		Requester: "alice",
		Apply: func(_ context.Context, _ *source.Snapshot, w source.Writer) error {
			return w.WriteFile("flags/"+ref.Namespace+"/"+ref.Name+".yaml", []byte(content), 0o644)
		},
	}
}

func TestUpdateOpensProposal(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *proposals.Config) { c.Draft = true })
	res, err := f.m.Update(t.Context(), put(flagA, "a: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Proposal == nil || res.Proposal.ID != "1" || !strings.HasPrefix(res.Branch, "cup/") || res.Commit == "" {
		t.Fatalf("result %+v", res)
	}
	pr := f.scm.props[0]
	if pr.Title != "Update Flag default/a" || pr.Head != res.Branch || pr.Base != "main" || !pr.Draft || len(pr.Labels) != 1 {
		t.Errorf("proposal %+v", pr)
	}
	for _, want := range []string{"by alice", "| Flag (flags.cup.dev/v1alpha1) | default | a |", "<!-- cup:resources "} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, pr.Body)
		}
	}
	if head, _ := gitrepo.Resolve(f.dir, "main"); head == res.Commit {
		t.Error("main moved")
	}
	if got := f.m.List(where(scm.StateOpen, "a")); len(got) != 1 || len(got[0].Resources) != 1 || got[0].Resources[0] != flagA {
		t.Errorf("List: %+v", got)
	}
}

func TestChangeSetGrowsProposal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	first, err := f.m.Update(t.Context(), put(flagA, "a: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	req := put(flagB, "b: 1\n")
	req.ChangeSet = first.Branch
	second, err := f.m.Update(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if second.Proposal.ID != first.Proposal.ID || second.Branch != first.Branch || f.scm.count("Open") != 1 {
		t.Fatalf("second write %+v, %d proposals opened", second, f.scm.count("Open"))
	}
	if body := f.scm.props[0].Body; !strings.Contains(body, "| default | a |") || !strings.Contains(body, "| default | b |") {
		t.Errorf("body does not list both:\n%s", body)
	}
	if got := f.m.List(where(scm.StateUnspecified, "b")); len(got) != 1 {
		t.Errorf("List by b: %d", len(got))
	}
}

func TestRetriesOpenNoDuplicate(t *testing.T) {
	t.Parallel()
	for _, keyed := range []bool{true, false} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			req := func() *source.UpdateRequest {
				r := put(flagA, "a: 3\n")
				if keyed {
					r.IdempotencyKey, r.Fingerprint = "k-1", "fp"
				}
				return r
			}
			f.scm.setFail("Open", fmt.Errorf("%w: 502 Bad Gateway", scm.ErrUnavailable))
			_, err := f.m.Update(t.Context(), req())
			if !errors.Is(err, scm.ErrUnavailable) || !strings.Contains(err.Error(), "cup/") {
				t.Fatalf("first: %v, want ErrUnavailable naming the pushed branch", err)
			}
			f.scm.setFail("Open", nil)
			res, err := f.m.Update(t.Context(), req())
			if err != nil {
				t.Fatal(err)
			}
			again, err := f.m.Update(t.Context(), req())
			if err != nil {
				t.Fatal(err)
			}
			if len(f.scm.props) != 1 || res.Proposal == nil || again.Proposal.ID != res.Proposal.ID || again.Branch != res.Branch {
				t.Fatalf("%d proposals; results %+v and %+v", len(f.scm.props), res, again)
			}
			if n := countBranches(t, f.dir); n != 1 {
				t.Errorf("%d change-set branches, want 1", n)
			}
		})
	}
}

func countBranches(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "refs", "heads", "cup"))
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func TestIdenticalWriteAnswersOpenProposal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	first, err := f.m.Update(t.Context(), put(flagA, "a: 4\n"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.m.Update(t.Context(), put(flagA, "a: 4\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.Proposal.ID != first.Proposal.ID || again.Commit != first.Commit {
		t.Fatalf("identical write: %+v, want the first proposal", again)
	}
	other, err := f.m.Update(t.Context(), put(flagA, "a: 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if other.Proposal.ID == first.Proposal.ID {
		t.Error("a different write joined the first proposal")
	}
	if countBranches(t, f.dir) != 2 || f.scm.count("Open") != 2 {
		t.Errorf("%d branches, %d proposals", countBranches(t, f.dir), f.scm.count("Open"))
	}
}

func TestDryRunAndUnchangedOpenNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := put(flagA, "a: 9\n")
	req.DryRun = true
	if res, err := f.m.Update(t.Context(), req); err != nil || res.Proposal != nil {
		t.Fatalf("dry run: %+v, %v", res, err)
	}
	if res, err := f.m.Update(t.Context(), put(flagA, "a: 1\n")); err != nil || !res.Unchanged || res.Proposal != nil {
		t.Fatalf("unchanged: %+v, %v", res, err)
	}
	if len(f.scm.calls) != 0 {
		t.Errorf("SCM calls %v", f.scm.calls)
	}
}

func TestRefreshListGet(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res, err := f.m.Update(t.Context(), put(flagA, "a: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	f.scm.props = append(f.scm.props, &scm.Proposal{ID: "2", Head: "feature/x", Base: "main", State: scm.StateOpen})
	f.scm.props[0].State = scm.StateMerged
	if err := f.m.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := f.m.List(nil); len(got) != 1 || got[0].State != scm.StateMerged {
		t.Fatalf("List after refresh: %+v", got)
	}
	if got := f.m.List(where(scm.StateOpen, "")); len(got) != 0 {
		t.Errorf("open: %d", len(got))
	}
	if _, err := f.m.Get(t.Context(), "2"); !errors.Is(err, scm.ErrNotFound) {
		t.Errorf("Get of a proposal cup did not open: %v", err)
	}
	f.scm.setFail("Get", scm.ErrUnavailable)
	if got, err := f.m.Get(t.Context(), res.Proposal.ID); err != nil || got.State != scm.StateMerged {
		t.Errorf("Get with the SCM down: %+v, %v", got, err)
	}
}

func TestLoadTemplates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, proposals.TitleFile), []byte("[cup] {{.Subject}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	tmpl, err := proposals.LoadTemplates(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(c *proposals.Config) { c.Templates = tmpl })
	if _, err := f.m.Update(t.Context(), put(flagA, "a: 2\n")); err != nil {
		t.Fatal(err)
	}
	if got := f.scm.props[0].Title; got != "[cup] Update Flag default/a" {
		t.Errorf("title %q", got)
	}
	if err := os.WriteFile(filepath.Join(dir, proposals.BodyFile), []byte("{{.Nope}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := proposals.LoadTemplates(dir); err == nil || !strings.Contains(err.Error(), proposals.BodyFile) {
		t.Errorf("bad template: %v, want an error naming %s", err, proposals.BodyFile)
	}
}

// where selects the proposals in state (any, for scm.StateUnspecified)
// that change the resource named name (any, for "").
func where(state scm.State, name string) func(*scm.Tracked) bool {
	return func(p *scm.Tracked) bool {
		if state != scm.StateUnspecified && p.State != state {
			return false
		}
		if name == "" {
			return true
		}
		for _, r := range p.Resources {
			if r.Name == name {
				return true
			}
		}
		return false
	}
}

// TestPendingBranchProposalNamesBase: a branch pushed without its proposal
// gets one on an identical retry, and its description names the branch it
// is for.
func TestPendingBranchProposalNamesBase(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.scm.setFail("Open", fmt.Errorf("%w: 502 Bad Gateway", scm.ErrUnavailable))
	if _, err := f.m.Update(t.Context(), put(flagA, "a: 6\n")); !errors.Is(err, scm.ErrUnavailable) {
		t.Fatalf("first: %v, want ErrUnavailable", err)
	}
	f.scm.setFail("Open", nil)
	res, err := f.m.Update(t.Context(), put(flagA, "a: 6\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Replayed || res.Proposal == nil || len(f.scm.props) != 1 {
		t.Fatalf("retry: %+v, %d proposals", res, len(f.scm.props))
	}
	if head, _ := gitrepo.Resolve(f.dir, res.Branch); res.Commit != head {
		t.Errorf("commit %s, branch %s at %s", res.Commit, res.Branch, head)
	}
	pr := f.scm.props[0]
	if want := "Branch `" + res.Branch + "` into `main`."; pr.Base != "main" || !strings.Contains(pr.Body, want) {
		t.Errorf("proposal for %q, body lacks %q:\n%s", pr.Base, want, pr.Body)
	}
}

// TestCommitTemplateKeepsTrailersLast: the trailers cupd writes end the
// commit message whatever the commit template renders, and a template
// that renders a reserved trailer fails the write as the operator's
// fault, writing nothing.
func TestCommitTemplateKeepsTrailersLast(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, commit string
		wantErr      bool
	}{
		{"own trailer block", "{{.Message}}\nReviewed-by: ops <ops@example.com>\n", false},
		{"reserved trailer", "{{.Message}}\n\nRequested-by: {{.Requester}}\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, proposals.CommitFile), []byte(tt.commit), 0o644); err != nil {
				t.Fatal(err)
			}
			tmpl, err := proposals.LoadTemplates(dir)
			if err != nil {
				t.Fatal(err)
			}
			f := newFixture(t, func(c *proposals.Config) { c.Templates = tmpl })
			req := put(flagA, "a: 2\n")
			req.IdempotencyKey, req.Fingerprint = "k-1", "fp"
			res, err := f.m.Update(t.Context(), req)
			if tt.wantErr {
				if err == nil || errors.Is(err, source.ErrInvalidMessage) || !strings.Contains(err.Error(), "template") {
					t.Fatalf("Update = %v, %v; want an error blaming the template, not the caller", res, err)
				}
				branch := changeset.KeyBranchName(source.DefaultBranchPrefix, "alice", "k-1")
				if _, err := gitrepo.Resolve(f.dir, branch); err == nil || f.scm.count("Open") != 0 {
					t.Fatalf("a refused template left branch %s or a proposal behind", branch)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			log, err := gitrepo.Log(f.dir, res.Commit)
			if err != nil {
				t.Fatal(err)
			}
			want := "Reviewed-by: ops <ops@example.com>\nRequested-by: alice\nCup-Change-Set-Owner: alice\nCup-Idempotency-Key: k-1\nCup-Request: fp\n"
			if msg := log[0].Message; !strings.HasSuffix(msg, "\n\n"+want) {
				t.Fatalf("commit message %q does not end with %q", msg, want)
			}
		})
	}
}

// TestChangeSetKeepsItsBase: a write into a change set that names no base
// joins the proposal the change set has, whatever base that is for.
func TestChangeSetKeepsItsBase(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if out, err := exec.Command("git", "-C", f.dir, "branch", "release", "main").CombinedOutput(); err != nil {
		t.Fatalf("git branch: %v\n%s", err, out)
	}
	req := put(flagA, "a: 2\n")
	req.Revision = "release"
	first, err := f.m.Update(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	req = put(flagB, "b: 1\n")
	req.ChangeSet = first.Branch
	second, err := f.m.Update(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if second.Proposal.ID != first.Proposal.ID || f.scm.count("Open") != 1 || f.scm.props[0].Base != "release" {
		t.Fatalf("second write %+v, %d proposals opened, first for %s", second, f.scm.count("Open"), f.scm.props[0].Base)
	}
}

// manyFlags is a write of n flags in one commit, as a batch makes.
func manyFlags(n int, from int) *source.UpdateRequest {
	req := &source.UpdateRequest{Message: fmt.Sprintf("Apply %d resources\n", n), Requester: "alice"}
	for i := range n {
		req.Resources = append(req.Resources, source.ResourceRef{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Flag", Plural: "flags",
			Namespace: "default", Name: fmt.Sprintf("flag-%05d", from+i)})
	}
	req.Apply = func(_ context.Context, _ *source.Snapshot, w source.Writer) error {
		for _, r := range req.Resources {
			if err := w.WriteFile("flags/default/"+r.Name+".yaml", []byte("x: 1\n"), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	return req
}

// TestLargeBatchFitsTheDescription: a proposal of 10,000 resources lists
// as many as fit in a description GitHub takes (65,536 characters), says
// how many more there are, and reads back what it lists; a later write
// into the change set counts its resources among the more.
func TestLargeBatchFitsTheDescription(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res, err := f.m.Update(t.Context(), manyFlags(10_000, 0))
	if err != nil {
		t.Fatal(err)
	}
	body := f.scm.props[0].Body
	listed := strings.Count(body, "| Flag (flags.cup.dev/v1alpha1) | default | flag-")
	if len(body) > 60_000 || listed < 100 || listed >= 10_000 {
		t.Fatalf("description of %d bytes lists %d of 10,000", len(body), listed)
	}
	if want := fmt.Sprintf("| and %d more | | |", 10_000-listed); !strings.Contains(body, want) {
		t.Errorf("body lacks %q", want)
	}
	got := f.m.List(where(scm.StateOpen, "flag-00000"))
	if len(got) != 1 || len(got[0].Resources) != listed {
		t.Fatalf("List: %d proposals, want one listing %d resources", len(got), listed)
	}
	more := manyFlags(3, 10_000)
	more.ChangeSet = res.Branch
	if _, err := f.m.Update(t.Context(), more); err != nil {
		t.Fatal(err)
	}
	body = f.scm.props[0].Body
	if len(body) > 60_000 || !strings.Contains(body, fmt.Sprintf("| and %d more | | |", 10_003-listed)) {
		t.Errorf("after 3 more: %d bytes, lacks the new count:\n%.300s", len(body), body[len(body)-300:])
	}
}
