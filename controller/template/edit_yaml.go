package template

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/cup-dev/cup/internal/document"
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

// lines returns the number of lines.
func (p *yamlPatcher) lines() int { return len(p.start) - 1 }

// lastLine returns the last line of the document's content.
func (p *yamlPatcher) lastLine() int {
	l := p.lines()
	for l > 1 && strings.HasPrefix(p.line(l), "...") {
		l--
	}
	return l
}

// line returns the text of line l without its line break.
func (p *yamlPatcher) line(l int) string {
	if l < 1 || l > p.lines() {
		return ""
	}
	return strings.TrimRight(string(p.src[p.start[l-1]:p.start[l]]), "\r\n")
}

// lineEnd returns the offset of the end of line l's text.
func (p *yamlPatcher) lineEnd(l int) int { return p.start[l-1] + len(p.line(l)) }

// offset returns the offset of line l, column c.
func (p *yamlPatcher) offset(l, c int) int {
	s := p.line(l)
	i := 0
	for range c - 1 {
		if i >= len(s) {
			break
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
	}
	return p.start[l-1] + i
}

// col returns the column of offset off.
func (p *yamlPatcher) col(off int) int {
	l := p.lineOf(off)
	return utf8.RuneCount(p.src[p.start[l-1]:off]) + 1
}

// lineOf returns the line holding offset off.
func (p *yamlPatcher) lineOf(off int) int {
	i, found := slices.BinarySearch(p.start, off)
	if found {
		return i + 1
	}
	return i
}

// blank reports whether line l holds nothing but a comment, if that.
func (p *yamlPatcher) blank(l int) bool {
	t := strings.TrimSpace(p.line(l))
	return t == "" || t[0] == '#'
}

// trim returns the last line in [from, to] that is not blank, or from.
func (p *yamlPatcher) trim(from, to int) int {
	for to > from && p.blank(to) {
		to--
	}
	return to
}

// indent returns the number of spaces line l starts with.
func (p *yamlPatcher) indent(l int) int {
	s := p.line(l)
	return len(s) - len(strings.TrimLeft(s, " "))
}

// head returns the first line of the comment lines right above line l, or l.
func (p *yamlPatcher) head(l int) int {
	for l > 1 && strings.HasPrefix(strings.TrimSpace(p.line(l-1)), "#") {
		l--
	}
	return l
}

// dash returns the offset of the "-" that starts sequence item n.
func (p *yamlPatcher) dash(n *yamlv3.Node) (int, bool) {
	off := p.offset(n.Line, n.Column)
	for i := off - 1; i >= 0; i-- {
		switch p.src[i] {
		case ' ', '\t', '\n', '\r':
		case '-':
			return i, true
		default:
			return 0, false
		}
	}
	return 0, false
}

// scalarEnd returns the end offset of the single-line scalar, alias or flow
// collection n whose text starts at off, or false if it does not end on its
// line.
func (p *yamlPatcher) scalarEnd(n *yamlv3.Node, off int, key bool) (int, bool) {
	end := p.lineEnd(p.lineOf(off))
	s := p.src[off:end]
	switch {
	case n.Kind == yamlv3.ScalarNode && n.Style&yamlv3.DoubleQuotedStyle != 0:
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				return off + i + 1, true
			}
		}
		return 0, false
	case n.Kind == yamlv3.ScalarNode && n.Style&yamlv3.SingleQuotedStyle != 0:
		for i := 1; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					i++
					continue
				}
				return off + i + 1, true
			}
		}
		return 0, false
	case n.Kind == yamlv3.ScalarNode && n.Style&(yamlv3.LiteralStyle|yamlv3.FoldedStyle) != 0:
		return 0, false
	case n.Style&yamlv3.FlowStyle != 0:
		depth, quote := 0, byte(0)
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case quote == '"' && c == '\\':
				i++
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '[' || c == '{':
				depth++
			case c == ']' || c == '}':
				depth--
				if depth == 0 {
					return off + i + 1, true
				}
			}
		}
		return 0, false
	}
	// A plain scalar or an alias: up to a comment, or a ": " for a key.
	i := 0
	for ; i < len(s); i++ {
		if (s[i] == '#' && i > 0 && (s[i-1] == ' ' || s[i-1] == '\t')) ||
			(key && s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t')) {
			break
		}
	}
	return off + len(bytes.TrimRight(s[:i], " \t")), true
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

// flow renders v in flow style, on one line.
func (p *yamlPatcher) flow(v any) string {
	var parts []string
	switch v := v.(type) {
	case object:
		for _, m := range v {
			parts = append(parts, p.flowString(m.key)+": "+p.flow(m.val))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case []any:
		for _, e := range v {
			parts = append(parts, p.flow(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case string:
		return p.flowString(v)
	}
	return p.scalar(v, 0, 0)
}

// flowString renders s for a flow collection: plain when that is safe,
// else quoted.
func (p *yamlPatcher) flowString(s string) string {
	t := p.scalar(s, 0, 0)
	if t == s && !strings.ContainsAny(s, ",[]{}#:\"'") {
		return t
	}
	if strings.HasPrefix(t, "'") || (strings.HasPrefix(t, `"`) && !strings.Contains(t, "\n")) {
		return t
	}
	var b bytes.Buffer
	_ = writeString(&b, s)
	return string(document.EscapeForYAML(b.Bytes()))
}

// member writes m as a block mapping entry whose key starts at the current
// position, at column indent+1.
func (p *yamlPatcher) member(b *strings.Builder, m member, indent int) {
	b.WriteString(p.key(m.key))
	b.WriteByte(':')
	p.after(b, m.val, indent, "")
}

// after writes what follows "key:" for v, the value of a key at column
// indent+1, with comment on the first line.
func (p *yamlPatcher) after(b *strings.Builder, v any, indent int, comment string) {
	withComment := func() {
		if comment != "" {
			b.WriteString(" " + comment)
		}
	}
	switch {
	case !isEmpty(v) && isObject(v):
		withComment()
		b.WriteString("\n" + strings.Repeat(" ", indent+p.unit))
		p.block(b, v, indent+p.unit)
	case !isEmpty(v) && isArray(v):
		withComment()
		b.WriteString("\n" + strings.Repeat(" ", indent+p.seq))
		p.block(b, v, indent+p.seq)
	default:
		b.WriteString(" " + withLineComment(p.scalar(v, indent+p.unit, p.unit), comment))
	}
}

// withLineComment puts comment at the end of text's first line, where it
// cannot become part of a block scalar.
func withLineComment(text, comment string) string {
	if comment == "" {
		return text
	}
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		return text[:i] + " " + comment + text[i:]
	}
	return text + " " + comment
}

// item writes what follows the "-" of a sequence item at column indent+1.
func (p *yamlPatcher) item(b *strings.Builder, v any, indent int, comment string) {
	if isEmpty(v) || !(isObject(v) || isArray(v)) {
		b.WriteString(" " + withLineComment(p.scalar(v, indent+2, 2), comment))
		return
	}
	var item strings.Builder
	p.block(&item, v, indent+2)
	b.WriteString(" " + withLineComment(item.String(), comment))
}

func isObject(v any) bool { _, ok := v.(object); return ok }
func isArray(v any) bool  { _, ok := v.([]any); return ok }

// block writes v, a non-empty object or array, in block style; its first
// line starts at the current position, at column indent+1, and its other
// lines are indented by indent.
func (p *yamlPatcher) block(b *strings.Builder, v any, indent int) {
	pad := strings.Repeat(" ", indent)
	switch v := v.(type) {
	case object:
		for i, m := range v {
			if i > 0 {
				b.WriteString("\n" + pad)
			}
			p.member(b, m, indent)
		}
	case []any:
		for i, e := range v {
			if i > 0 {
				b.WriteString("\n" + pad)
			}
			b.WriteByte('-')
			p.item(b, e, indent, "")
		}
	}
}

// key renders a mapping key.
func (p *yamlPatcher) key(s string) string {
	t := p.scalar(s, 0, 0)
	if strings.Contains(t, "\n") || strings.HasPrefix(t, "|") || strings.HasPrefix(t, ">") {
		var b bytes.Buffer
		_ = writeString(&b, s)
		return string(document.EscapeForYAML(b.Bytes()))
	}
	return t
}

// scalar renders v, a scalar or an empty object or array; lines after the
// first (of a literal block) are indented by indent, which is rel more than
// the indentation of the block the scalar belongs to. Numbers are written as
// they are, so that no digit is lost to floating point; strings are quoted as
// cup's YAML encoding quotes them, so YAML 1.1 readers take them for strings.
func (p *yamlPatcher) scalar(v any, indent, rel int) string {
	switch v := v.(type) {
	case object:
		return "{}"
	case []any:
		return "[]"
	case json.Number:
		return string(v)
	case bool:
		return fmt.Sprint(v)
	case nil:
		return "null"
	case string:
		var b bytes.Buffer
		_ = writeString(&b, v)
		out, err := document.JSONToYAML(b.Bytes())
		if err != nil {
			return string(document.EscapeForYAML(b.Bytes()))
		}
		s := strings.TrimSuffix(string(out), "\n")
		lines := strings.Split(s, "\n")
		if len(lines) == 1 {
			return s
		}
		if !strings.HasPrefix(s, "|") {
			// Folded at 80 columns: one double-quoted line instead.
			return string(document.EscapeForYAML(b.Bytes()))
		}
		// An indentation indicator ("|2-", for text starting with a space)
		// counts from the enclosing block.
		if i := strings.IndexAny(lines[0], "123456789"); i >= 0 && rel > 0 && rel < 10 {
			lines[0] = lines[0][:i] + strconv.Itoa(rel) + lines[0][i+1:]
		}
		pad := strings.Repeat(" ", indent)
		for i := 1; i < len(lines); i++ {
			if t := strings.TrimPrefix(lines[i], "  "); t != "" {
				lines[i] = pad + t
			} else {
				lines[i] = ""
			}
		}
		return strings.Join(lines, "\n")
	}
	return "null"
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
