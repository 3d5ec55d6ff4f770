package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/changeset"
	"github.com/cup-dev/cup/source"
)

// History: the commits that changed one resource, newest first. The walk
// follows the first-parent history of the branch (a merged proposal is its
// merge commit) and stops at a page: it never replays the log. Where the
// controller maps resources to paths (controller.PathMapper), a commit is
// looked at only when the blob at the resource's path differs from its
// parent's, which costs a lookup along the path; other controllers have
// the resource read at both commits (memoised). A call walks at most
// historyWalk commits (historyWalkUnmapped without a path) and answers a
// page token to walk on from there. Pages are memoised by where they
// start, so a page asked again costs nothing.

const (
	// DefaultHistoryPage is the page size of a history that asks for none.
	defaultHistoryPage  = 20
	historyWalk         = 100_000
	historyWalkUnmapped = 250
)

// historyQuery is what a history asks besides the resource.
type historyQuery struct {
	until, since, pageToken string
	pageSize                int
}

// historyPage is a page of a resource's history.
type historyPage struct {
	commit  string // until, resolved
	entries []*cupv1alpha1.HistoryEntry
	next    string
}

// historyToken continues a history: from the first parent of After, on the
// history of Head.
type historyToken struct {
	Head  string `json:"h"`
	After string `json:"a"`
	Since string `json:"s,omitempty"`
	Query uint64 `json:"q"`
}

// history reads a page of the history of the resource at at.
func (s *Server) history(ctx context.Context, at ref, q historyQuery) (*historyPage, error) {
	t, err := s.typeFor(ctx, at, auth.VerbGet)
	if err != nil {
		return nil, err
	}
	h, err := s.historyOf()
	if err != nil {
		return nil, err
	}
	size := q.pageSize
	if size == 0 {
		size = defaultHistoryPage
	}
	qh := queryHash(at, "history")
	var head, from, since string
	if q.pageToken != "" {
		var tok historyToken
		if err := decodeJSONToken(q.pageToken, &tok); err != nil || tok.Query != qh || len(tok.Head) != 40 || len(tok.After) != 40 {
			return nil, fieldError("page_token", "not a page token of this history: start again without it")
		}
		head, since = tok.Head, tok.Since
		if from, err = firstParent(ctx, h, tok.After); err != nil {
			return nil, err
		}
	} else {
		snap, err := s.src.View(ctx, q.until)
		if err != nil {
			return nil, err
		}
		head, from = snap.Commit, snap.Commit
		if q.since != "" {
			snap, err := s.src.View(ctx, q.since)
			if err != nil {
				return nil, fmt.Errorf("since: %w", err)
			}
			since = snap.Commit
		}
	}
	k := memoKey{commit: from, typ: t, namespace: at.namespace, name: at.name + "\x00" + since + "\x00" + strconv.Itoa(size), what: memoHistory}
	v, err := s.memo.do(ctx, k, func() (any, int64, error) {
		p, err := s.walkHistory(ctx, h, t, at, from, since, size)
		if err != nil {
			return nil, 0, err
		}
		n := int64(len(p.next)) + 64
		for _, e := range p.entries {
			n += int64(len(e.Commit)+len(e.Time)+len(e.AuthorName)+len(e.AuthorEmail)+len(e.Requester)+len(e.Subject)+
				len(e.ResourceVersion)+len(e.Proposal)+len(e.ProposalUrl)) + 128
		}
		return p, n, nil
	})
	if err != nil {
		return nil, err
	}
	p := v.(*historyPage)
	out := &historyPage{commit: head, entries: p.entries}
	if p.next != "" {
		out.next = encodeJSONToken(historyToken{Head: head, After: p.next, Since: since, Query: qh})
	}
	return out, nil
}

// walkHistory walks from commit from (included) down its first parents,
// until since (excluded), a page of size entries, or the walk's bound;
// next, when set, is the last commit walked.
func (s *Server) walkHistory(ctx context.Context, h source.History, t *Type, at ref, from, since string, size int) (*historyPage, error) {
	p := &historyPage{}
	var path string
	limit := historyWalkUnmapped
	if pm, ok := t.Controller.(controller.PathMapper); ok {
		var err error
		path, err = pm.ResourcePath(t.Type, at.namespace, at.name)
		switch {
		case err == nil:
			limit = historyWalk
		case errors.Is(err, controller.ErrInvalid):
			return nil, fieldError("name", "%q: %v", at.name, err)
		case !errors.Is(err, controller.ErrUnsupported):
			return nil, err
		}
	}
	// Each commit is looked up once: as the commit walked, then as its
	// child's parent.
	after, err := pointAt(ctx, h, from, path)
	if err != nil {
		return nil, err
	}
	walked, last := 0, ""
	for c := from; c != "" && c != since; walked++ {
		if walked == limit {
			p.next = last // the token walks on from last's first parent: c
			return p, nil
		}
		last = c
		ci, err := h.Commit(ctx, c)
		if err != nil {
			return nil, err
		}
		parent := ""
		if len(ci.Parents) > 0 {
			parent = ci.Parents[0]
		}
		before, err := pointAt(ctx, h, parent, path)
		if err != nil {
			return nil, err
		}
		e, err := s.historyEntry(ctx, h, t, at, ci, before, after)
		if err != nil {
			return nil, err
		}
		after = before
		if e != nil {
			p.entries = append(p.entries, e)
			if len(p.entries) == size {
				if parent != "" && parent != since {
					p.next = c
				}
				return p, nil
			}
		}
		c = parent
	}
	return p, nil
}

// historyPoint is a commit of a history walk ("" for none, before a root
// commit) and the content id of the file at the resource's path.
type historyPoint struct {
	commit string
	// blob is the content id of the file at the path, "" where there is
	// none; known is false when there is no path to look up (then the
	// resource is read).
	blob  string
	known bool
}

// pointAt looks commit ("" for none) up for a walk over path ("" when the
// controller names no file). It reads the trees along the path only: the
// resource is read, from a snapshot, only at commits that changed it.
func pointAt(ctx context.Context, h source.History, commit, path string) (historyPoint, error) {
	pt := historyPoint{commit: commit, known: path != "" || commit == ""}
	if commit == "" || path == "" {
		return pt, nil
	}
	id, err := h.ContentID(ctx, commit, path)
	switch {
	case err == nil:
		pt.blob = id
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrInvalid):
		// no file there
	default:
		return historyPoint{}, err
	}
	return pt, nil
}

// snapshot is the snapshot of a point of a walk, nil before a root commit.
func (s *Server) snapshot(ctx context.Context, pt historyPoint) (*source.Snapshot, error) {
	if pt.commit == "" {
		return nil, nil
	}
	return s.src.View(ctx, pt.commit)
}

// historyEntry returns the entry of commit ci for the resource, nil when
// the commit did not change it: before is its first parent, after itself.
func (s *Server) historyEntry(ctx context.Context, h source.History, t *Type, at ref, ci *source.Commit, before, after historyPoint) (*cupv1alpha1.HistoryEntry, error) {
	if before.known && after.known && before.blob == after.blob {
		return nil, nil
	}
	var read [2]*entry
	for i, pt := range [2]historyPoint{before, after} {
		snap, err := s.snapshot(ctx, pt)
		if err != nil {
			return nil, err
		}
		if read[i], err = s.readOrAbsent(ctx, t, snap, at.namespace, at.name); err != nil {
			return nil, err
		}
	}
	old, new := read[0], read[1]
	e := &cupv1alpha1.HistoryEntry{
		Commit: ci.ID, Time: ci.Committer.When.UTC().Format(time.RFC3339),
		AuthorName: ci.Author.Name, AuthorEmail: ci.Author.Email,
		Subject: subject(ci.Message),
	}
	switch {
	case old == nil && new == nil, old != nil && new != nil && old.version == new.version:
		return nil, nil
	case old == nil:
		e.Change = cupv1alpha1.ChangeType_CHANGE_TYPE_CREATED
	case new == nil:
		e.Change = cupv1alpha1.ChangeType_CHANGE_TYPE_DELETED
	default:
		e.Change = cupv1alpha1.ChangeType_CHANGE_TYPE_MODIFIED
	}
	if new != nil {
		e.ResourceVersion = new.resourceVersion()
	}
	e.Requester = requesterOf(ci.Message)
	if len(ci.Parents) > 1 {
		// A merge: the proposal it merged, and who asked for its change.
		if e.Requester == "" {
			if side, err := h.Commit(ctx, ci.Parents[1]); err == nil {
				e.Requester = requesterOf(side.Message)
			}
		}
		e.Proposal = mergedProposal(ci.Message)
	}
	if e.Proposal != "" && s.cfg.proposals != nil {
		if p, err := s.cfg.proposals.GetProposal(ctx, e.Proposal); err == nil {
			e.ProposalUrl = p.URL
		}
	}
	return e, nil
}

// subject is the first line of a commit message.
func subject(msg string) string {
	line, _, _ := strings.Cut(strings.TrimLeft(msg, "\n"), "\n")
	return strings.TrimRight(line, "\r ")
}

// requesterOf is the requester a commit message's trailers record.
func requesterOf(msg string) string {
	r := changeset.Recorded(msg).RequestedBy
	if u, err := url.PathUnescape(r); err == nil {
		return u
	}
	return r
}

// mergeProposal finds the number in the merge messages of GitHub ("Merge
// pull request #42 from ..."), Gitea ("Merge pull request '...' (#42) from
// ...") and GitLab ("See merge request group/project!42").
var mergeProposal = regexp.MustCompile(`(?m)^Merge pull request #([0-9]{1,20}) from |^Merge pull request .*\(#([0-9]{1,20})\) from |See merge request \S+!([0-9]{1,20})\s*$`)

func mergedProposal(msg string) string {
	m := mergeProposal.FindStringSubmatch(msg)
	for _, g := range m[min(1, len(m)):] {
		if g != "" {
			return g
		}
	}
	return ""
}

// encodeJSONToken and decodeJSONToken turn a page token's fields into the
// opaque text callers pass back, and back again, refusing unknown fields.
func encodeJSONToken(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeJSONToken(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
