// How the YAML patcher writes new text: values in flow or block style, keys
// and scalars.

package template

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/cup-dev/cup/internal/document"
)

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
