package template

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cup-dev/cup/controller"
)

// Controller maps each resource to one file whose path a template renders.
// It is safe for concurrent use.
type Controller struct {
	spec     Spec // with defaults filled in
	list     *pathTemplate
	resource *pathTemplate
	cache    *decodeCache
	maps     mappings // MapPath's, per type
}

var _ controller.Controller = (*Controller)(nil)

// New returns a Controller configured by spec, with empty fields set to their
// defaults (see [Spec]). It parses and checks both templates and returns an
// error, never panics, when one does not parse, uses a construct or field it
// must not, lacks a field it must use, or renders an unusable path for sample
// resources; or when the list template's pattern does not match the paths the
// resource template renders, or matches those of another namespace. New does
// no I/O.
func New(spec Spec, opts ...Option) (*Controller, error) {
	cfg := config{cacheSize: DefaultCacheSize}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if cfg.cacheSize < 0 {
		return nil, fmt.Errorf("template controller: cache size %d is negative", cfg.cacheSize)
	}
	spec = spec.withDefaults()
	if err := spec.Encoding.check(); err != nil {
		return nil, fmt.Errorf("template controller: %w", err)
	}
	list, err := parsePathTemplate("list_template", spec.ListTemplate, []string{"Namespace"}, []string{"Name"})
	if err != nil {
		return nil, fmt.Errorf("template controller: %w", err)
	}
	res, err := parsePathTemplate("resource_template", spec.ResourceTemplate, []string{"Namespace", "Name"}, nil)
	if err != nil {
		return nil, fmt.Errorf("template controller: %w", err)
	}
	c := &Controller{spec: spec, list: list, resource: res, cache: newDecodeCache(cfg.cacheSize)}
	if err := c.selfCheck(); err != nil {
		return nil, fmt.Errorf("template controller: %w", err)
	}
	return c, nil
}

// selfCheck renders both templates for sample resources and checks that List
// finds what Put writes, and only in its own namespace.
func (c *Controller) selfCheck() error {
	typ := controller.Type{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets"}
	type sample struct{ namespace, name string }
	samples := []sample{{"default", "sample"}, {"default", "another"}, {"other", "sample"}}
	paths := map[string]sample{}
	for _, s := range samples {
		p, err := c.resourcePath(typ, s.namespace, s.name)
		if err != nil {
			return err
		}
		if prev, dup := paths[p]; dup {
			return fmt.Errorf("resource_template %q renders %q for both %v and %v", c.spec.ResourceTemplate, p, prev, s)
		}
		paths[p] = s
	}
	for _, ns := range []string{"default", "other"} {
		pattern, err := c.listPattern(typ, ns)
		if err != nil {
			return err
		}
		for p, s := range paths {
			ok, _ := path.Match(pattern, p) // the pattern is known to be well formed
			switch {
			case s.namespace == ns && !ok:
				return fmt.Errorf("list_template %q renders %q, which does not match %q rendered by resource_template %q: List would not find what Put writes",
					c.spec.ListTemplate, pattern, p, c.spec.ResourceTemplate)
			case s.namespace != ns && ok:
				return fmt.Errorf("list_template %q renders %q for namespace %q, which matches %q of namespace %q: namespaces would not be isolated",
					c.spec.ListTemplate, pattern, ns, p, s.namespace)
			}
		}
	}
	return nil
}

func (c *Controller) resourcePath(typ controller.Type, namespace, name string) (string, error) {
	if err := checkRequest(typ, namespace); err != nil {
		return "", err
	}
	if name == "" {
		return "", fmt.Errorf("%w: empty name", controller.ErrInvalid)
	}
	return c.resource.render(pathData{typ.Group, typ.Version, typ.Kind, typ.Plural, namespace, name})
}

func (c *Controller) listPattern(typ controller.Type, namespace string) (string, error) {
	if err := checkRequest(typ, namespace); err != nil {
		return "", err
	}
	p, err := c.list.render(pathData{typ.Group, typ.Version, typ.Kind, typ.Plural, namespace, ""})
	if err != nil {
		return "", err
	}
	if _, err := path.Match(p, ""); err != nil {
		return "", fmt.Errorf("%w: list_template renders %q for namespace %q: %v", controller.ErrInvalid, p, namespace, err)
	}
	return p, nil
}

// nameSplitter is the resource template's nameSplitter for typ and
// namespace, or nil.
func (c *Controller) nameSplitter(typ controller.Type, namespace string) []string {
	if checkRequest(typ, namespace) != nil {
		return nil
	}
	return c.resource.nameSplitter(pathData{typ.Group, typ.Version, typ.Kind, typ.Plural, namespace, ""})
}

func checkRequest(typ controller.Type, namespace string) error {
	switch {
	case typ.Version == "" || typ.Kind == "":
		return fmt.Errorf("%w: resource type %+v lacks a version or kind", controller.ErrInvalid, typ)
	case namespace == "":
		return fmt.Errorf("%w: empty namespace", controller.ErrInvalid)
	}
	return nil
}

// load reads and decodes the file at p. The resource it returns is shared
// with the cache, and must be cloned before it leaves the controller, when
// shared says so. Errors reading the file are returned as they are; a file
// that does not decode gives an error wrapping controller.ErrMalformed.
func (c *Controller) load(fsys fs.FS, p string) (r *controller.Resource, shared bool, err error) {
	return c.loadContent(fsys, p, "")
}

// loadContent is load for a file whose content id is id: when fsys is a
// controller.ContentReader, the file is read by id, without looking p up
// again and without the file system caching it. An empty id reads p.
func (c *Controller) loadContent(fsys fs.FS, p, id string) (r *controller.Resource, shared bool, err error) {
	var data []byte
	if cr, ok := fsys.(controller.ContentReader); ok && id != "" {
		if data, err = cr.ReadContent(id); err != nil {
			err = &fs.PathError{Op: "read", Path: p, Err: err}
		}
	} else {
		data, err = fs.ReadFile(fsys, p)
	}
	if err != nil {
		return nil, false, err
	}
	var d decoded
	if !c.cache.on() {
		// No cache (as cupd, whose memo keeps entries by content id, has
		// it): nothing to hash, and the resource is the caller's.
		d = decodeContent(c.spec.Encoding, data)
	} else {
		keys := []contentKey{sha256.Sum256(data)}
		vals, hit := make([]decoded, 1), make([]bool, 1)
		c.cache.lookup(keys, vals, hit)
		if !hit[0] {
			vals[0] = decodeContent(c.spec.Encoding, data)
			c.cache.add(keys, vals, nil)
		}
		d, shared = vals[0], true
	}
	if d.err != nil {
		return nil, false, malformed(p, d.err)
	}
	return d.res, shared, nil
}

// owned returns r, or a clone of it when it is shared with the cache.
func owned(r *controller.Resource, shared bool) *controller.Resource {
	if shared {
		return r.Clone()
	}
	return r
}

func malformed(p string, err error) error {
	return fmt.Errorf("%w: %s: %v", controller.ErrMalformed, p, err)
}

// checkIdentity reports whether r, read from p, is the resource of typ named
// namespace/name. A file may omit the namespace.
func checkIdentity(r *controller.Resource, p string, typ controller.Type, namespace, name string) error {
	if r.APIVersion == typ.APIVersion() && r.Kind == typ.Kind && r.Metadata.Name == name &&
		(r.Metadata.Namespace == "" || r.Metadata.Namespace == namespace) {
		return nil
	}
	got := r.Metadata.Name
	if r.Metadata.Namespace != "" {
		got = r.Metadata.Namespace + "/" + got
	}
	return fmt.Errorf("%w: %s holds %s %s %q where %s %s %q belongs; fix the file or the controller's resource_template",
		controller.ErrMalformed, p, r.APIVersion, r.Kind, got, typ.APIVersion(), typ.Kind, namespace+"/"+name)
}

// Get returns the resource stored at the path the resource template renders.
// A missing file gives an error wrapping controller.ErrNotFound. A file that
// does not decode, or holds another resource, gives one wrapping
// controller.ErrMalformed that names the file. A file that omits the
// namespace gets the requested one.
func (c *Controller) Get(ctx context.Context, req *controller.GetRequest) (*controller.Resource, error) {
	if req == nil || req.FS == nil {
		return nil, fmt.Errorf("%w: get: no file system", controller.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := c.resourcePath(req.Type, req.Namespace, req.Name)
	if err != nil {
		return nil, err
	}
	r, shared, err := c.load(req.FS, p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, notFound(req.Type, req.Namespace, req.Name)
		}
		return nil, err
	}
	if err := checkIdentity(r, p, req.Type, req.Namespace, req.Name); err != nil {
		return nil, err
	}
	out := owned(r, shared)
	out.Metadata.Namespace = req.Namespace
	return out, nil
}

func notFound(typ controller.Type, namespace, name string) error {
	return fmt.Errorf("%s %s %q in namespace %q: %w", typ.APIVersion(), typ.Kind, name, namespace, controller.ErrNotFound)
}

// listFiles returns the files the list template matches for req.
func (c *Controller) listFiles(ctx context.Context, req *controller.ListRequest) ([]string, error) {
	matches, err := c.listMatches(ctx, req)
	return paths(matches), err
}

// listMatches is listFiles with the content ids the directory gives.
func (c *Controller) listMatches(ctx context.Context, req *controller.ListRequest) ([]globbed, error) {
	if req == nil || req.FS == nil {
		return nil, fmt.Errorf("%w: list: no file system", controller.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pattern, err := c.listPattern(req.Type, req.Namespace)
	if err != nil {
		return nil, err
	}
	return globMatches(req.FS, pattern)
}

// listItem is a resource found by List and the file it came from.
type listItem struct {
	res  *controller.Resource
	path string
}

// List returns the resources of the requested type in the files matching the
// list template's pattern, sorted by name. Files holding resources of other
// types are skipped, so kinds may share a directory. A file that does not
// decode at all, holds a resource of another namespace, or holds one whose
// name the resource template does not render the file's path for (the path
// is the resource's identity: Get reads a resource from there) gives an error
// wrapping controller.ErrMalformed that names the first such file; see
// [Controller.ListProblems] for listing the rest. A namespace without files
// gives an empty result.
//
// Decoded files are cached by content (see [WithCacheSize]). List reads
// req.FS from the calling goroutine only, so the file system need not be safe
// for concurrent use; hashing, decoding and copying run on up to GOMAXPROCS
// goroutines for large namespaces, and are done when List returns.
func (c *Controller) List(ctx context.Context, req *controller.ListRequest) ([]*controller.Resource, error) {
	out, problems, err := c.ListProblems(ctx, req)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, problems[0].Err
	}
	return out, nil
}

var _ controller.ProblemLister = (*Controller)(nil)

// ListProblems is List, except that it leaves out each file List would fail
// on and reports it as a problem, in path order.
func (c *Controller) ListProblems(ctx context.Context, req *controller.ListRequest) ([]*controller.Resource, []controller.Problem, error) {
	matches, err := c.listFiles(ctx, req)
	if err != nil {
		return nil, nil, err
	}

	n := len(matches)
	data := make([][]byte, n)
	gone := make([]bool, n)
	for i, m := range matches {
		if i%256 == 255 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		if data[i], err = fs.ReadFile(req.FS, m); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				gone[i] = true // a dangling symbolic link holds no resource
				continue
			}
			return nil, nil, fmt.Errorf("reading %s: %w", m, err)
		}
	}
	keys := make([]contentKey, n)
	if c.cache.on() { // with no cache, the keys go unused
		if err := forEach(ctx, n, 512, func(i int) { keys[i] = sha256.Sum256(data[i]) }); err != nil {
			return nil, nil, err
		}
	}

	vals := make([]decoded, n)
	hit := make([]bool, n)
	c.cache.lookup(keys, vals, hit)
	var misses []int
	for i := range n {
		switch {
		case gone[i]:
			hit[i] = true // nothing to decode or cache
		case !hit[i]:
			misses = append(misses, i)
		}
	}
	if len(misses) > 0 {
		err := forEach(ctx, len(misses), 64, func(k int) {
			i := misses[k]
			vals[i] = decodeContent(c.spec.Encoding, data[i])
		})
		if err != nil {
			return nil, nil, err
		}
		c.cache.add(keys, vals, hit)
	}

	apiVersion := req.Type.APIVersion()
	split := c.nameSplitter(req.Type, req.Namespace)
	items := make([]listItem, 0, n)
	var problems []controller.Problem
	for i, m := range matches {
		if gone[i] {
			continue
		}
		d := vals[i]
		if d.err != nil {
			problems = append(problems, controller.Problem{Origin: m, Err: malformed(m, d.err)})
			continue
		}
		if d.res.APIVersion != apiVersion || d.res.Kind != req.Type.Kind {
			continue
		}
		if err := c.checkListed(d.res, m, req.Type, req.Namespace, split); err != nil {
			problems = append(problems, controller.Problem{Origin: m, Err: err})
			continue
		}
		items = append(items, listItem{d.res, m})
	}
	// Each name renders one path, so no two files hold one name; should a
	// template ever make it happen, both files are problems.
	byName := func(a, b listItem) int { return strings.Compare(a.res.Metadata.Name, b.res.Metadata.Name) }
	if !slices.IsSortedFunc(items, byName) {
		slices.SortStableFunc(items, byName)
	}
	var dup []listItem
	for i := 1; i < len(items); i++ {
		if items[i-1].res.Metadata.Name == items[i].res.Metadata.Name {
			kept := make([]listItem, 0, len(items))
			for i, it := range items {
				name := it.res.Metadata.Name
				if (i > 0 && items[i-1].res.Metadata.Name == name) || (i+1 < len(items) && items[i+1].res.Metadata.Name == name) {
					dup = append(dup, it)
					continue
				}
				kept = append(kept, it)
			}
			items = kept
			break
		}
	}
	for _, it := range dup {
		problems = append(problems, controller.Problem{Origin: it.path, Err: fmt.Errorf("%w: %s holds %s %s %q, which another file holds too",
			controller.ErrMalformed, it.path, apiVersion, req.Type.Kind, it.res.Metadata.Name)})
	}
	if len(dup) > 0 {
		slices.SortStableFunc(problems, func(a, b controller.Problem) int { return strings.Compare(a.Origin, b.Origin) })
	}
	out, err := cloneAll(ctx, items, req.Namespace)
	if err != nil {
		return nil, nil, err
	}
	// The selector sees clones, so it cannot change the cache, and is called
	// from this goroutine only.
	if req.Selector != nil {
		out = slices.DeleteFunc(out, func(r *controller.Resource) bool { return !req.Selector.Matches(r.Metadata.Labels) })
	}
	return out, problems, nil
}

// checkListed reports whether r, of the requested type and read from the
// listed file p, is the resource that file keeps: of the namespace, or of
// none, and named so that the resource template renders p for it.
// split, when not nil, is the resource template's path for typ and
// namespace split around the name (see pathTemplate.nameSplitter), which
// spares most files a rendering.
func (c *Controller) checkListed(r *controller.Resource, p string, typ controller.Type, namespace string, split []string) error {
	if ns := r.Metadata.Namespace; ns != "" && ns != namespace {
		return fmt.Errorf("%w: %s holds a resource of namespace %q but lies where namespace %q keeps its files",
			controller.ErrMalformed, p, ns, namespace)
	}
	name := r.Metadata.Name
	if split != nil && name != "" && len(p) <= maxPathLen && joinsTo(split, name, p) && checkValue(name) == nil && checkPath(p) == nil {
		return nil // what rendering would have found, without the rendering
	}
	want, err := c.resourcePath(typ, namespace, name)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s holds %s %q, a name no file can have: %v", controller.ErrMalformed, p, typ.Kind, r.Metadata.Name, err)
	case want != p:
		return fmt.Errorf("%w: %s holds %s %q, whose file is %s: a resource is known by its file's path; rename the file or fix metadata.name",
			controller.ErrMalformed, p, typ.Kind, r.Metadata.Name, want)
	}
	return nil
}

var _ controller.KeyedLister = (*Controller)(nil)

var _ controller.FilePerResource = (*Controller)(nil)

// FilePerResource reports true: each file holds one resource.
func (c *Controller) FilePerResource() bool { return true }

// ListKeyed lists the files the list template matches without reading them.
// When req.FS is a controller.ContentIDFS (as Git snapshots are), each
// Listed's Key is the file's path and content identifier (the path too,
// since it decides which resource the file may hold); otherwise it is empty.
// Decode gives what List would give for the file: nil for a file of another
// type, the resource (in the requested namespace) otherwise, or an error
// naming the file.
func (c *Controller) ListKeyed(ctx context.Context, req *controller.ListRequest) ([]controller.Listed, error) {
	matches, err := c.listMatches(ctx, req)
	if err != nil {
		return nil, err
	}
	ids, _ := req.FS.(controller.ContentIDFS)
	fsys, typ, namespace := req.FS, req.Type, req.Namespace
	split := c.nameSplitter(typ, namespace)
	out := make([]controller.Listed, 0, len(matches))
	for i, mt := range matches {
		if i%256 == 255 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		m := mt.path
		var key, id string
		if ids != nil {
			id = mt.id
			if id == "" { // the directory did not say: a symbolic link
				var err error
				if id, err = ids.ContentID(m); err != nil {
					if errors.Is(err, fs.ErrNotExist) {
						continue // a dangling symbolic link holds no resource
					}
					return nil, fmt.Errorf("reading %s: %w", m, err)
				}
			}
			key = m + "\x00" + id
		}
		out = append(out, controller.Listed{Key: key, Origin: m, Decode: func() (*controller.Resource, error) {
			return c.decodeListed(fsys, typ, namespace, m, id, split)
		}})
	}
	return out, nil
}

// decodeListed decodes one file found by ListKeyed, as List would. id is
// its content id, or empty.
func (c *Controller) decodeListed(fsys fs.FS, typ controller.Type, namespace, p, id string, split []string) (*controller.Resource, error) {
	r, shared, err := c.loadContent(fsys, p, id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if r.APIVersion != typ.APIVersion() || r.Kind != typ.Kind {
		return nil, nil
	}
	if err := c.checkListed(r, p, typ, namespace, split); err != nil {
		return nil, err
	}
	out := owned(r, shared)
	out.Metadata.Namespace = namespace
	return out, nil
}

// cloneAll returns deep copies of the items' resources, in the namespace.
// It is Resource.Clone in bulk: the copies share two allocations, one for
// the structs and one for the specs, which makes listing ten thousand
// resources a third cheaper. Each spec's capacity ends where it does, so
// appending to one cannot overwrite another; the price is that keeping one
// resource keeps the structs and specs of the whole list in memory.
func cloneAll(ctx context.Context, items []listItem, namespace string) ([]*controller.Resource, error) {
	specAt := make([]int, len(items)+1)
	for i, it := range items {
		specAt[i+1] = specAt[i] + len(it.res.Spec)
	}
	specs := make([]byte, specAt[len(items)])
	structs := make([]controller.Resource, len(items))
	out := make([]*controller.Resource, len(items))
	err := forEach(ctx, len(items), 512, func(i int) {
		src, dst := items[i].res, &structs[i]
		*dst = *src
		dst.Metadata.Namespace = namespace
		dst.Metadata.Labels = maps.Clone(src.Metadata.Labels)
		dst.Metadata.Annotations = maps.Clone(src.Metadata.Annotations)
		if src.Spec != nil {
			lo, hi := specAt[i], specAt[i+1]
			copy(specs[lo:hi], src.Spec)
			dst.Spec = specs[lo:hi:hi]
		}
		out[i] = dst
	})
	return out, err
}

// forEach calls fn(i) for every i in [0, n). When n is at least twice
// perWorker it spreads the calls over up to GOMAXPROCS goroutines, which are
// gone when it returns; fn must then be safe to call concurrently for
// distinct i. It stops early, returning the context's error, when ctx is
// done.
func forEach(ctx context.Context, n, perWorker int, fn func(i int)) error {
	const chunk = 64
	workers := min(runtime.GOMAXPROCS(0), n/perWorker)
	if workers <= 1 {
		for i := range n {
			if i%chunk == chunk-1 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			fn(i)
		}
		return ctx.Err()
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				lo := int(next.Add(chunk)) - chunk
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+chunk, n); i++ {
					fn(i)
				}
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

// Put writes the resource to the path the resource template renders,
// creating or replacing the file. The resource must be of the requested type
// and name its namespace; its resourceVersion is not stored.
//
// Put leaves the file untouched when it already holds the same content, even
// if formatted differently, so re-writing an unchanged resource changes no
// bytes. A file holding other content is edited in place, keeping what
// people wrote (see the package documentation), unless the edited file
// would not read back as the resource; then it is written afresh. It refuses, with an error wrapping controller.ErrMalformed, to
// replace a file holding another resource; a file that does not decode is
// replaced.
func (c *Controller) Put(ctx context.Context, req *controller.PutRequest) error {
	if req == nil || req.FS == nil || req.Resource == nil {
		return fmt.Errorf("%w: put: no file system or resource", controller.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r := req.Resource
	if r.APIVersion != req.Type.APIVersion() || r.Kind != req.Type.Kind {
		return fmt.Errorf("%w: resource is a %s %s, the request is for %s %s",
			controller.ErrInvalid, r.APIVersion, r.Kind, req.Type.APIVersion(), req.Type.Kind)
	}
	namespace, name := r.Metadata.Namespace, r.Metadata.Name
	p, err := c.resourcePath(req.Type, namespace, name)
	if err != nil {
		return err
	}
	if s := bytes.TrimSpace(r.Spec); len(s) > 0 && s[0] != '{' && string(s) != "null" {
		return fmt.Errorf("%w: spec must be a JSON object", controller.ErrInvalid)
	}
	data, err := encode(c.spec.Encoding, r)
	if err != nil {
		return fmt.Errorf("%w: %v", controller.ErrInvalid, err)
	}
	// What Put writes, Get must read back as the same resource.
	written := decodeContent(c.spec.Encoding, data)
	if written.err != nil {
		return fmt.Errorf("%w: the %s encoding of the resource does not read back: %v", controller.ErrInvalid, c.spec.Encoding, written.err)
	}
	if !sameContent(written.res, r) {
		return fmt.Errorf("%w: the resource does not survive the %s encoding unchanged (numbers beyond 64-bit precision?)", controller.ErrInvalid, c.spec.Encoding)
	}

	old, err := fs.ReadFile(req.FS, p)
	switch {
	case err == nil:
		if bytes.Equal(old, data) {
			return nil
		}
		if prev := decodeContent(c.spec.Encoding, old); prev.err == nil {
			if err := checkIdentity(prev.res, p, req.Type, namespace, name); err != nil {
				return err
			}
			same := prev.res.Clone()
			same.Metadata.Namespace = namespace
			if sameContent(same, r) {
				return nil // same content, other formatting: keep the file as it is
			}
			// Edit the file rather than replace it, so that what people
			// wrote (comments, order, layout) stays.
			if patched, d, ok := c.patch(old, r); ok {
				data, written = patched, d
			}
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return fmt.Errorf("reading %s: %w", p, err)
	}
	if err := req.FS.WriteFile(p, data, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	c.cache.add([]contentKey{sha256.Sum256(data)}, []decoded{written}, nil)
	return nil
}

// Delete removes the file at the path the resource template renders. A
// missing file gives an error wrapping controller.ErrNotFound. Delete
// refuses, with an error wrapping controller.ErrMalformed, to remove a file
// holding another resource; a file that does not decode is removed.
func (c *Controller) Delete(ctx context.Context, req *controller.DeleteRequest) error {
	if req == nil || req.FS == nil {
		return fmt.Errorf("%w: delete: no file system", controller.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := c.resourcePath(req.Type, req.Namespace, req.Name)
	if err != nil {
		return err
	}
	old, err := fs.ReadFile(req.FS, p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return notFound(req.Type, req.Namespace, req.Name)
	case err != nil:
		return fmt.Errorf("reading %s: %w", p, err)
	}
	if prev := decodeContent(c.spec.Encoding, old); prev.err == nil {
		if err := checkIdentity(prev.res, p, req.Type, req.Namespace, req.Name); err != nil {
			return err
		}
	}
	if err := req.FS.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return notFound(req.Type, req.Namespace, req.Name)
		}
		return fmt.Errorf("removing %s: %w", p, err)
	}
	return nil
}
