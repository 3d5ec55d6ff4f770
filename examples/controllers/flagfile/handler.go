package main

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/cup-dev/cup/sdk/go/controller"
)

// handler serves resources of any type from one YAML file per type and
// namespace.
type handler struct{}

var _ controller.Handler = handler{}

func (handler) Get(_ context.Context, req *controller.GetRequest) (*controller.Resource, error) {
	p, err := filePath(req.Type, req.Namespace)
	if err != nil {
		return nil, err
	}
	data, err := readFile(req.FS, p)
	if err != nil {
		return nil, err
	}
	e, found, err := seek(data, p, req.Name)
	switch {
	case err == errNotPlain:
		f, err := parse(p, req.Type.Kind, req.Namespace, data)
		if err != nil {
			return nil, err
		}
		i := f.index(req.Name)
		if i < 0 {
			return nil, f.notFound(req.Name)
		}
		return f.entries[i].res, nil
	case err != nil:
		return nil, err
	case !found:
		return nil, notFound(req.Type.Kind, req.Namespace, p, req.Name)
	}
	if r, ok := fastEntry(req.Type.Kind, req.Namespace, e.name, data[e.start:e.end]); ok {
		return r, nil
	}
	o := &outline{data: data, entries: []span{e}}
	es, err := o.parse(p, req.Type.Kind, req.Namespace, 0, 1)
	if err != nil {
		return nil, err
	}
	return es[0].res, nil
}

func (h handler) List(ctx context.Context, req *controller.ListRequest) ([]*controller.Resource, error) {
	var rs []*controller.Resource
	err := h.ListEach(ctx, req, func(r *controller.Resource) error {
		rs = append(rs, r)
		return nil
	})
	return rs, err
}

var _ controller.EachLister = handler{}

// ListEach lists the entries of a plain file (see scan.go) a batch at a
// time, reading the file a window at a time, for the module to hold one
// window of the file and one batch of YAML trees at a time.
func (handler) ListEach(_ context.Context, req *controller.ListRequest, yield func(*controller.Resource) error) error {
	p, err := filePath(req.Type, req.Namespace)
	if err != nil {
		return err
	}
	// A plain file is read a window at a time, once. A file that is not
	// plain shows it in its first window unless it turns after a window
	// of plain entries: one that large could not be parsed whole in a
	// module's memory anyway.
	listed := 0
	err = eachWindow(req.FS, p, func(o *outline) error {
		listed += len(o.entries)
		return o.each(p, req.Type.Kind, req.Namespace, yield)
	})
	if err == errNotPlain && listed > 0 {
		return fmt.Errorf("%s: malformed: after %d entries written plainly (a name and a colon at the start of a line, their fields indented below), the file holds other YAML (anchors, aliases, quoted or flow keys); a file this large is listed a part at a time, so write it plainly throughout",
			p, listed)
	}
	if err != errNotPlain {
		return err
	}
	data, err := readFile(req.FS, p)
	if err != nil {
		return err
	}
	f, err := parse(p, req.Type.Kind, req.Namespace, data)
	if err != nil {
		return err
	}
	for _, e := range f.entries {
		if err := yield(e.res); err != nil {
			return err
		}
	}
	return nil
}

func (handler) Put(_ context.Context, req *controller.PutRequest) error {
	r := req.Resource
	p, data, pl, err := placed(req.Dir, req.Type, r.Metadata.Namespace, r.Metadata.Name)
	if err != nil {
		return err
	}
	if pl == nil {
		f, err := parse(p, req.Type.Kind, r.Metadata.Namespace, data)
		if err != nil {
			return err
		}
		out, err := f.put(r)
		if err != nil || out == nil {
			return err
		}
		return req.Dir.WriteFile(p, out)
	}
	part, from, to, err := editPart(data, p, req.Type.Kind, r.Metadata.Namespace, *pl)
	if err != nil {
		return err
	}
	text, err := part.put(r)
	if err != nil || text == nil {
		return err
	}
	return req.Dir.WriteFile(p, splice(data, from, to, text))
}

func (handler) Delete(_ context.Context, req *controller.DeleteRequest) error {
	p, data, pl, err := placed(req.Dir, req.Type, req.Namespace, req.Name)
	if err != nil {
		return err
	}
	if pl == nil {
		f, err := parse(p, req.Type.Kind, req.Namespace, data)
		if err != nil {
			return err
		}
		i := f.index(req.Name)
		switch {
		case i < 0:
			return f.notFound(req.Name)
		case len(f.entries) == 1:
			return req.Dir.Remove(f.path)
		}
		out, err := f.delete(i)
		if err != nil {
			return err
		}
		return req.Dir.WriteFile(f.path, out)
	}
	if !pl.found {
		return notFound(req.Type.Kind, req.Namespace, p, req.Name)
	}
	part, from, to, err := editPart(data, p, req.Type.Kind, req.Namespace, *pl)
	if err != nil {
		return err
	}
	if !pl.before && !pl.after {
		return req.Dir.Remove(p)
	}
	text, err := part.delete(0)
	if err != nil {
		return err
	}
	return req.Dir.WriteFile(p, splice(data, from, to, text))
}

// placed reads the file of typ in namespace for a put or delete of the
// entry called name, and locates the entry in it: pl is nil for a missing
// file, one that is not plain and one without entries, which are parsed
// whole.
func placed(fsys fs.FS, typ controller.Type, namespace, name string) (p string, data []byte, pl *place, err error) {
	if p, err = filePath(typ, namespace); err != nil {
		return "", nil, nil, err
	}
	if data, err = readFile(fsys, p); err != nil || data == nil {
		return p, nil, nil, err
	}
	at, any, err := locate(data, p, name)
	switch {
	case err == errNotPlain || err == nil && !any:
		return p, data, nil, nil
	case err != nil:
		return p, nil, nil, err
	}
	return p, data, &at, nil
}

// filePath returns the file that holds the resources of a type in
// namespace: <plural>.<group>/<namespace>.yaml, the type's full name as
// Kubernetes spells a CRD's, so that types of different groups never share
// a file. A host that does not say the type's plural and group (the
// original Cup says the kind only) gets <lower-case kind>s/<namespace>.yaml.
func filePath(typ controller.Type, namespace string) (string, error) {
	dir := strings.ToLower(typ.Kind) + "s"
	if typ.Plural != "" && typ.Group != "" {
		dir = typ.Plural + "." + typ.Group
	}
	for _, c := range dir {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '.' && c != '-' {
			return "", controller.Invalid("type %q: flagfile serves kinds, plurals and groups of ASCII letters, digits, dots and dashes only", dir)
		}
	}
	if namespace == "" || namespace == "." || namespace == ".." || !fs.ValidPath(namespace) || strings.ContainsAny(namespace, `/\`) {
		return "", controller.Invalid("namespace %q cannot name a file", namespace)
	}
	return dir + "/" + namespace + ".yaml", nil
}

func (f *file) notFound(name string) error { return notFound(f.kind, f.namespace, f.path, name) }

func notFound(kind, namespace, path, name string) error {
	return fmt.Errorf("%s %q in namespace %q (%s): %w", kind, name, namespace, path, controller.ErrNotFound)
}
