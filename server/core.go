package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"

	"connectrpc.com/connect"
	"k8s.io/apimachinery/pkg/labels"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/auth"
)

func notFound(t *Type, namespace, name string) error {
	return connect.NewError(connect.CodeNotFound,
		fmt.Errorf("%s %q not found in namespace %q", t.Names.Singular, name, namespace))
}

// page is one page of a listing.
type page struct {
	commit string
	items  []*entry
	next   string
	// warnings are the listing's problems: the first maxWarnings on its
	// first page, all of them for ListRequest.problems; more counts the
	// rest.
	warnings []problem
	more     int
}

// pageToken pins a listing to a commit and a position, and to the query that
// started it.
type pageToken struct {
	Commit string `json:"c"`
	After  string `json:"a"`
	Query  uint64 `json:"q"`
}

func queryHash(req *cupv1alpha1.ListRequest) uint64 {
	h := fnv.New64a()
	for _, s := range []string{req.Group, req.Version, req.Plural, req.Namespace, req.LabelSelector} {
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}

// list serves ListRequest for both the Connect and the REST form.
func (s *Server) list(ctx context.Context, req *cupv1alpha1.ListRequest) (*page, error) {
	if err := s.authorize(ctx, auth.Attributes{Verb: auth.VerbList, Group: req.Group, Plural: req.Plural, Namespace: req.Namespace}); err != nil {
		return nil, err
	}
	t, err := s.lookup(req.Group, req.Version, req.Plural)
	if err != nil {
		return nil, err
	}
	sel, err := labels.Parse(req.LabelSelector)
	if err != nil {
		return nil, fieldError("label_selector", "%v", err)
	}
	limit := int(req.PageSize)
	if m := s.cfg.maxListPage; m > 0 {
		if limit > m { // validation refuses it first; this keeps list safe alone
			return nil, fieldError("page_size", "%d is more than the server's limit of %d resources a page (cupd --max-list-page): ask for fewer and follow next_page_token", limit, m)
		}
		if limit == 0 {
			limit = m
		}
	}
	rev, after := req.Revision, ""
	if req.PageToken != "" {
		tok, err := decodeToken(req.PageToken)
		if err != nil || tok.Query != queryHash(req) {
			return nil, fieldError("page_token", "not a page token of this listing: start again without it")
		}
		rev, after = tok.Commit, tok.After
	}
	snap, err := s.src.View(ctx, rev)
	if err != nil {
		return nil, err
	}
	l, err := s.listEntries(ctx, t, snap, req.Namespace)
	if err != nil {
		return nil, err
	}
	p := &page{commit: snap.Commit}
	switch {
	case req.Problems:
		// As many as a page of resources may hold; the rest are counted.
		n := len(l.problems)
		if m := s.cfg.maxListPage; m > 0 {
			n = min(n, m)
		}
		p.warnings, p.more = l.problems[:n], len(l.problems)-n
		return p, nil
	case req.PageToken == "":
		p.warnings = l.problems[:min(len(l.problems), maxWarnings)]
		p.more = len(l.problems) - len(p.warnings)
	}
	start := sort.Search(len(l.items), func(i int) bool { return l.items[i].name > after })
	for i := start; i < len(l.items); i++ {
		e := l.items[i]
		if !sel.Empty() && !sel.Matches(e.labels) {
			continue
		}
		if limit > 0 && len(p.items) == limit {
			p.next = encodeToken(pageToken{Commit: snap.Commit, After: p.items[len(p.items)-1].name, Query: queryHash(req)})
			break
		}
		p.items = append(p.items, e)
	}
	return p, nil
}

func encodeToken(t pageToken) string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(s string) (pageToken, error) {
	var t pageToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return t, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return t, err
	}
	if len(t.Commit) != 40 {
		return t, errors.New("bad commit")
	}
	return t, nil
}

// get serves GetRequest for both forms.
func (s *Server) get(ctx context.Context, req *cupv1alpha1.GetRequest) (*entry, string, error) {
	if err := s.authorize(ctx, auth.Attributes{Verb: auth.VerbGet, Group: req.Group, Plural: req.Plural, Namespace: req.Namespace, Name: req.Name}); err != nil {
		return nil, "", err
	}
	t, err := s.lookup(req.Group, req.Version, req.Plural)
	if err != nil {
		return nil, "", err
	}
	snap, err := s.src.View(ctx, req.Revision)
	if err != nil {
		return nil, "", err
	}
	e, err := s.getEntry(ctx, t, snap, req.Namespace, req.Name)
	if err != nil {
		return nil, "", err
	}
	return e, snap.Commit, nil
}

// put serves PutRequest for both forms: it returns the write's result and
// the resource as stored. The REST form passes the spec as the JSON the
// caller sent, in rawSpec, and req.Resource without one; the Connect form
// passes nil and the spec in req.Resource.
func (s *Server) put(ctx context.Context, req *cupv1alpha1.PutRequest, rawSpec json.RawMessage) (*cupv1alpha1.WriteResult, *entry, error) {
	if err := s.authorize(ctx, auth.Attributes{Verb: auth.VerbPut, Group: req.Group, Plural: req.Plural, Namespace: req.Namespace, Name: req.Name}); err != nil {
		return nil, nil, err
	}
	t, err := s.lookup(req.Group, req.Version, req.Plural)
	if err != nil {
		return nil, nil, err
	}
	r, err := s.checkResource(t, req, rawSpec)
	if err != nil {
		return nil, nil, err
	}
	pre := req.ResourceVersion
	if bodyPre := req.Resource.GetMetadata().GetResourceVersion(); bodyPre != "" {
		if pre != "" && pre != bodyPre {
			return nil, nil, fieldError("resource.metadata.resource_version",
				"%q disagrees with the request's resource_version %q: send one of them", bodyPre, pre)
		}
		pre = bodyPre
	}
	w := &writeTarget{
		t: t, namespace: req.Namespace, name: req.Name, precondition: pre,
		revision: req.Revision, changeSet: req.ChangeSet, idempotencyKey: req.IdempotencyKey,
		message: req.Message, dryRun: req.DryRun, defaultVerb: "Put", resourceForWrite: r,
		requester: requester(ctx),
	}
	result, err := s.write(ctx, w)
	if err != nil {
		return nil, nil, err
	}
	if w.stored != nil { // nil when an earlier write with the idempotency key is replayed
		r = w.stored
	}
	stored, err := newEntry(r.Clone())
	if err != nil {
		return nil, nil, err
	}
	return result, stored, nil
}

// del serves DeleteRequest for both forms.
func (s *Server) del(ctx context.Context, req *cupv1alpha1.DeleteRequest) (*cupv1alpha1.DeleteResponse, error) {
	if err := s.authorize(ctx, auth.Attributes{Verb: auth.VerbDelete, Group: req.Group, Plural: req.Plural, Namespace: req.Namespace, Name: req.Name}); err != nil {
		return nil, err
	}
	t, err := s.lookup(req.Group, req.Version, req.Plural)
	if err != nil {
		return nil, err
	}
	result, err := s.write(ctx, &writeTarget{
		t: t, namespace: req.Namespace, name: req.Name, precondition: req.ResourceVersion,
		revision: req.Revision, changeSet: req.ChangeSet, idempotencyKey: req.IdempotencyKey,
		message: req.Message, dryRun: req.DryRun, defaultVerb: "Delete",
		requester: requester(ctx),
	})
	if err != nil {
		return nil, err
	}
	return &cupv1alpha1.DeleteResponse{Result: result}, nil
}

// write runs one put or delete through the source. The precondition is
// checked against the very commit the change is applied to.
