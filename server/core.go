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
	"k8s.io/apimachinery/pkg/labels"

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
	revision, labelSelector, pageToken string
	pageSize                           int
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
}

// putInput is a resource as a caller sent it to be put.
type putInput struct {
	// resource is what the caller sent; its Spec is JSON, and its
	// Metadata.ResourceVersion, when set, a precondition.
	resource controller.Resource
	// specField names the spec in errors: "resource.spec", or
	// "resource.spec_json" for a spec sent in that field.
	specField string
	// field names the resource in errors about it as a whole; its fields
	// are named beneath it: "resource" when empty.
	field string
	// patched marks a resource a patch made (patch.go): field names the
	// patch, and the resource's fields are named as its own (spec.rollout),
	// which is what the patch wrote.
	patched bool
	// specSorted tells a spec that is compact with its keys sorted (one
	// from a google.protobuf.Struct) from one to be put in that form.
	specSorted bool
}

// fieldPrefix is what the names of the resource's fields start with in
// errors.
func (in *putInput) fieldPrefix() string {
	if in.patched {
		return ""
	}
	return cmp.Or(in.field, "resource") + "."
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

func queryHash(at ref, labelSelector string) uint64 {
	h := fnv.New64a()
	for _, s := range []string{at.group, at.version, at.plural, at.namespace, labelSelector} {
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
	sel, err := labels.Parse(q.labelSelector)
	if err != nil {
		return nil, fieldError("label_selector", "%v", err)
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
		if err != nil || tok.Query != queryHash(at, q.labelSelector) || (tok.Namespace == "") != (at.namespace != "") {
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
	l, err := s.listEntries(ctx, t, snap, at.namespace)
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
	if fillPage(p, l.items, after.name, sel, limit) {
		p.next = encodeToken(pageToken{Commit: snap.Commit, After: p.items[len(p.items)-1].name, Query: queryHash(at, q.labelSelector)})
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
	e, err := s.getEntry(ctx, t, snap, at.namespace, at.name)
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
	pre := o.precondition
	if bodyPre := in.resource.Metadata.ResourceVersion; bodyPre != "" {
		if pre != "" && pre != bodyPre {
			return nil, nil, fieldError("resource.metadata.resource_version",
				"%q disagrees with the request's resource_version %q: send one of them", bodyPre, pre)
		}
		pre = bodyPre
	}
	o.precondition = pre
	w := newWriteTarget(ctx, t, at, o, "Put")
	w.resourceForWrite = r
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
