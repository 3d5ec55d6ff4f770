package main

import (
	"bytes"
	"context"
	"errors"
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
	data, err := fs.ReadFile(req.FS, p)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	// Parsing YAML is the bulk of a call's work (in WebAssembly, about 1 ms
	// an entry), so a get parses the lines of its own entry only, when the
	// file is plainly laid out.
	if part, ok := entryLines(data, req.Name); ok {
		if f, err := parse(p, req.Type.Kind, req.Namespace, part); err == nil && len(f.entries) == 1 && f.entries[0].res.Metadata.Name == req.Name {
			return f.entries[0].res, nil
		}
	}
	f, err := parse(p, req.Type.Kind, req.Namespace, data)
	if err != nil {
		return nil, err
	}
	i := f.index(req.Name)
	if i < 0 {
		return nil, f.notFound(req.Name)
	}
	return f.entries[i].res, nil
}

func (handler) List(_ context.Context, req *controller.ListRequest) ([]*controller.Resource, error) {
	f, err := load(req.FS, req.Type, req.Namespace)
	if err != nil {
		return nil, err
	}
	rs := make([]*controller.Resource, len(f.entries))
	for i, e := range f.entries {
		rs[i] = e.res
	}
	return rs, nil
}

func (handler) Put(_ context.Context, req *controller.PutRequest) error {
	r := req.Resource
	f, err := load(req.Dir, req.Type, r.Metadata.Namespace)
	if err != nil {
		return err
	}
	data, err := f.put(r)
	if err != nil || data == nil {
		return err
	}
	return req.Dir.WriteFile(f.path, data)
}

func (handler) Delete(_ context.Context, req *controller.DeleteRequest) error {
	f, err := load(req.Dir, req.Type, req.Namespace)
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
	data, err := f.delete(i)
	if err != nil {
		return err
	}
	return req.Dir.WriteFile(f.path, data)
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

// load reads the file of typ in namespace from fsys. A missing file holds
// no entries.
func load(fsys fs.FS, typ controller.Type, namespace string) (*file, error) {
	p, err := filePath(typ, namespace)
	if err != nil {
		return nil, err
	}
	data, err := fs.ReadFile(fsys, p)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parse(p, typ.Kind, namespace, data)
}

func (f *file) notFound(name string) error {
	return fmt.Errorf("%s %q in namespace %q (%s): %w", f.kind, name, f.namespace, f.path, controller.ErrNotFound)
}

// entryLines returns the lines of data holding the entry name, when data
// is a plain block mapping: no anchors or aliases (an entry may borrow
// from another), no flow style, entries at column 0 written as "name:".
// ok is false when it cannot tell; the caller then parses the whole file.
func entryLines(data []byte, name string) (_ []byte, ok bool) {
	if bytes.ContainsAny(data, "&*{}[]") && !plainBrackets(data) {
		return nil, false
	}
	start, end := -1, len(data)
	for i := 0; i < len(data); {
		j := bytes.IndexByte(data[i:], '\n')
		next := len(data)
		if j >= 0 {
			next = i + j + 1
		}
		line := data[i:next]
		switch {
		case len(line) == 0 || line[0] == ' ' || line[0] == '\t' || line[0] == '\n' || line[0] == '\r' || line[0] == '#':
		case line[0] == '-' || line[0] == '"' || line[0] == '\'' || line[0] == '?':
			return nil, false // a sequence, or keys in quotes
		case start >= 0:
			end = i
			return data[start:end], true
		case bytes.HasPrefix(line, []byte(name+":")) && (len(line) == len(name)+1 || line[len(name)+1] == ' ' || line[len(name)+1] == '\n' || line[len(name)+1] == '\r'):
			start = i
		}
		i = next
	}
	if start < 0 {
		return nil, false
	}
	return data[start:end], true
}

// plainBrackets reports whether the brackets and braces of data only
// appear in flow-style values inside entries (indented), and data has no
// anchors or aliases.
func plainBrackets(data []byte) bool {
	if bytes.ContainsAny(data, "&*") {
		return false
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) > 0 && line[0] != ' ' && line[0] != '#' && bytes.ContainsAny(line, "{}[]") {
			return false
		}
	}
	return true
}
