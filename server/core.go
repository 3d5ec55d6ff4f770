package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/cup-dev/cup/controller"

	"github.com/cup-dev/cup/auth"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// The core serves get, list, put and delete of resources in no protocol's
// terms: it takes what a call names and asks (ref, listQuery, putInput,
// writeOptions) and answers with resources ([entry], which holds a
// [controller.Resource] encoded once) and the contract packages' sentinel
// errors, which errors.go maps to codes. The adapters, connect.go and
// rest.go, decode a request into these values and encode the answer; the
// chain (chain.go) runs around both.

// ref names a resource of a served type, or with an empty name the type's
// resources in one namespace.
type ref struct {
	group, version, plural string
	namespace, name        string
}

// attributes are what a policy decides on for verb on the resource.
func (r ref) attributes(verb string) auth.Attributes {
	return auth.Attributes{Verb: verb, Group: r.group, Plural: r.plural, Namespace: r.namespace, Name: r.name}
}

// listQuery is what a list asks of the resources of a ref.
type listQuery struct {
	revision, labelSelector, fieldSelector, pageToken string
	pageSize                                          int
	// problems asks for the listing's problems instead of its resources.
	problems bool
}

// writeOptions are what a put or delete asks besides the resource.
type writeOptions struct {
	revision       string
	message        string
	precondition   string // a resourceVersion the resource must have
	changeSet      string
	idempotencyKey string
	dryRun         bool
	// create makes a put fail with AlreadyExists when the resource exists.
	create bool
}

// putInput is a resource as a caller sent it to be put.
type putInput struct {
	// resource is what the caller sent; its Spec is JSON, and its
	// Metadata.ResourceVersion, when set, a precondition.
	resource controller.Resource
	// field names the resource in errors about it as a whole; its fields
	// are named beneath it: "resource" when empty (in a batch,
	// "items[3].put.resource").
	field string
	// specField names the spec in errors: "resource.spec", or
	// "resource.spec_json" for a spec sent in that field.
	specField string
	// patched marks a resource a patch made (patch.go): field names the
	// patch, and the resource's fields are named as its own (spec.rollout),
	// which is what the patch wrote.
	patched bool
	// specSorted tells a spec that is compact with its keys sorted (one
	// from a google.protobuf.Struct) from one to be put in that form.
	specSorted bool
}

// at names a field of the resource in errors, e.g. "resource.spec"; a
// patched resource's fields are named as the patch wrote them ("spec").
func (p *putInput) at(path string) string {
	if p.patched {
		return path
	}
	return cmp.Or(p.field, "resource") + "." + path
}

// notFound is the error for a resource that is not there.
func notFound(t *Type, namespace, name string) error {
	return &sentinelError{controller.ErrNotFound,
		fmt.Sprintf("%s %q not found in namespace %q", t.Singular, name, namespace)}
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
// started it. A listing across namespaces continues after the resource
// After in Namespace; a listing of one namespace leaves Namespace out.
type pageToken struct {
	Commit    string `json:"c"`
	Namespace string `json:"n,omitempty"`
	After     string `json:"a"`
	Query     uint64 `json:"q"`
}

// queryHash identifies a query of at by its parts (its selectors), so
// that a page token is refused by another query.
func queryHash(at ref, parts ...string) uint64 {
	h := fnv.New64a()
	for _, s := range append([]string{at.group, at.version, at.plural, at.namespace}, parts...) {
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}

// typeFor returns the type at names, once the policy lets the caller do
// verb there.
func (s *Server) typeFor(ctx context.Context, at ref, verb string) (*Type, error) {
	if err := s.authorize(ctx, at.attributes(verb)); err != nil {
		return nil, err
	}
	return s.lookup(at.group, at.version, at.plural)
}

// list reads a page of the resources at names, by q: of one namespace, or
// with at.namespace empty of every namespace (listAcross).
func (s *Server) list(ctx context.Context, at ref, q listQuery) (*page, error) {
	typeOf := s.typeFor
	if at.namespace == "" {
		typeOf = s.typeAcross
	}
	t, err := typeOf(ctx, at, auth.VerbList)
	if err != nil {
		return nil, err
	}
	sel, err := parseFilter(q.labelSelector, q.fieldSelector)
	if err != nil {
		return nil, err
	}
	limit := q.pageSize
	if m := s.cfg.maxListPage; m > 0 {
		if limit > m { // validation refuses it first; this keeps list safe alone
			return nil, fieldError("page_size", "%d is more than the server's limit of %d resources a page (cupd --max-list-page): ask for fewer and follow next_page_token", limit, m)
		}
		if limit == 0 {
			limit = m
		}
	}
	rev, after := q.revision, position{}
	if q.pageToken != "" {
		tok, err := decodeToken(q.pageToken)
		if err != nil || tok.Query != queryHash(at, q.labelSelector, q.fieldSelector) || (tok.Namespace == "") != (at.namespace != "") {
			return nil, fieldError("page_token", "not a page token of this listing: start again without it")
		}
		rev, after = tok.Commit, position{tok.Namespace, tok.After}
	}
	snap, err := s.src.View(ctx, rev)
	if err != nil {
		return nil, err
	}
	if at.namespace == "" {
		return s.listAcross(ctx, t, snap, at, q, sel, limit, after)
	}
	var l *listing
	if q.problems {
		l, err = s.listEntries(ctx, t, snap, at.namespace)
	} else {
		l, err = s.selectEntries(ctx, t, snap, at.namespace, sel)
	}
	if err != nil {
		return nil, err
	}
	p := &page{commit: snap.Commit}
	switch {
	case q.problems:
		// As many as a page of resources may hold; the rest are counted.
		n := len(l.problems)
		if m := s.cfg.maxListPage; m > 0 {
			n = min(n, m)
		}
		p.warnings, p.more = l.problems[:n], len(l.problems)-n
		return p, nil
	case q.pageToken == "":
		p.warnings = l.problems[:min(len(l.problems), maxWarnings)]
		p.more = len(l.problems) - len(p.warnings)
	}
	if fillPage(p, l.items, at.namespace, after.name, sel, limit) {
		p.next = encodeToken(pageToken{Commit: snap.Commit, After: p.items[len(p.items)-1].name, Query: queryHash(at, q.labelSelector, q.fieldSelector)})
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

// get reads the resource at names, at revision (the default branch when
// empty); it returns the commit read too.
func (s *Server) get(ctx context.Context, at ref, revision string) (*entry, string, error) {
	t, err := s.typeFor(ctx, at, auth.VerbGet)
	if err != nil {
		return nil, "", err
	}
	snap, err := s.src.View(ctx, revision)
	if err != nil {
		return nil, "", err
	}
	e, err := s.readEntry(ctx, t, snap, at.namespace, at.name)
	if err != nil {
		return nil, "", err
	}
	return e, snap.Commit, nil
}

// put writes in.resource at names: it returns the write's result and the
// resource as stored.
func (s *Server) put(ctx context.Context, at ref, in *putInput, o writeOptions) (*cupv1alpha1.WriteResult, *entry, error) {
	t, err := s.typeFor(ctx, at, auth.VerbPut)
	if err != nil {
		return nil, nil, err
	}
	r, err := s.checkResource(t, at, in)
	if err != nil {
		return nil, nil, err
	}
	if o.precondition, err = putPrecondition(o.precondition, "resource_version", in, o.create); err != nil {
		return nil, nil, err
	}
	verb := "Put"
	if o.create {
		verb = "Create"
	}
	w := newWriteTarget(ctx, t, at, o, verb)
	w.resourceForWrite, w.create = r, o.create
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

// putPrecondition is the resourceVersion a put requires: pre, the
// request's field named field, or the resource's
// metadata.resourceVersion; both may be sent if they agree. A create
// requires none: the resource must not exist.
func putPrecondition(pre, field string, in *putInput, create bool) (string, error) {
	if bodyPre := in.resource.Metadata.ResourceVersion; bodyPre != "" {
		if pre != "" && pre != bodyPre {
			return "", fieldError(in.at("metadata.resource_version"),
				"%q disagrees with the request's %s %q: send one of them", bodyPre, field, pre)
		}
		pre = bodyPre
	}
	if create && pre != "" {
		return "", fieldError(field, "%q is a precondition on an existing resource, but create writes only a resource that does not exist: send one of them", pre)
	}
	return pre, nil
}

// del deletes the resource at names.
func (s *Server) del(ctx context.Context, at ref, o writeOptions) (*cupv1alpha1.WriteResult, error) {
	t, err := s.typeFor(ctx, at, auth.VerbDelete)
	if err != nil {
		return nil, err
	}
	return s.write(ctx, newWriteTarget(ctx, t, at, o, "Delete"))
}

func newWriteTarget(ctx context.Context, t *Type, at ref, o writeOptions, verb string) *writeTarget {
	return &writeTarget{
		t: t, namespace: at.namespace, name: at.name, precondition: o.precondition,
		revision: o.revision, changeSet: o.changeSet, idempotencyKey: o.idempotencyKey,
		message: o.message, dryRun: o.dryRun, defaultVerb: verb,
		requester: requester(ctx),
	}
}
