package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/cup-dev/cup/sdk/go/controller"
	"gopkg.in/yaml.v3"
)

// put returns the file's new content with r stored, or nil when the file
// already holds r.
func (f *file) put(r *controller.Resource) ([]byte, error) {
	name := r.Metadata.Name
	i := f.index(name)
	want := slices.Clone(f.entries)
	var old *entry
	if i >= 0 {
		if same(f.entries[i].res, r) {
			return nil, nil
		}
		old = f.entries[i]
		want[i] = &entry{res: r}
	} else {
		want = append(want, &entry{res: r})
	}
	e, err := f.entry(old, r)
	if err != nil {
		return nil, err
	}

	var out []byte
	switch {
	case !f.editable():
		f.set(i, e)
		out, err = f.encode()
	case i >= 0:
		first, last := f.span(i)
		var text []byte
		if text, err = f.render(e, string(f.src[f.offset(first):f.offset(last+1)])); err == nil {
			out = f.splice(first, last+1, text)
		}
	default:
		out, err = f.appendEntry(e)
	}
	if err != nil {
		return nil, err
	}
	return out, f.check(out, want)
}

// delete returns the file's new content without entry i.
func (f *file) delete(i int) ([]byte, error) {
	want := slices.Delete(slices.Clone(f.entries), i, i+1)
	var out []byte
	if !f.editable() {
		f.set(i, nil)
		var err error
		if out, err = f.encode(); err != nil {
			return nil, err
		}
	} else {
		first, last := f.span(i)
		head := first
		for head > 1 && isComment(f.line(head-1)) && indentation(f.line(head-1)) < f.root.Column {
			head--
		}
		if head > 1 || f.before {
			first = head // the comment above the entry goes with it, unless it heads the file
		}
		// Leave no run of blank lines where the entry was, nor at the end.
		to := last + 1
		if first == 1 && !f.before || first > 1 && isBlank(f.line(first-1)) {
			for to <= len(f.starts) && isBlank(f.line(to)) {
				to++
			}
		}
		if to > len(f.starts) && !f.after {
			for first > 1 && isBlank(f.line(first-1)) {
				first--
			}
		}
		out = f.splice(first, to, nil)
	}
	return out, f.check(out, want)
}

// entry returns the entry storing r, made from the nodes of old (nil for a
// new entry) where their content stays.
func (f *file) entry(old *entry, r *controller.Resource) (*entry, error) {
	e := &entry{res: r, fields: &yaml.Node{Kind: yaml.MappingNode}}
	if old != nil {
		e.key = old.key
		if old.fields.Kind == yaml.MappingNode {
			e.fields = old.fields
		} else {
			e.fields.HeadComment, e.fields.LineComment, e.fields.FootComment = old.fields.HeadComment, old.fields.LineComment, old.fields.FootComment
		}
	}
	if len(e.fields.Content) == 0 {
		e.fields.Style &^= yaml.FlowStyle // {} grows in block style; set again below if it stays empty
	}
	if e.key == nil && !f.seq() {
		e.key = str(r.Metadata.Name)
	}
	if f.seq() {
		setField(e.fields, "name", merge(lookup(e.fields, "name"), str(r.Metadata.Name)))
	}
	for _, m := range []struct {
		field string
		value map[string]string
	}{{"labels", r.Metadata.Labels}, {"annotations", r.Metadata.Annotations}} {
		prev := lookup(e.fields, m.field)
		setField(e.fields, m.field, merge(prev, stringsNode(prev, m.value)))
	}
	var spec *yaml.Node
	if r.Spec != nil {
		var err error
		if spec, err = specNode(r.Spec); err != nil {
			return nil, controller.Invalid("spec: %v", err)
		}
	}
	setField(e.fields, "spec", merge(lookup(e.fields, "spec"), spec))
	if len(e.fields.Content) == 0 {
		e.fields.Style = yaml.FlowStyle // name: {}
	}
	return e, nil
}

// fieldOrder is the order of an entry's fields that setField keeps.
var fieldOrder = []string{"name", "labels", "annotations", "spec"}

// setField sets, or with a nil value removes, a field of an entry's mapping.
// A new field goes before the fields that come after it in fieldOrder.
func setField(m *yaml.Node, field string, value *yaml.Node) {
	at := len(m.Content)
	for i := 0; i < len(m.Content); i += 2 {
		switch k := m.Content[i].Value; {
		case k == field && value == nil:
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		case k == field:
			m.Content[i+1] = value
			return
		case at == len(m.Content) && slices.Index(fieldOrder, k) > slices.Index(fieldOrder, field):
			at = i
		}
	}
	if value != nil {
		m.Content = slices.Insert(m.Content, at, str(field), value)
	}
}

// editable reports whether the file can be edited line by line: when it has
// no document, or its entries are a block mapping or sequence.
func (f *file) editable() bool {
	if f.root == nil {
		return f.doc == nil
	}
	return f.root.Style&yaml.FlowStyle == 0
}

// set replaces entry i (appends when i < 0, removes when e is nil) in the
// YAML tree, for files that cannot be edited line by line.
func (f *file) set(i int, e *entry) {
	if f.root == nil { // the document is a null
		f.root = &yaml.Node{Kind: yaml.MappingNode}
		null := f.doc.Content[0]
		f.root.HeadComment, f.root.LineComment, f.root.FootComment = null.HeadComment, null.LineComment, null.FootComment
		f.doc.Content[0] = f.root
		if f.doc.HeadComment == "" { // "--- # about the file" comes first
			f.doc.HeadComment, f.doc.FootComment = f.doc.FootComment, ""
		}
	}
	var nodes []*yaml.Node
	if e != nil {
		nodes = e.nodes()
	}
	width := 2
	if f.seq() {
		width = 1
	}
	if i < 0 {
		f.root.Content = append(f.root.Content, nodes...)
	} else {
		f.root.Content = slices.Replace(f.root.Content, i*width, (i+1)*width, nodes...)
	}
	if len(f.root.Content) > 0 {
		f.root.Style &^= yaml.FlowStyle
	}
}

// nodes returns what stands for the entry in the mapping or sequence of
// entries.
func (e *entry) nodes() []*yaml.Node {
	if e.key == nil {
		return []*yaml.Node{e.fields}
	}
	return []*yaml.Node{e.key, e.fields}
}

// encode encodes the whole YAML tree.
func (f *file) encode() ([]byte, error) {
	return encodeYAML(f.doc, f.indent())
}

func encodeYAML(n *yaml.Node, indent int) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(indent)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// render returns the lines of entry e, at the indentation of the file's
// entries. Comments of e's nodes that were not in was, the text e replaces,
// are left out: they belong to lines that stay.
func (f *file) render(e *entry, was string) ([]byte, error) {
	var n *yaml.Node
	if e.key == nil {
		n = &yaml.Node{Kind: yaml.SequenceNode, Content: e.nodes()}
	} else {
		n = &yaml.Node{Kind: yaml.MappingNode, Content: e.nodes()}
	}
	keepComments(n, was)
	data, err := encodeYAML(n, f.indent())
	if err != nil {
		return nil, err
	}
	if f.root == nil || f.root.Column <= 1 {
		return data, nil
	}
	pad := strings.Repeat(" ", f.root.Column-1)
	var out []byte
	for line := range bytes.Lines(data) {
		if len(bytes.TrimSpace(line)) > 0 {
			out = append(out, pad...)
		}
		out = append(out, line...)
	}
	return out, nil
}

// keepComments drops the comments of n and its children that are not in text.
func keepComments(n *yaml.Node, text string) {
	for _, c := range []*string{&n.HeadComment, &n.LineComment, &n.FootComment} {
		for line := range strings.Lines(*c) {
			if line = strings.TrimSpace(line); line != "" && !strings.Contains(text, line) {
				*c = ""
				break
			}
		}
	}
	for _, child := range n.Content {
		keepComments(child, text)
	}
}

// appendEntry returns the file's content with e after the last entry, or at
// the end when there is none.
func (f *file) appendEntry(e *entry) ([]byte, error) {
	text, err := f.render(e, "")
	if err != nil {
		return nil, err
	}
	at := len(f.starts) + 1
	if n := len(f.entries); n > 0 {
		_, last := f.span(n - 1)
		at = last + 1
		if first, _ := f.span(n - 1); (n > 1 || f.before) && first > 1 && isBlank(f.line(first-1)) {
			text = append([]byte("\n"), text...) // entries are apart
		}
	}
	return f.splice(at, at, text), nil
}

// splice returns the file's content with lines [from, to) replaced by text.
func (f *file) splice(from, to int, text []byte) []byte {
	before, after := f.src[:f.offset(from)], f.src[f.offset(to):]
	out := slices.Clip(before)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, text...)
	return append(out, after...)
}

// span returns the first and last line of entry i: from the line of its name,
// or of the dash of its item, to the last line below that is indented deeper.
func (f *file) span(i int) (first, last int) {
	first = f.startLine(i)
	next := len(f.starts) + 1
	if i+1 < len(f.entries) {
		next = f.startLine(i + 1)
	}
	last = first
	for l := first + 1; l < next; l++ {
		if s := f.line(l); !isBlank(s) && indentation(s) >= f.root.Column {
			last = l
		}
	}
	return first, last
}

// startLine returns the line where entry i starts.
func (f *file) startLine(i int) int {
	e := f.entries[i]
	if e.key != nil {
		return e.key.Line
	}
	l := e.fields.Line
	for l > 1 && !strings.HasPrefix(strings.TrimLeft(f.line(l), " "), "-") {
		l-- // the item's dash is on a line of its own
	}
	return l
}

// indent returns the indentation of the file's nested mappings, 2 by default.
func (f *file) indent() int {
	var find func(n *yaml.Node) int
	find = func(n *yaml.Node) int {
		if n.Kind == yaml.MappingNode {
			for i := 0; i < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && v.Line > k.Line && v.Column > k.Column {
					return v.Column - k.Column
				}
			}
		}
		for _, c := range n.Content {
			if d := find(c); d > 0 {
				return d
			}
		}
		return 0
	}
	if f.doc != nil {
		if d := find(f.doc); d >= 2 && d <= 9 {
			return d
		}
	}
	return 2
}

// offset returns the offset in the file of the start of line n, counted from
// 1; the line after the last starts at the end.
func (f *file) offset(n int) int {
	if n-1 < len(f.starts) {
		return f.starts[n-1]
	}
	return len(f.src)
}

// line returns line n without its line break.
func (f *file) line(n int) string {
	return strings.TrimRight(string(f.src[f.offset(n):f.offset(n+1)]), "\r\n")
}

func isBlank(s string) bool   { return strings.TrimSpace(s) == "" }
func isComment(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "#") }

// indentation returns the number of spaces that start s.
func indentation(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }

// check parses out, the new content of the file, and returns an error unless
// it holds the resources of want, in order.
func (f *file) check(out []byte, want []*entry) error {
	g, err := parse(f.path, f.kind, f.namespace, out)
	if err == nil && len(g.entries) != len(want) {
		err = fmt.Errorf("%d entries instead of %d", len(g.entries), len(want))
	}
	for i := 0; err == nil && i < len(want); i++ {
		if !same(g.entries[i].res, want[i].res) {
			err = fmt.Errorf("entry %d is %q, not as written", i+1, g.entries[i].res.Metadata.Name)
		}
	}
	if err != nil {
		return fmt.Errorf("cannot rewrite %s without changing what it holds: %w", f.path, err)
	}
	return nil
}

// same reports whether a and b have the same name, labels, annotations and
// spec. No spec and an empty one are the same.
func same(a, b *controller.Resource) bool {
	return a.Metadata.Name == b.Metadata.Name &&
		maps.Equal(a.Metadata.Labels, b.Metadata.Labels) &&
		maps.Equal(a.Metadata.Annotations, b.Metadata.Annotations) &&
		reflect.DeepEqual(specValue(a.Spec), specValue(b.Spec))
}

// specValue decodes a spec for comparison, with numbers as written.
func specValue(spec json.RawMessage) any {
	v := any(map[string]any{})
	if len(bytes.TrimSpace(spec)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(spec))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return err.Error() // equal only to the same error
		}
	}
	if v == nil {
		v = map[string]any{}
	}
	return v
}
