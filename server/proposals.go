package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/cup-dev/cup/auth"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/source"
)

// Proposals tracks the proposals (pull or merge requests) cup opened; see
// WithProposals. The ProposalService answers from it, and a Get of a
// resource lists the open proposals that change the resource.
//
// Implementations are safe for concurrent use. Errors wrap the sentinels of
// package scm, which the server maps to API codes; a context that ends
// first gives its own error. ListProposals is called on every Get of a
// resource over Connect, gRPC and gRPC-Web, so it should answer from memory
// rather than ask the SCM each time. The server does not modify the
// proposals they return.
type Proposals interface {
	// ListProposals returns the proposals f selects, newest first.
	ListProposals(ctx context.Context, f ProposalFilter) ([]*scm.Tracked, error)
	// GetProposal returns the proposal with the given id (its number on
	// the host, e.g. "42"). An id that names no proposal cup opened fails
	// with an error wrapping scm.ErrNotFound.
	GetProposal(ctx context.Context, id string) (*scm.Tracked, error)
}

// ProposalFilter selects proposals. Its zero value selects every one.
type ProposalFilter struct {
	// State keeps proposals in this state; scm.StateUnspecified keeps all.
	State scm.State
	// Group, Plural, Namespace and Name keep the proposals that change a
	// resource agreeing with each of them that is not empty.
	Group, Plural, Namespace, Name string
}

// Matches reports whether f selects p: p is in f.State (or f.State is
// scm.StateUnspecified) and, when f names any of group, plural, namespace or
// name, one of p.Resources agrees with each of them.
func (f ProposalFilter) Matches(p *scm.Tracked) bool {
	if f.State != scm.StateUnspecified && p.State != f.State {
		return false
	}
	if f.Group == "" && f.Plural == "" && f.Namespace == "" && f.Name == "" {
		return true
	}
	same := func(want, got string) bool { return want == "" || want == got }
	for _, r := range p.Resources {
		if same(f.Group, r.Group) && same(f.Plural, r.Plural) && same(f.Namespace, r.Namespace) && same(f.Name, r.Name) {
			return true
		}
	}
	return false
}

// WithProposals makes the server answer the ProposalService from p and list
// a resource's open proposals in GetResponse.proposals. Default: none; the
// ProposalService then fails with FailedPrecondition and
// GetResponse.proposals is empty.
func WithProposals(p Proposals) Option { return func(c *config) { c.proposals = p } }

// noSCM is the message of every ProposalService call on a server without
// Proposals.
const noSCM = "no SCM is configured: start cupd with --scm (github, gitlab or gitea) to track proposals"

// proposalsOnGetTimeout bounds how long a Get of a resource waits for its
// proposals before answering without them.
const proposalsOnGetTimeout = time.Second

// reservedGroup is the API group of cup's own REST routes; no configured
// type may use it.
const reservedGroup = "cup.dev"

// The REST form of the ProposalService. Their paths have no namespaces
// segment, so they never match a resource route; and New rejects types in
// reservedGroup, so no type can be mistaken for them.
const (
	proposalsPath = "/apis/" + reservedGroup + "/v1alpha1/proposals"
	proposalPath  = proposalsPath + "/{id}"
)

// proposalAttributes describe a call of the ProposalService: proposals are
// cup's own resources, in the group cup.dev and in no namespace, so only a
// cluster-wide binding grants them.
func proposalAttributes(verb, id string) auth.Attributes {
	return auth.Attributes{Verb: verb, Group: reservedGroup, Plural: "proposals", Name: id}
}

// changeSetAttributes describe adding to the change set name that another
// user started: put on changesets.cup.dev, granted only cluster-wide (a
// change set may touch several namespaces) and, since change-set names
// hold '/', never by resourceNames.
func changeSetAttributes(name string) auth.Attributes {
	return auth.Attributes{Verb: auth.VerbPut, Group: reservedGroup, Plural: "changesets", Name: name}
}

func (s *Server) proposals() (Proposals, error) {
	if s.cfg.proposals == nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New(noSCM))
	}
	return s.cfg.proposals, nil
}

// listProposals serves ListProposalsRequest for both forms.
func (s *Server) listProposals(ctx context.Context, req *cupv1alpha1.ListProposalsRequest) (*cupv1alpha1.ListProposalsResponse, error) {
	if err := s.authorize(ctx, proposalAttributes(auth.VerbList, "")); err != nil {
		return nil, err
	}
	p, err := s.proposals()
	if err != nil {
		return nil, err
	}
	infos, err := p.ListProposals(ctx, ProposalFilter{
		State: scmState(req.State), Group: req.Group, Plural: req.Plural, Namespace: req.Namespace, Name: req.Name,
	})
	if err != nil {
		return nil, notCallersNotFound(err)
	}
	return &cupv1alpha1.ListProposalsResponse{Proposals: proposalProtos(infos)}, nil
}

// getProposal serves GetProposalRequest for both forms.
func (s *Server) getProposal(ctx context.Context, req *cupv1alpha1.GetProposalRequest) (*cupv1alpha1.Proposal, error) {
	if err := s.authorize(ctx, proposalAttributes(auth.VerbGet, req.Id)); err != nil {
		return nil, err
	}
	p, err := s.proposals()
	if err != nil {
		return nil, err
	}
	info, err := p.GetProposal(ctx, req.Id)
	if err == nil && info == nil {
		err = scm.ErrNotFound
	}
	if errors.Is(err, scm.ErrNotFound) {
		return nil, advise(err, "proposal", req.Id, "ListProposals (GET "+proposalsPath+") lists the proposals cup opened")
	}
	if err != nil {
		return nil, err
	}
	return proposalProto(info), nil
}

// openProposals lists the open proposals changing one resource, for a Get.
// It never fails: without Proposals, or when they fail, it logs and returns
// none, and it waits at most proposalsOnGetTimeout. Callers who may not
// list proposals get none.
func (s *Server) openProposals(ctx context.Context, group, plural, namespace, name string) []*cupv1alpha1.Proposal {
	if s.cfg.proposals == nil || !s.allowed(ctx, proposalAttributes(auth.VerbList, "")) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, proposalsOnGetTimeout)
	defer cancel()
	infos, err := s.cfg.proposals.ListProposals(ctx, ProposalFilter{
		State: scm.StateOpen, Group: group, Plural: plural, Namespace: namespace, Name: name,
	})
	if err != nil {
		s.cfg.logger.WarnContext(ctx, "answering a get without the resource's proposals: listing them failed",
			"group", group, "plural", plural, "namespace", namespace, "name", name, "error", err)
		return nil
	}
	return proposalProtos(infos)
}

// writtenProposal is the WriteResult.proposal of an update that proposed
// its change (res.Proposal is set). base is the branch the write targeted,
// when known.
func writtenProposal(res *source.UpdateResult, base string) *cupv1alpha1.Proposal {
	return &cupv1alpha1.Proposal{
		Id: res.Proposal.ID, Url: res.Proposal.URL, State: cupv1alpha1.ProposalState_PROPOSAL_STATE_OPEN,
		Branch: res.Branch, Base: base,
	}
}

// defaultBrancher is the optional ability of a source to name its default
// branch (source/local and source/git have it).
type defaultBrancher interface {
	DefaultBranch() (string, error)
}

// targetBranch is the branch a write's proposal is for: the revision the
// request named, else the source's default branch when it can tell; empty
// for writes to an existing change set, whose base the server does not know.
func (s *Server) targetBranch(w *writeTarget) string {
	switch {
	case w.changeSet != "":
		return ""
	case w.revision != "":
		return strings.TrimPrefix(w.revision, "refs/heads/")
	}
	if db, ok := s.src.(defaultBrancher); ok {
		if b, err := db.DefaultBranch(); err == nil {
			return b
		}
	}
	return ""
}

func proposalProtos(infos []*scm.Tracked) []*cupv1alpha1.Proposal {
	out := make([]*cupv1alpha1.Proposal, 0, len(infos))
	for _, info := range infos {
		out = append(out, proposalProto(info))
	}
	return out
}

func proposalProto(p *scm.Tracked) *cupv1alpha1.Proposal {
	out := &cupv1alpha1.Proposal{
		Id: p.ID, Url: p.URL, Title: p.Title, State: proposalState(p.State),
		Branch: p.Head, Base: p.Base, Draft: p.Draft, Provider: p.Provider,
	}
	if len(p.Resources) > 0 {
		out.Resources = make([]*cupv1alpha1.ResourceRef, 0, len(p.Resources))
	}
	for _, r := range p.Resources {
		out.Resources = append(out.Resources, &cupv1alpha1.ResourceRef{
			Group: r.Group, Version: r.Version, Kind: r.Kind, Plural: r.Plural, Namespace: r.Namespace, Name: r.Name,
		})
	}
	if !p.CreatedAt.IsZero() {
		out.CreateTime = timestamppb.New(p.CreatedAt)
	}
	if !p.UpdatedAt.IsZero() {
		out.UpdateTime = timestamppb.New(p.UpdatedAt)
	}
	return out
}

// proposalStates pairs the API's proposal states with scm's.
var proposalStates = [...]struct {
	scm scm.State
	api cupv1alpha1.ProposalState
}{
	{scm.StateOpen, cupv1alpha1.ProposalState_PROPOSAL_STATE_OPEN},
	{scm.StateMerged, cupv1alpha1.ProposalState_PROPOSAL_STATE_MERGED},
	{scm.StateClosed, cupv1alpha1.ProposalState_PROPOSAL_STATE_CLOSED},
}

func proposalState(s scm.State) cupv1alpha1.ProposalState {
	for _, m := range proposalStates {
		if m.scm == s {
			return m.api
		}
	}
	return cupv1alpha1.ProposalState_PROPOSAL_STATE_UNSPECIFIED
}

func scmState(s cupv1alpha1.ProposalState) scm.State {
	for _, m := range proposalStates {
		if m.api == s {
			return m.scm
		}
	}
	return scm.StateUnspecified
}

// The REST form:
//
//	GET /apis/cup.dev/v1alpha1/proposals?state=&group=&plural=&namespace=&name=  {"proposals": [...]}
//	GET /apis/cup.dev/v1alpha1/proposals/{id}                                    the proposal
//
// state is open, merged or closed (or the enum's name, PROPOSAL_STATE_OPEN);
// empty keeps every state.
func (s *Server) restListProposals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := &cupv1alpha1.ListProposalsRequest{
		Group: q.Get("group"), Plural: q.Get("plural"), Namespace: q.Get("namespace"), Name: q.Get("name"),
	}
	if v := q.Get("state"); v != "" {
		st, err := scm.ParseState(strings.ToLower(strings.TrimPrefix(v, "PROPOSAL_STATE_")))
		if err != nil {
			s.writeError(w, r, fieldError("state", "%q is not a proposal state: open, merged or closed", v))
			return
		}
		req.State = proposalState(st)
	}
	if err := s.validate(req); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.listProposals(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Always with the array, also when it is empty, which protojson omits.
	b := []byte(`{"proposals":[`)
	for i, p := range out.Proposals {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = marshalJSON.MarshalAppend(b, p); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	b = append(b, "]}"...)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func (s *Server) restGetProposal(w http.ResponseWriter, r *http.Request) {
	req := &cupv1alpha1.GetProposalRequest{Id: r.PathValue("id")}
	if err := s.validate(req); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.getProposal(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeMessage(w, r, http.StatusOK, p)
}

// proposalService adapts the Server to the generated Connect interface.
type proposalService struct{ s *Server }

var _ cupv1alpha1connect.ProposalServiceHandler = (*proposalService)(nil)

func (h *proposalService) ListProposals(ctx context.Context, req *connect.Request[cupv1alpha1.ListProposalsRequest]) (*connect.Response[cupv1alpha1.ListProposalsResponse], error) {
	out, err := h.s.listProposals(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

func (h *proposalService) GetProposal(ctx context.Context, req *connect.Request[cupv1alpha1.GetProposalRequest]) (*connect.Response[cupv1alpha1.GetProposalResponse], error) {
	p, err := h.s.getProposal(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&cupv1alpha1.GetProposalResponse{Proposal: p}), nil
}

// checkGroup rejects a type in the group cup's own routes use.
func checkGroup(t *Type) error {
	if t.Group == reservedGroup {
		return fmt.Errorf("server: type %s/%s/%s: the group %s is reserved for cup's own API (%s): choose another, such as a subdomain of it",
			t.Group, t.Version, t.Plural, reservedGroup, proposalsPath)
	}
	return nil
}
