package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cup-dev/cup/sdk/go/controller"
	"gopkg.in/yaml.v3"
)

// A file is a parsed <plural>.<group>/<namespace>.yaml (see filePath): its
// text, its YAML tree and the resources of its entries.
type file struct {
	path, kind, namespace string

	src    []byte
	starts []int      // starts[n-1] is the offset in src of line n
	doc    *yaml.Node // the document; nil when the file holds none
	root   *yaml.Node // the mapping or sequence of entries; nil when there is none

	entries []*entry

	// before and after tell that the file is a part of a larger one (see
	// scan.go): lines of other entries come before it, or after it.
	before, after bool
	// lines is how many lines of the larger file come before the part,
	// for messages to count lines as in the larger file.
	lines int
}

// An entry is one resource of a file.
type entry struct {
	// key is the entry's name in the mapping form, nil in the sequence form.
	key *yaml.Node
	// fields holds labels, annotations and spec (and the name, in the
	// sequence form): a mapping, or a null for an empty entry.
	fields *yaml.Node
	res    *controller.Resource
}

// seq reports whether the entries form a sequence.
func (f *file) seq() bool { return f.root != nil && f.root.Kind == yaml.SequenceNode }

// index returns the position of the entry called name, or -1.
func (f *file) index(name string) int {
	for i, e := range f.entries {
		if e.res.Metadata.Name == name {
			return i
		}
	}
	return -1
}

// parse reads the file at path, with content data, holding resources of kind
// in namespace.
func parse(path, kind, namespace string, data []byte) (*file, error) {
	return parseAt(path, kind, namespace, data, 1)
}

// parseAt parses data, the lines of a larger file from line on, as parse
// does: messages count lines as in the larger file.
func parseAt(path, kind, namespace string, data []byte, line int) (*file, error) {
	f := &file{path: path, kind: kind, namespace: namespace, src: data, lines: line - 1}
	for i := 0; i < len(data); {
		f.starts = append(f.starts, i)
		n := bytes.IndexByte(data[i:], '\n')
		if n < 0 {
			break
		}
		i += n + 1
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc, more yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return f, nil
	} else if err != nil {
		return nil, f.malformed(nil, "%s", f.yamlError(err))
	}
	if err := dec.Decode(&more); err == nil {
		return nil, f.malformed(&more, "a second YAML document; want one")
	} else if !errors.Is(err, io.EOF) {
		return nil, f.malformed(nil, "%s", f.yamlError(err))
	}
	f.doc = &doc
	switch root := doc.Content[0]; {
	case root.Kind == yaml.MappingNode:
		f.root = root
		for i := 0; i < len(root.Content); i += 2 {
			k, v := root.Content[i], root.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" || k.ShortTag() == "!!merge" || k.Value == "" {
				return nil, f.malformed(k, "an entry name that is not a string")
			}
			if err := f.add(k, v, k.Value); err != nil {
				return nil, err
			}
		}
	case root.Kind == yaml.SequenceNode:
		f.root = root
		for _, item := range root.Content {
			if err := f.add(nil, item, ""); err != nil {
				return nil, err
			}
		}
	case root.Kind != yaml.ScalarNode || root.ShortTag() != "!!null":
		return nil, f.malformed(root, "%s; want a mapping or a sequence of entries", describe(root))
	}
	return f, nil
}

// add parses the fields of an entry and appends it. In the sequence form, key
// is nil and name empty: the fields hold the name.
func (f *file) add(key, fields *yaml.Node, name string) error {
	r := &controller.Resource{Kind: f.kind, Metadata: controller.Metadata{Namespace: f.namespace, Name: name}}
	what := fmt.Sprintf("entry %q", name)
	node := resolve(fields)
	switch {
	case node.Kind == yaml.MappingNode:
	case key != nil && node.Kind == yaml.ScalarNode && node.ShortTag() == "!!null":
		node = &yaml.Node{Kind: yaml.MappingNode}
	case key != nil:
		return f.malformed(node, "%s is %s; want a mapping of labels, annotations and spec", what, describe(node))
	default:
		return f.malformed(node, "an entry that is %s; want a mapping of name, labels, annotations and spec", describe(node))
	}
	if key == nil {
		v := lookup(node, "name")
		if v == nil {
			return f.malformed(node, "an entry without a name")
		}
		if v = resolve(v); v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null" || v.Value == "" {
			return f.malformed(v, "an entry name that is not a string")
		}
		r.Metadata.Name, what = v.Value, fmt.Sprintf("entry %q", v.Value)
	}
	seen := make(map[string]bool)
	for i := 0; i < len(node.Content); i += 2 {
		k, v := node.Content[i], resolve(node.Content[i+1])
		if seen[k.Value] {
			return f.malformed(k, "%s has two fields %q", what, k.Value)
		}
		seen[k.Value] = true
		var err error
		switch field := k.Value; {
		case field == "name" && key == nil:
		case field == "labels":
			r.Metadata.Labels, err = stringMap(v)
		case field == "annotations":
			r.Metadata.Annotations, err = stringMap(v)
		case field == "spec":
			r.Spec, err = specJSON(v)
		case key == nil:
			return f.malformed(k, "%s has the unknown field %q; want name, labels, annotations or spec", what, field)
		default:
			return f.malformed(k, "%s has the unknown field %q; want labels, annotations or spec", what, field)
		}
		if err != nil {
			var ne *nodeError
			if errors.As(err, &ne) {
				return f.malformed(ne.node, "%s: %s: %s", what, k.Value, ne.msg)
			}
			return f.malformed(v, "%s: %s: %v", what, k.Value, err)
		}
	}
	if f.index(r.Metadata.Name) >= 0 {
		return f.malformed(node, "a second entry %q", r.Metadata.Name)
	}
	f.entries = append(f.entries, &entry{key: key, fields: fields, res: r})
	return nil
}

// malformed returns an error about the file's content at n (when not nil).
func (f *file) malformed(n *yaml.Node, format string, args ...any) error {
	if n != nil && n.Line > 0 {
		return fmt.Errorf("%s:%d: malformed: %s", f.path, f.lines+n.Line, fmt.Sprintf(format, args...))
	}
	return fmt.Errorf("%s: malformed: %s", f.path, fmt.Sprintf(format, args...))
}

// yamlError renders an error of yaml.v3, "yaml: line 3: ...", counting
// lines as in the larger file.
func (f *file) yamlError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok && f.lines > 0 {
		if i := strings.IndexByte(rest, ':'); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				return fmt.Sprintf("line %d%s", f.lines+n, rest[i:])
			}
		}
	}
	return msg
}

// describe names the kind of a node for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "null"
		}
		return fmt.Sprintf("the %s %q", strings.TrimPrefix(n.ShortTag(), "!!"), n.Value)
	}
	return "an alias"
}
