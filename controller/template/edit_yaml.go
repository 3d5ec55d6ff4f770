package template

import (
	"bytes"
	"errors"
	"slices"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// errNoPatch reports a YAML document the patcher does not edit in place; the
// caller writes the whole resource instead.
var errNoPatch = errors.New("cannot patch the document in place")

// patchYAML edits old, a YAML file, in place to hold want, a resource in file
// form. It changes only the text of values that differ: a changed scalar on
// a line of its own is replaced on that line, keeping the line's comment; a
// changed mapping is edited key by key; a changed sequence with as many
// elements is edited element by element; anything else that changed is
// rewritten where it stands. Keys want lacks are removed with the comment
// lines right above them, and keys old lacks are appended at the end of
// their mapping in want's order. Comments, blank lines, key order,
// indentation and the style of untouched scalars stay as they are.
//
// The result must still be checked to read back as want: patchYAML
// returns errNoPatch for documents whose layout it does not understand (flow
// style at the top, merge keys), but anchors and aliases, for one, are edited
// without regard for each other.
func patchYAML(old []byte, want object) ([]byte, error) {
	js, err := yaml.YAMLToJSONStrict(old)
	if err != nil {
		return nil, err
	}
	oldValue, err := decodeOrdered(js)
	if err != nil {
		return nil, err
	}
	if !hasNamespace(oldValue) {
		want = dropNamespace(want)
	}
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(old, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yamlv3.DocumentNode || len(doc.Content) != 1 {
		return nil, errNoPatch
	}
	p := newYAMLPatcher(old, doc.Content[0])
	root := doc.Content[0]
	if root.Kind != yamlv3.MappingNode || root.Style&yamlv3.FlowStyle != 0 {
		return nil, errNoPatch
	}
	if err := p.mapping(root, oldValue, want, p.lastLine()); err != nil {
		return nil, err
	}
	return p.apply(), nil
}

// yamlPatcher collects edits of one YAML file. Lines are numbered from 1 and
// columns from 1 in characters, as yaml.v3's nodes number them.
type yamlPatcher struct {
	src   []byte
	start []int // start[l-1] is the offset of line l; one more for the end
	edits []yamlEdit
	unit  int // indentation of a nested mapping
	seq   int // indentation of a sequence under a key, relative to the key
}

// yamlEdit replaces src[start:end] with text.
type yamlEdit struct {
	start, end int
	text       string
}

func newYAMLPatcher(src []byte, root *yamlv3.Node) *yamlPatcher {
	p := &yamlPatcher{src: src, unit: 2}
	p.start = append(p.start, 0)
	for i, c := range src {
		if c == '\n' {
			p.start = append(p.start, i+1)
		}
	}
	if len(src) > 0 && src[len(src)-1] != '\n' {
		p.start = append(p.start, len(src))
	}
	p.unit, p.seq = 0, -1
	p.detectIndent(root)
	if p.unit <= 0 {
		p.unit = 2
	}
	if p.seq < 0 {
		p.seq = 0 // as cup writes YAML
	}
	return p
}

// detectIndent finds how the file indents a mapping and a sequence under a
// key.
func (p *yamlPatcher) detectIndent(n *yamlv3.Node) {
	if n.Kind != yamlv3.MappingNode || n.Style&yamlv3.FlowStyle != 0 {
		for _, c := range n.Content {
			p.detectIndent(c)
		}
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Style&yamlv3.FlowStyle == 0 && v.Line > k.Line {
			switch v.Kind {
			case yamlv3.MappingNode:
				if p.unit == 0 && v.Column > k.Column {
					p.unit = v.Column - k.Column
				}
			case yamlv3.SequenceNode:
				if p.seq < 0 && p.src[p.offset(v.Line, v.Column)] == '-' {
					p.seq = max(0, v.Column-k.Column)
				}
			}
		}
		p.detectIndent(v)
	}
}

// mapping edits block mapping n, which holds old and ends by line end, to
// hold want.
func (p *yamlPatcher) mapping(n *yamlv3.Node, old any, want object, end int) error {
	o, ok := old.(object)
	if !ok || len(n.Content) != 2*len(o) {
		return errNoPatch // merge keys, or keys that do not read as strings
	}
	pairs := len(n.Content) / 2
	last := end
	for i := range pairs {
		k, v := n.Content[2*i], n.Content[2*i+1]
		if k.Kind != yamlv3.ScalarNode {
			return errNoPatch
		}
		name, err := p.keyName(k)
		if err != nil {
			return err
		}
		ov, ok := o.get(name)
		if !ok {
			return errNoPatch
		}
		stop := end
		if i+1 < pairs {
			stop = n.Content[2*i+2].Line - 1
		}
		stop = p.trim(k.Line, stop)
		wv, keep := want.get(name)
		switch {
		case !keep:
			from := p.head(k.Line)
			// Comment lines indented under the key go with it, even
			// past the end of the mapping.
			indent := p.indent(k.Line)
			for stop < p.lines() && p.indent(stop+1) > indent && strings.HasPrefix(strings.TrimSpace(p.line(stop+1)), "#") {
				stop++
			}
			if !p.lineStartsWith(k) {
				return errNoPatch // the first key of a sequence item: "- key: value"
			}
			p.edits = append(p.edits, yamlEdit{p.start[from-1], p.start[stop], ""})
		case orderedEqual(ov, wv):
		default:
			if err := p.value(k, v, ov, wv, stop); err != nil {
				return err
			}
		}
		last = stop
	}
	// Keys old lacks go after the last entry, at the indentation of the
	// first, in want's order; in a mapping whose keys are sorted (as cup
	// writes them), each goes to its sorted place instead.
	k0 := n.Content[0]
	indent := p.col(p.offset(k0.Line, k0.Column)) - 1
	keys := make([]string, pairs)
	for i := range pairs {
		keys[i], _ = p.keyName(n.Content[2*i])
	}
	sorted := pairs > 1 && slices.IsSorted(keys)
	var added []member
	for _, m := range want {
		if _, ok := o.get(m.key); !ok {
			added = append(added, m)
		}
	}
	if sorted {
		slices.SortStableFunc(added, func(a, b member) int { return strings.Compare(a.key, b.key) })
	}
	for _, m := range added {
		at := p.start[last]
		if sorted {
			if j, _ := slices.BinarySearch(keys, m.key); j < pairs {
				if k := n.Content[2*j]; p.lineStartsWith(k) {
					at = p.start[p.head(k.Line)-1]
				}
			}
		}
		var b strings.Builder
		b.WriteString(strings.Repeat(" ", indent))
		p.member(&b, m, indent)
		b.WriteByte('\n')
		text := b.String()
		if at == len(p.src) && len(p.src) > 0 && p.src[at-1] != '\n' {
			text = "\n" + text
		}
		p.edits = append(p.edits, yamlEdit{at, at, text})
	}
	return nil
}

// keyName returns the JSON key that a YAML 1.1 reader (sigs.k8s.io/yaml, as
// decode uses) makes of key k: "true" for a plain yes, "1" for 0x1.
func (p *yamlPatcher) keyName(k *yamlv3.Node) (string, error) {
	v := k.Value
	if k.Style != 0 || v == "" || !(strings.ContainsAny(v[:1], "0123456789+-.~<") || yaml11Word[strings.ToLower(v)]) {
		return v, nil
	}
	off := p.offset(k.Line, k.Column)
	end, ok := p.scalarEnd(k, off, true)
	if !ok {
		return "", errNoPatch
	}
	js, err := yaml.YAMLToJSON(append(p.src[off:end:end], ": 0"...))
	if err != nil {
		return "", errNoPatch
	}
	o, err := decodeOrdered(js)
	if m, ok := o.(object); err != nil || !ok || len(m) != 1 {
		return "", errNoPatch
	}
	return o.(object)[0].key, nil
}

// yaml11Word holds the plain words YAML 1.1 reads as booleans or null.
var yaml11Word = map[string]bool{
	"y": true, "yes": true, "n": true, "no": true, "true": true, "false": true,
	"on": true, "off": true, "null": true,
}

// lineStartsWith reports whether node n is the first thing on its line.
func (p *yamlPatcher) lineStartsWith(n *yamlv3.Node) bool {
	off := p.offset(n.Line, n.Column)
	return strings.TrimSpace(string(p.src[p.start[n.Line-1]:off])) == ""
}

// sequence edits block sequence n, which holds old and ends by line end, to
// hold want, element by element.
func (p *yamlPatcher) sequence(n *yamlv3.Node, old, want []any, end int) error {
	for i, v := range n.Content {
		if orderedEqual(old[i], want[i]) {
			continue
		}
		stop := end
		if i+1 < len(n.Content) {
			d, ok := p.dash(n.Content[i+1])
			if !ok {
				return errNoPatch
			}
			stop = p.lineOf(d) - 1
		}
		d, ok := p.dash(v)
		if !ok {
			return errNoPatch
		}
		if err := p.value(nil, v, old[i], want[i], p.trim(p.lineOf(d), stop)); err != nil {
			return err
		}
	}
	return nil
}

// value edits v, the value of key k or, for a nil k, a sequence item, which
// holds old and ends by line end, to hold want.
func (p *yamlPatcher) value(k, v *yamlv3.Node, old, want any, end int) error {
	block := v.Style&yamlv3.FlowStyle == 0
	switch w := want.(type) {
	case object:
		if v.Kind == yamlv3.MappingNode && block && len(w) > 0 && !isEmpty(old) {
			return p.mapping(v, old, w, end)
		}
	case []any:
		if o, ok := old.([]any); ok && v.Kind == yamlv3.SequenceNode && block && len(w) == len(o) && len(w) > 0 {
			return p.sequence(v, o, w, end)
		}
	}
	voff := p.offset(v.Line, v.Column)
	first := v.Line
	if k != nil {
		first = k.Line
	}
	// A scalar on one line becomes another on that line.
	if _, isColl := want.(object); !isColl || isEmpty(want) {
		if _, isSeq := want.([]any); (!isSeq || isEmpty(want)) && v.Line == first && end == first &&
			(v.Kind == yamlv3.ScalarNode || v.Kind == yamlv3.AliasNode || !block) {
			text := p.scalar(want, 0, 0)
			if vend, ok := p.scalarEnd(v, voff, false); ok && !strings.Contains(text, "\n") {
				p.edits = append(p.edits, yamlEdit{voff, vend, text})
				return nil
			}
		}
	}
	// A flow collection on one line becomes JSON on that line.
	if !block && v.Line == first && end == first {
		if vend, ok := p.scalarEnd(v, voff, false); ok {
			text := p.flow(want)
			if _, err := yaml.YAMLToJSON([]byte(text)); err == nil {
				p.edits = append(p.edits, yamlEdit{voff, vend, text})
				return nil
			}
		}
	}
	// Anything else is rewritten from the key (or the item) to its end.
	var b strings.Builder
	var from int
	if k != nil {
		from = p.offset(k.Line, k.Column)
		kend, ok := p.scalarEnd(k, from, true)
		if !ok {
			return errNoPatch
		}
		indent := p.col(from) - 1
		b.Write(p.src[from:kend])
		b.WriteByte(':')
		p.after(&b, want, indent, p.comment(k, v))
	} else {
		d, _ := p.dash(v)
		from = d
		b.WriteByte('-')
		p.item(&b, want, p.col(d)-1, p.comment(nil, v))
	}
	p.edits = append(p.edits, yamlEdit{from, p.lineEnd(end), b.String()})
	return nil
}

// comment returns the line comment of the entry of k and v worth keeping.
func (p *yamlPatcher) comment(k, v *yamlv3.Node) string {
	if k != nil && k.LineComment != "" {
		return k.LineComment
	}
	if v.Kind == yamlv3.ScalarNode || v.Kind == yamlv3.AliasNode || v.Style&yamlv3.FlowStyle != 0 {
		return v.LineComment
	}
	return ""
}

// apply returns src with the edits made.
func (p *yamlPatcher) apply() []byte {
	// Insertions go before whatever else starts where they do.
	slices.SortStableFunc(p.edits, func(a, b yamlEdit) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return bool2int(a.end != a.start) - bool2int(b.end != b.start)
	})
	crlf := bytes.Contains(p.src, []byte("\r\n"))
	var out bytes.Buffer
	at := 0
	for _, e := range p.edits {
		if e.start < at {
			continue // overlapping edits cannot happen; be safe
		}
		out.Write(p.src[at:e.start])
		if crlf {
			e.text = strings.ReplaceAll(e.text, "\n", "\r\n")
		}
		out.WriteString(e.text)
		at = e.end
	}
	out.Write(p.src[at:])
	return out.Bytes()
}

func bool2int(b bool) int {
	if b {
		return 1
	}
	return 0
}
