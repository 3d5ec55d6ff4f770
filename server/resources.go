package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"hash/maphash"
	"io/fs"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"weak"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/internal/auth"
	"github.com/cup-dev/cup/internal/document"
	"github.com/cup-dev/cup/source"
)

// entry is one resource with its REST form encoded once. Entries are
// shared between requests and between the commits that hold the same
// resource, and never modified. Ten thousand of them are held at once for
// a large namespace, so they are kept small.
type entry struct {
	name    string
	labels  labelSet
	version [16]byte // the resourceVersion, which json also holds in hex
	json    []byte   // the REST form: the file form plus metadata.resourceVersion
	pb      atomic.Pointer[cupv1alpha1.Resource]
}

func newEntry(r *controller.Resource) (*entry, error) {
	v, err := r.ContentVersion()
	if err != nil {
		return nil, fmt.Errorf("%w: %s/%s: %w", controller.ErrMalformed, r.Metadata.Namespace, r.Metadata.Name, err)
	}
	// Controllers that decode with controller.ParseResource refuse what is
	// not UTF-8, naming the file; one that does not could hand over bytes
	// that json.Marshal would replace (metadata) or pass on as JSON that is
	// not JSON (spec).
	if field := notUTF8(r); field != "" {
		return nil, fmt.Errorf("%w: %s/%s: %s is not UTF-8", controller.ErrMalformed, r.Metadata.Namespace, r.Metadata.Name, field)
	}
	e := &entry{name: strings.Clone(r.Metadata.Name), labels: newLabelSet(r.Metadata.Labels)}
	if n, err := hex.Decode(e.version[:], []byte(v)); err != nil || n != len(e.version) {
		return nil, fmt.Errorf("content version %q is not %d bytes of hex", v, len(e.version))
	}
	r.Metadata.ResourceVersion = v
	e.json, err = json.Marshal(r)
	r.Metadata.ResourceVersion = ""
	if err != nil {
		return nil, fmt.Errorf("%w: %s/%s: %w", controller.ErrMalformed, r.Metadata.Namespace, r.Metadata.Name, err)
	}
	return e, nil
}

// notUTF8 names the first field of r that is not UTF-8, or is "".
func notUTF8(r *controller.Resource) string {
	for _, f := range [...]struct{ name, v string }{
		{"apiVersion", r.APIVersion}, {"kind", r.Kind},
		{"metadata.namespace", r.Metadata.Namespace}, {"metadata.name", r.Metadata.Name},
	} {
		if !utf8.ValidString(f.v) {
			return f.name
		}
	}
	for _, f := range [...]struct {
		name string
		m    map[string]string
	}{{"metadata.labels", r.Metadata.Labels}, {"metadata.annotations", r.Metadata.Annotations}} {
		for k, v := range f.m {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return f.name
			}
		}
	}
	if !utf8.Valid(r.Spec) {
		return "spec"
	}
	return ""
}

func (e *entry) size() int64 { return int64(len(e.json)+len(e.labels)+len(e.name)) + 96 }

// resourceVersion is the entry's resourceVersion as the API shows it.
func (e *entry) resourceVersion() string { return hex.EncodeToString(e.version[:]) }

// etag is the entry's resourceVersion as an HTTP entity tag.
func (e *entry) etag() string {
	var b [2 + 2*len(entry{}.version)]byte
	b[0], b[len(b)-1] = '"', '"'
	hex.Encode(b[1:], e.version[:])
	return string(b[:])
}

// proto returns the resource as a message, decoded on first use. The message
// is shared: callers must not modify it.
//
// A google.protobuf.Struct holds every number as a float64: a spec with a
// number that a float64 cannot hold exactly goes in spec_json instead, as
// the JSON it is, so that no form rounds what the REST form shows exactly
// under the same resourceVersion.
func (e *entry) proto() (*cupv1alpha1.Resource, error) {
	if pb := e.pb.Load(); pb != nil {
		return pb, nil
	}
	var r cupv1alpha1.Resource
	rest, spec, err := splitSpec(e.json)
	if err != nil {
		return nil, err
	}
	if document.HasInexactNumber(spec) {
		if err := protojson.Unmarshal(rest, &r); err != nil {
			return nil, err
		}
		r.SpecJson = string(spec)
	} else if err := protojson.Unmarshal(e.json, &r); err != nil {
		return nil, err
	}
	if !e.pb.CompareAndSwap(nil, &r) {
		return e.pb.Load(), nil
	}
	return &r, nil
}

// labelSet holds labels in one string: key-sorted pairs of key and value,
// each preceded by its length as a uvarint. It is one allocation, far
// smaller than a map for the few labels a resource has, and it implements
// labels.Labels.
type labelSet string

func newLabelSet(m map[string]string) labelSet {
	if len(m) == 0 {
		return ""
	}
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(m)) {
		for _, s := range [2]string{k, m[k]} {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
	}
	return labelSet(b)
}

// next splits the first length-prefixed string off s.
func next(s string) (first, rest string) {
	var n uint64
	for i, shift := 0, 0; i < len(s); i, shift = i+1, shift+7 {
		c := s[i]
		n |= uint64(c&0x7f) << shift
		if c < 0x80 {
			s = s[i+1:]
			if n > uint64(len(s)) {
				return "", "" // cannot happen: newLabelSet wrote it
			}
			return s[:n], s[n:]
		}
	}
	return "", ""
}

func (l labelSet) Lookup(key string) (string, bool) {
	for s := string(l); s != ""; {
		var k, v string
		k, s = next(s)
		v, s = next(s)
		if k == key {
			return v, true
		}
	}
	return "", false
}

func (l labelSet) Has(key string) bool { _, ok := l.Lookup(key); return ok }

func (l labelSet) Get(key string) string { v, _ := l.Lookup(key); return v }

var _ labels.Labels = labelSet("")

// interner shares entries between the commits that hold the same resource:
// after a write, listing the new commit re-encodes only what changed, and
// the listings of successive commits share memory. Resources are told
// apart by a 128-bit hash of their content. It holds entries weakly, so it
// keeps nothing alive that no cached listing or request uses.
//
// Controllers that are KeyedListers name each file's content (a Git blob
// id); the interner also remembers entries by that name, scoped by type and
// namespace, so listing a new commit decodes only the files it has not
// seen.
type interner struct {
	seeds [2]maphash.Seed
	mu    sync.Mutex
	m     map[contentKey]weak.Pointer[entry]
	keyed map[keyedKey]weak.Pointer[entry]
	// skips are keys whose files hold no resource of the type (kinds that
	// share a directory); the set is dropped whole when it grows large.
	skips map[keyedKey]struct{}
}

// keyedKey is a controller's content key in the scope it is valid in.
type keyedKey struct {
	typ       *Type
	namespace string
	key       string
}

const maxSkips = 1 << 16

// clone returns k holding strings of its own, not parts of a request's.
func (k keyedKey) clone() keyedKey {
	k.namespace = strings.Clone(k.namespace)
	k.key = strings.Clone(k.key)
	return k
}

type contentKey [2]uint64

func newInterner() *interner {
	return &interner{
		seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		m:     make(map[contentKey]weak.Pointer[entry]),
		keyed: make(map[keyedKey]weak.Pointer[entry]),
		skips: make(map[keyedKey]struct{}),
	}
}

func (in *interner) key(r *controller.Resource) contentKey {
	var hs [2]maphash.Hash
	hs[0].SetSeed(in.seeds[0])
	hs[1].SetSeed(in.seeds[1])
	write := func(s string, sep byte) {
		for i := range hs {
			hs[i].WriteString(s)
			hs[i].WriteByte(sep)
		}
	}
	for _, s := range []string{r.APIVersion, r.Kind, r.Metadata.Namespace, r.Metadata.Name} {
		write(s, 0)
	}
	var keys [8]string
	for _, m := range []map[string]string{r.Metadata.Labels, r.Metadata.Annotations} {
		sorted := keys[:0]
		for k := range m {
			sorted = append(sorted, k)
		}
		slices.Sort(sorted)
		for _, k := range sorted {
			write(k, 0)
			write(m[k], 0)
		}
		write("", 1)
	}
	for i := range hs {
		hs[i].Write(r.Spec)
	}
	return contentKey{hs[0].Sum64(), hs[1].Sum64()}
}

// entry returns the shared entry for r, making it when there is none. The
// entry keeps no reference into r.
func (in *interner) entry(r *controller.Resource) (*entry, error) {
	k := in.key(r)
	in.mu.Lock()
	if ie := in.m[k].Value(); ie != nil {
		in.mu.Unlock()
		return ie, nil
	}
	in.mu.Unlock()
	e, err := newEntry(r)
	if err != nil {
		return nil, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if old := in.m[k].Value(); old != nil {
		return old, nil
	}
	in.m[k] = weak.Make(e)
	runtime.AddCleanup(e, in.forget, k)
	return e, nil
}

// byKey returns the entry remembered under k, or whether k holds no
// resource of the type; neither when k is unknown.
func (in *interner) byKey(k keyedKey) (ie *entry, skip bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if _, skip := in.skips[k]; skip {
		return nil, true
	}
	return in.keyed[k].Value(), false
}

// remember records what k decoded to: ie, or nothing of the type (nil).
func (in *interner) remember(k keyedKey, ie *entry) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if ie == nil {
		if len(in.skips) >= maxSkips {
			clear(in.skips)
		}
		in.skips[k.clone()] = struct{}{}
		return
	}
	if in.keyed[k].Value() == ie {
		return
	}
	k = k.clone()
	in.keyed[k] = weak.Make(ie)
	runtime.AddCleanup(ie, in.forgetKeyed, k)
}

func (in *interner) forgetKeyed(k keyedKey) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if wp, ok := in.keyed[k]; ok && wp.Value() == nil {
		delete(in.keyed, k)
	}
}

// forget drops the weak pointer under k once its entry is gone.
func (in *interner) forget(k contentKey) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if wp, ok := in.m[k]; ok && wp.Value() == nil {
		delete(in.m, k)
	}
}

// listing is every resource of one type in one namespace at one commit,
// and the files left out of it.
type listing struct {
	items    []*entry // sorted by name; holds the interned entries alive
	problems []problem
	bytes    int64
}

// getEntry reads one resource at snap, memoised. A missing resource is an
// error wrapping controller.ErrNotFound.
func (s *Server) getEntry(ctx context.Context, t *Type, snap *source.Snapshot, namespace, name string) (*entry, error) {
	k := memoKey{commit: snap.Commit, typ: t, namespace: namespace, name: name}
	v, err := s.memo.do(ctx, k, func() (any, int64, error) {
		r, err := callController(ctx, s, func() (*controller.Resource, error) {
			return t.Controller.Get(ctx, &controller.GetRequest{FS: snap.FS, Type: t.controllerType(), Namespace: namespace, Name: name})
		})
		if errors.Is(err, controller.ErrNotFound) {
			return (*entry)(nil), 0, nil // remembered: it is not there; the key's size is counted
		}
		if err != nil {
			return nil, 0, err
		}
		e, err := s.interner.entry(r)
		if err != nil {
			return nil, 0, err
		}
		return e, e.size(), nil
	})
	if err != nil {
		return nil, err
	}
	e, _ := v.(*entry)
	if e == nil {
		return nil, notFound(t, namespace, name)
	}
	return e, nil
}

func notFound(t *Type, namespace, name string) error {
	return connect.NewError(connect.CodeNotFound,
		fmt.Errorf("%s %q not found in namespace %q", t.Names.Singular, name, namespace))
}

// listEntries reads every resource of t in namespace at snap, memoised.
func (s *Server) listEntries(ctx context.Context, t *Type, snap *source.Snapshot, namespace string) (*listing, error) {
	k := memoKey{commit: snap.Commit, typ: t, namespace: namespace}
	v, err := s.memo.do(ctx, k, func() (any, int64, error) {
		var l *listing
		var err error
		if kl, ok := t.Controller.(controller.KeyedLister); ok {
			l, err = s.listKeyed(ctx, kl, t, snap, namespace)
		} else {
			l, err = s.listDecoded(ctx, t, snap, namespace)
		}
		if err != nil {
			return nil, 0, err
		}
		return l, l.bytes + int64(cap(l.items))*8 + int64(cap(l.problems))*32 + 64, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*listing), nil
}

// listDecoded lists through the controller's List, or its ListProblems
// when it has one.
func (s *Server) listDecoded(ctx context.Context, t *Type, snap *source.Snapshot, namespace string) (*listing, error) {
	var problems []controller.Problem
	rs, err := callController(ctx, s, func() ([]*controller.Resource, error) {
		req := &controller.ListRequest{FS: snap.FS, Type: t.controllerType(), Namespace: namespace}
		if pl, ok := t.Controller.(controller.ProblemLister); ok {
			rs, ps, err := pl.ListProblems(ctx, req)
			problems = ps
			return rs, err
		}
		return t.Controller.List(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	l := &listing{items: make([]*entry, 0, len(rs))}
	for _, p := range problems {
		l.addProblem(problemOf(p.Origin, p.Err))
	}
	for _, r := range rs {
		if err := checkListedName(t, r.Metadata.Name); err != nil {
			l.addProblem(problem{reason: err.Error()})
			continue
		}
		ie, err := s.interner.entry(r)
		if err != nil {
			return nil, err
		}
		l.add(ie)
	}
	sort.Slice(l.items, func(i, j int) bool { return l.items[i].name < l.items[j].name })
	return l, nil
}

// listKeyed lists through a KeyedLister, decoding only the resources whose
// content the interner has not seen in this type and namespace.
//
// Only ListKeyed takes a controller call slot: the Decode functions it
// returns run afterwards, on up to GOMAXPROCS goroutines per listing, and
// are CPU work on files already found (the template controller's are; no
// other controller is a KeyedLister).
func (s *Server) listKeyed(ctx context.Context, kl controller.KeyedLister, t *Type, snap *source.Snapshot, namespace string) (*listing, error) {
	found, err := callController(ctx, s, func() ([]controller.Listed, error) {
		return kl.ListKeyed(ctx, &controller.ListRequest{FS: snap.FS, Type: t.controllerType(), Namespace: namespace})
	})
	if err != nil {
		return nil, err
	}
	type item struct {
		ie     *entry
		origin string
	}
	// First what the interner knows; then decode the rest, in parallel: a
	// namespace seen for the first time may hold thousands of resources.
	known := make([]*entry, len(found))
	skipped := make([]bool, len(found))
	var todo []int
	for i, f := range found {
		if f.Key != "" {
			if known[i], skipped[i] = s.interner.byKey(keyedKey{typ: t, namespace: namespace, key: f.Key}); skipped[i] || known[i] != nil {
				continue
			}
		}
		todo = append(todo, i)
	}
	decoded := make([]*controller.Resource, len(found))
	bad := make([]error, len(found)) // a problem of the file, which is left out
	if err := parallel(ctx, len(todo), func(j int) error {
		i := todo[j]
		r, err := found[i].Decode()
		if errors.Is(err, controller.ErrMalformed) {
			bad[i] = err
			return nil
		}
		decoded[i] = r
		return err
	}); err != nil {
		return nil, err
	}
	items := make([]item, 0, len(found))
	var problems []problem
	for i, f := range found {
		ie := known[i]
		if skipped[i] {
			continue
		}
		if bad[i] != nil {
			problems = append(problems, problemOf(f.Origin, bad[i]))
			continue
		}
		if ie == nil {
			if r := decoded[i]; r != nil {
				// Interned by content too, so that a Get of the resource
				// shares this entry.
				var err error
				if ie, err = s.interner.entry(r); err != nil {
					if errors.Is(err, controller.ErrMalformed) {
						problems = append(problems, problemOf(f.Origin, err))
						continue
					}
					return nil, err
				}
			}
			if f.Key != "" {
				s.interner.remember(keyedKey{typ: t, namespace: namespace, key: f.Key}, ie)
			}
			if ie == nil {
				continue
			}
		}
		if err := checkListedName(t, ie.name); err != nil {
			problems = append(problems, problem{path: f.Origin, reason: err.Error()})
			continue
		}
		items = append(items, item{ie, f.Origin})
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].ie.name < items[j].ie.name })
	l := &listing{items: make([]*entry, 0, len(items))}
	// Files claiming one name are all left out: Get could read only one.
	for i, it := range items {
		var other string
		if i > 0 && items[i-1].ie.name == it.ie.name {
			other = items[i-1].origin
		} else if i+1 < len(items) && items[i+1].ie.name == it.ie.name {
			other = items[i+1].origin
		}
		if other != "" {
			problems = append(problems, problem{path: it.origin,
				reason: fmt.Sprintf("holds %s %q, which %s holds too", t.Names.Kind, it.ie.name, other)})
			continue
		}
		l.add(it.ie)
	}
	slices.SortStableFunc(problems, func(a, b problem) int { return strings.Compare(a.path, b.path) })
	for _, p := range problems {
		l.addProblem(p)
	}
	return l, nil
}

// parallel calls fn(0), ..., fn(n-1) on up to GOMAXPROCS goroutines and
// returns the first error; all calls are done when it returns. A panic in
// fn on a worker goroutine is returned as an error, since nothing could
// recover it there.
func parallel(ctx context.Context, n int, fn func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		next     atomic.Int64
		firstErr error
		once     sync.Once
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := safeCall(fn, i); err != nil {
					once.Do(func() { firstErr = err })
					next.Store(int64(n)) // stop the others
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// safeCall calls fn(i), turning a panic into an error.
func safeCall(fn func(int) error, i int) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return fn(i)
}

func (l *listing) add(e *entry) {
	l.items = append(l.items, e)
	l.bytes += e.size()
}

func (l *listing) addProblem(p problem) {
	l.problems = append(l.problems, p)
	l.bytes += int64(len(p.path) + len(p.reason))
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

// writeTarget is what put and delete have in common.
type writeTarget struct {
	t                *Type
	namespace, name  string
	precondition     string
	revision         string
	changeSet        string
	idempotencyKey   string
	message          string
	dryRun           bool
	defaultVerb      string
	resourceForWrite *controller.Resource // nil for delete
	requester        string               // the authenticated caller; empty without a policy
	// stored is resourceForWrite as the controller reads it back after
	// writing it, set by a put's Apply.
	stored *controller.Resource
}

// fingerprint identifies what a write does, for idempotency keys: the
// lowercase hex SHA-256 of, in this order, "cup.write.v1", the operation
// ("put" or "delete"), group, version, plural, namespace, name, revision,
// change set, resourceVersion precondition, message as requested, and for a
// put the resource's canonical JSON file form (controller.Resource.MarshalFile
// of the resource as the server stores it: defaults filled in, keys in a
// fixed order, no resourceVersion) — each as a big-endian uint64 length
// followed by its bytes. Dry runs and the key itself are not part of it.
// So a retry matches over any protocol, whatever the JSON's spacing or key
// order, and a different request with the same key does not.
func (w *writeTarget) fingerprint() (string, error) {
	op, body := "delete", []byte(nil)
	if w.resourceForWrite != nil {
		op = "put"
		var err error
		if body, err = w.resourceForWrite.MarshalFile(); err != nil {
			return "", err
		}
	}
	h := sha256.New()
	var n [8]byte
	fields := [][]byte{
		[]byte("cup.write.v1"), []byte(op),
		[]byte(w.t.Group), []byte(w.t.Version), []byte(w.t.Names.Plural), []byte(w.namespace), []byte(w.name),
		[]byte(w.revision), []byte(w.changeSet), []byte(w.precondition), []byte(w.message), body,
	}
	if w.requester != "" {
		fields = append(fields, []byte(w.requester))
	}
	for _, f := range fields {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write(f)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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
func (s *Server) write(ctx context.Context, w *writeTarget) (result *cupv1alpha1.WriteResult, err error) {
	obs := s.startWrite()
	defer func() { obs.end(result, err) }()
	msg := w.message
	if msg == "" {
		msg = fmt.Sprintf("%s %s %s/%s\n\n%s/%s %s", w.defaultVerb, w.t.Names.Kind, w.namespace, w.name,
			w.t.Group, w.t.Version, w.t.Names.Plural)
	}
	// Everything that costs in proportion to the resource happens under a
	// write slot, so --max-concurrent-writes bounds it.
	release, err := s.writes.acquire()
	if err != nil {
		return nil, err
	}
	defer release()
	// A dry run records nothing, so its key has nothing to find or to keep.
	var key, fingerprint string
	if w.idempotencyKey != "" && !w.dryRun {
		if fingerprint, err = w.fingerprint(); err != nil {
			return nil, err
		}
		key = w.idempotencyKey
	}
	res, err := s.src.Update(ctx, &source.UpdateRequest{
		Revision:       w.revision,
		ChangeSet:      w.changeSet,
		OverrideOwner:  w.changeSet != "" && w.requester != "" && s.allowed(ctx, changeSetAttributes(w.changeSet)),
		IdempotencyKey: key,
		Fingerprint:    fingerprint,
		Message:        msg,
		DryRun:         w.dryRun,
		Requester:      w.requester,
		Resources: []source.ResourceRef{{
			Group: w.t.Group, Version: w.t.Version, Kind: w.t.Names.Kind, Plural: w.t.Names.Plural,
			Namespace: w.namespace, Name: w.name,
		}},
		Apply: func(ctx context.Context, base *source.Snapshot, fs source.Writer) error {
			obs.beginChange()
			cur, err := s.getEntry(ctx, w.t, base, w.namespace, w.name)
			var unread *changeCounter // set when the write goes on without having read the resource
			switch {
			case err == nil:
			case errors.Is(err, controller.ErrNotFound) || connect.CodeOf(err) == connect.CodeNotFound:
				if w.resourceForWrite == nil {
					return err // delete of a missing resource
				}
				if w.precondition != "" {
					return connect.NewError(connect.CodeAborted, fmt.Errorf(
						"precondition failed: %s %q does not exist, but resource_version %q was required",
						w.t.Names.Singular, w.name, w.precondition))
				}
			case errors.Is(err, controller.ErrFailed) && w.precondition == "":
				// Controllers written for the original Cup fail (exit 1,
				// or print nothing) to get a missing resource. Without a
				// precondition the write needs nothing of the current
				// resource: it goes on as if it were absent, and a delete
				// that changes nothing answers NotFound.
				s.cfg.logger.DebugContext(ctx, "writing without the current resource: the controller failed to get it",
					"kind", w.t.Names.Kind, "namespace", w.namespace, "name", w.name, "error", err)
				unread = &changeCounter{Writer: fs}
				fs = unread
			default:
				return err
			}
			if cur != nil && w.precondition != "" && cur.resourceVersion() != w.precondition {
				return connect.NewError(connect.CodeAborted, fmt.Errorf(
					"precondition failed: %s %q has resource_version %q, not %q: read it again and retry",
					w.t.Names.Singular, w.name, cur.resourceVersion(), w.precondition))
			}
			// Each controller call takes a slot of its own and gives it
			// back before the next: holding one while waiting for another
			// could deadlock.
			if w.resourceForWrite == nil {
				err := callControllerErr(ctx, s, func() error {
					return w.t.Controller.Delete(ctx, &controller.DeleteRequest{
						FS: fs, Type: w.t.controllerType(), Namespace: w.namespace, Name: w.name,
					})
				})
				if err == nil && unread != nil && unread.changes == 0 {
					return notFound(w.t, w.namespace, w.name)
				}
				return err
			}
			if err := callControllerErr(ctx, s, func() error {
				return w.t.Controller.Put(ctx, &controller.PutRequest{FS: fs, Type: w.t.controllerType(), Resource: w.resourceForWrite.Clone()})
			}); err != nil {
				return err
			}
			// A controller may store the resource in a form that reads back
			// with other spellings (YAML, escapes, numbers), and so with
			// another resourceVersion: answer with what a Get will return.
			stored, err := callController(ctx, s, func() (*controller.Resource, error) {
				return w.t.Controller.Get(ctx, &controller.GetRequest{FS: fs, Type: w.t.controllerType(), Namespace: w.namespace, Name: w.name})
			})
			if err != nil {
				return fmt.Errorf("reading back what the controller wrote: %w", err)
			}
			w.stored = stored
			return nil
		},
	})
	if err != nil {
		return nil, w.explain(err)
	}
	out := &cupv1alpha1.WriteResult{BaseCommit: res.Base, Commit: res.Commit, Branch: res.Branch, Replayed: res.Replayed}
	if res.Proposal != nil {
		out.Proposal = writtenProposal(res, s.targetBranch(w))
	}
	switch {
	case res.Unchanged:
		out.Outcome = cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED
	case w.dryRun:
		out.Outcome = cupv1alpha1.WriteOutcome_WRITE_OUTCOME_DRY_RUN
	default:
		out.Outcome = cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED
	}
	// A file that may hold other resources may show them in its diff, to a
	// caller who may not read them: with a policy in force, such diffs are
	// left out.
	fpr, ok := w.t.Controller.(controller.FilePerResource)
	private := s.cfg.authz != nil && !(ok && fpr.FilePerResource())
	for _, c := range res.Changes {
		diff := c.Diff
		if private && diff != "" {
			diff = fmt.Sprintf("diff of %s omitted: the %s controller may keep other resources in it, which a diff would show to callers who may not read them\n", c.Path, w.t.Names.Kind)
		}
		out.Changes = append(out.Changes, &cupv1alpha1.FileChange{Path: c.Path, Operation: fileOp(c.Op), Diff: diff})
	}
	return out, nil
}

// changeCounter counts the files a controller writes or removes through
// it, for telling a delete that removed nothing.
type changeCounter struct {
	source.Writer
	changes int
}

func (c *changeCounter) WriteFile(name string, data []byte, perm fs.FileMode) error {
	c.changes++
	return c.Writer.WriteFile(name, data, perm)
}

func (c *changeCounter) Remove(name string) error {
	c.changes++
	return c.Writer.Remove(name)
}

// explain adds to the source's errors about change sets and idempotency
// keys what the caller sent and can do; the sentinels stay wrapped, for
// errors.go to map.
func (w *writeTarget) explain(err error) error {
	switch {
	case errors.Is(err, source.ErrChangeSetNotFound):
		return advise(err, "change set", w.changeSet,
			"name a branch that a write in branch mode returned (WriteResult.branch), or leave change_set empty to start a new one")
	case errors.Is(err, source.ErrIdempotencyKeyReused):
		return advise(err, "idempotency key", w.idempotencyKey, "use a new key for a new request")
	}
	// Whatever the SCM did not find while proposing the write, it was not
	// the resource the caller named.
	return notCallersNotFound(err)
}

// advise wraps err with what it is about (what "name") unless its message
// quotes name already, and with advice unless it says that already.
func advise(err error, what, name, advice string) error {
	msg := err.Error()
	if q := strconv.Quote(name); !strings.Contains(msg, q) {
		err = fmt.Errorf("%s %s: %w", what, q, err)
	}
	if !strings.Contains(msg, advice) {
		err = fmt.Errorf("%w: %s", err, advice)
	}
	return err
}

func fileOp(o source.Operation) cupv1alpha1.FileOperation {
	switch o {
	case source.OpCreate:
		return cupv1alpha1.FileOperation_FILE_OPERATION_CREATE
	case source.OpUpdate:
		return cupv1alpha1.FileOperation_FILE_OPERATION_UPDATE
	case source.OpDelete:
		return cupv1alpha1.FileOperation_FILE_OPERATION_DELETE
	default:
		return cupv1alpha1.FileOperation_FILE_OPERATION_UNSPECIFIED
	}
}

// checkResource checks that the body of a put agrees with the request, fills
// in what it leaves empty, and validates it against the type's schema. The
// spec is rawSpec when that is not nil (JSON as the caller sent it, nesting
// checked already), else the request's.
func (s *Server) checkResource(t *Type, req *cupv1alpha1.PutRequest, rawSpec json.RawMessage) (*controller.Resource, error) {
	in := req.Resource
	apiVersion := t.Group + "/" + t.Version
	var vs []FieldViolation
	mismatch := func(field, got, want, what string) {
		if got != "" && got != want {
			vs = append(vs, FieldViolation{Field: field, Description: fmt.Sprintf("%q does not match the request's %s %q", got, what, want)})
		}
	}
	mismatch("resource.api_version", in.GetApiVersion(), apiVersion, "group/version")
	mismatch("resource.kind", in.GetKind(), t.Names.Kind, "kind")
	mismatch("resource.metadata.namespace", in.GetMetadata().GetNamespace(), req.Namespace, "namespace")
	mismatch("resource.metadata.name", in.GetMetadata().GetName(), req.Name, "name")
	if len(vs) > 0 {
		return nil, invalidArgument(vs...)
	}
	r := &controller.Resource{
		APIVersion: apiVersion,
		Kind:       t.Names.Kind,
		Metadata: controller.Metadata{
			Namespace:   req.Namespace,
			Name:        req.Name,
			Labels:      in.GetMetadata().GetLabels(),
			Annotations: in.GetMetadata().GetAnnotations(),
		},
	}
	// A spec sent as spec_json is JSON, as the REST form's is.
	specField := "resource.spec"
	if j := in.GetSpecJson(); j != "" {
		if rawSpec != nil || in.GetSpec() != nil {
			return nil, fieldError("resource.spec_json", "send the spec in spec or in spec_json, not both")
		}
		// The resource is depth 1, its spec 2.
		if document.CheckDepth([]byte(j), s.cfg.maxDepth-1) != nil {
			return nil, s.depthError("resource.spec_json")
		}
		rawSpec, specField = json.RawMessage(j), "resource.spec_json"
	}
	switch {
	case rawSpec != nil:
		spec, err := compactSpec(rawSpec)
		if err != nil {
			return nil, fieldError(specField, "%v", err)
		}
		r.Spec = spec
	case in.GetSpec() != nil:
		// The resource is depth 1, its spec 2.
		if d := structDepth(in.GetSpec(), 2, s.cfg.maxDepth); d > s.cfg.maxDepth {
			return nil, s.depthError("resource.spec")
		}
		b, err := protojson.Marshal(in.GetSpec())
		if err != nil {
			return nil, fieldError("resource.spec", "%v", err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			return nil, fieldError("resource.spec", "%v", err)
		}
		r.Spec = compact.Bytes()
	}
	// What a write stores is the indented file form, which a deeply nested
	// spec makes many times larger than the request: bound it before
	// anything encodes it.
	if n := fileSize(r); n > s.cfg.maxResource {
		return nil, fieldError("resource", "stored as a file it would take %d bytes with indentation, more than the limit of %d (cupd --max-resource-bytes): nest less deeply or split the resource", n, s.cfg.maxResource)
	}
	// A spec sent as JSON is stored with its keys sorted, as one sent as a
	// Struct is, so that the same content makes the same file and
	// resourceVersion over every protocol; its numbers stay as written.
	var spec any
	if rawSpec != nil && r.Spec != nil {
		if err := decodeNumber(r.Spec, &spec); err != nil {
			return nil, fieldError(specField, "%v", err)
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(spec); err != nil {
			return nil, fieldError(specField, "%v", err)
		}
		r.Spec = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	}
	if t.Validate == nil {
		return r, nil
	}
	// Validated in its compact form: the schema sees the same values.
	withoutSpec := *r
	if spec != nil {
		withoutSpec.Spec = nil
	}
	b, err := json.Marshal(&withoutSpec)
	if err != nil {
		return nil, fieldError("resource", "%v", err)
	}
	var doc any
	if err := decodeNumber(b, &doc); err != nil {
		return nil, fieldError("resource", "%v", err)
	}
	if spec != nil {
		doc.(map[string]any)["spec"] = spec
	}
	if v := t.Validate(doc); len(v) > 0 {
		for i := range v {
			v[i].Field = strings.TrimSuffix("resource."+v[i].Field, ".")
			v[i].Description = "schema violation: " + v[i].Description
		}
		return nil, invalidArgument(v...)
	}
	return r, nil
}

// depthError is the error for a resource nested past the limit, at field.
func (s *Server) depthError(field string) error {
	return fieldError(field, "objects and arrays nested more than %d deep, counting the resource as 1 (cupd --max-json-depth)", s.cfg.maxDepth)
}

// structDepth returns the depth of the deepest object or array in st, st
// itself being at depth d, or a number past limit as soon as it finds one.
func structDepth(st *structpb.Struct, d, limit int) int {
	deepest := d
	for _, v := range st.GetFields() {
		if deepest = max(deepest, valueDepth(v, d, limit)); deepest > limit {
			return deepest
		}
	}
	return deepest
}

// valueDepth is structDepth for a value held at depth d.
func valueDepth(v *structpb.Value, d, limit int) int {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		return structDepth(k.StructValue, d+1, limit)
	case *structpb.Value_ListValue:
		deepest := d + 1
		for _, e := range k.ListValue.GetValues() {
			if deepest = max(deepest, valueDepth(e, d+1, limit)); deepest > limit {
				return deepest
			}
		}
		return deepest
	}
	return d
}

// fileSize is the size of r's file form (MarshalFile's indented JSON),
// computed from its compact spec without encoding it: every non-empty
// object or array, every comma and every closing bracket of a non-empty
// one starts a line indented two spaces a level, and every colon gains a
// space. The metadata is counted as if compact and indented at the deepest
// level it has, which is more than it takes, and so are the characters
// encoding/json escapes.
func fileSize(r *controller.Resource) int64 {
	n := int64(len(r.APIVersion)+len(r.Kind)+len(r.Metadata.Namespace)+len(r.Metadata.Name)) + 128
	for _, m := range []map[string]string{r.Metadata.Labels, r.Metadata.Annotations} {
		for k, v := range m {
			n += int64(2*len(k)+2*len(v)) + 16 // escapes may double them
		}
	}
	spec := r.Spec
	n += int64(len(spec)) + 3*int64(bytes.Count(spec, []byte{0xe2})) // U+2028 and U+2029 are escaped
	newline := func(d int) { n += 1 + 2*int64(d) }
	// The spec is a field of the resource, one level in.
	document.Structure(spec, func(i int, c byte, depth int) bool {
		switch c {
		case ':':
			n++
		case '{', '[':
			if i+1 < len(spec) && spec[i+1] != '}' && spec[i+1] != ']' {
				newline(depth + 1)
			}
		case '}', ']':
			if i > 0 && spec[i-1] != '{' && spec[i-1] != '[' {
				newline(depth + 1)
			}
		case ',':
			newline(depth + 1)
		}
		return true
	})
	return n
}

// compactSpec checks a spec sent as JSON, which must be an object or null
// in valid UTF-8, and returns it compacted; nil for null.
func compactSpec(raw json.RawMessage) (json.RawMessage, error) {
	var b bytes.Buffer
	b.Grow(len(raw))
	if err := json.Compact(&b, raw); err != nil {
		return nil, err
	}
	switch c := b.Bytes(); {
	case string(c) == "null":
		return nil, nil
	case c[0] != '{':
		return nil, errors.New("must be a JSON object")
	case !utf8.Valid(c):
		return nil, errors.New("holds bytes that are not UTF-8")
	default:
		return c, nil
	}
}

func decodeNumber(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

func structFromJSON(b []byte) (*structpb.Struct, error) {
	var st structpb.Struct
	if err := protojson.Unmarshal(b, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// resourceService adapts the Server to the generated Connect interface.
type resourceService struct{ s *Server }

var _ cupv1alpha1connect.ResourceServiceHandler = (*resourceService)(nil)

func (h *resourceService) Get(ctx context.Context, req *connect.Request[cupv1alpha1.GetRequest]) (*connect.Response[cupv1alpha1.GetResponse], error) {
	e, commit, err := h.s.get(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	pb, err := e.proto()
	if err != nil {
		return nil, err
	}
	m := req.Msg
	return connect.NewResponse(&cupv1alpha1.GetResponse{
		Resource: pb, Commit: commit,
		Proposals: h.s.openProposals(ctx, m.Group, m.Plural, m.Namespace, m.Name),
	}), nil
}

func (h *resourceService) List(ctx context.Context, req *connect.Request[cupv1alpha1.ListRequest]) (*connect.Response[cupv1alpha1.ListResponse], error) {
	p, err := h.s.list(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	out := &cupv1alpha1.ListResponse{Commit: p.commit, NextPageToken: p.next, Items: make([]*cupv1alpha1.Resource, 0, len(p.items)),
		MoreWarnings: int32(min(p.more, 1<<31-1))}
	for _, w := range p.warnings {
		out.Warnings = append(out.Warnings, w.proto())
	}
	for _, e := range p.items {
		pb, err := e.proto()
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, pb)
	}
	return connect.NewResponse(out), nil
}

func (h *resourceService) Put(ctx context.Context, req *connect.Request[cupv1alpha1.PutRequest]) (*connect.Response[cupv1alpha1.PutResponse], error) {
	res, stored, err := h.s.put(ctx, req.Msg, nil)
	if err != nil {
		return nil, err
	}
	pb, err := stored.proto()
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&cupv1alpha1.PutResponse{Result: res, Resource: pb}), nil
}

func (h *resourceService) Delete(ctx context.Context, req *connect.Request[cupv1alpha1.DeleteRequest]) (*connect.Response[cupv1alpha1.DeleteResponse], error) {
	out, err := h.s.del(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}
