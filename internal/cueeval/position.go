package cueeval

import (
	"encoding/json"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
	cueyaml "cuelang.org/go/encoding/yaml"
	"go.yaml.in/yaml/v3"
)

// fileField returns the expression of the dotted field (e.g. "spec.values")
// in a YAML or JSON file as CUE's YAML decoder reads it, with positions in
// the file named name, or nil when the file does not parse or has no such
// field.
func fileField(name string, file []byte, field string) ast.Expr {
	f, err := cueyaml.Extract(name, file)
	if err != nil {
		return nil
	}
	decls := f.Decls
	sels := strings.Split(field, ".")
	for i, sel := range sels {
		var x ast.Expr
		for _, d := range decls {
			if fd, ok := d.(*ast.Field); ok {
				if label, _, err := ast.LabelName(fd.Label); err == nil && label == sel {
					x = fd.Value
				}
			}
		}
		if x == nil {
			return nil
		}
		if i == len(sels)-1 {
			return x
		}
		s, ok := x.(*ast.StructLit)
		if !ok {
			return nil
		}
		decls = s.Elts
	}
	return nil
}

// rebase returns the expression x, read from a layer's file, holding the
// data v instead (as decoded with json.Decoder.UseNumber), each scalar of v
// at the position of the scalar of x it replaces. It reports false when x
// and v differ in shape: other keys, lists of other lengths, a struct or a
// list where the other has a scalar. The scalars themselves may differ:
// the resource's reader may see a number or a YAML 1.1 boolean otherwise
// than CUE's YAML decoder, and v is what is evaluated.
func rebase(x ast.Expr, v any) (ast.Expr, bool) {
	switch v := v.(type) {
	case map[string]any:
		s, ok := x.(*ast.StructLit)
		if !ok || len(s.Elts) != len(v) {
			return nil, false
		}
		out := *s
		out.Elts = make([]ast.Decl, len(s.Elts))
		seen := make(map[string]bool, len(v))
		for i, d := range s.Elts {
			f, ok := d.(*ast.Field)
			if !ok {
				return nil, false
			}
			label, _, err := ast.LabelName(f.Label)
			if err != nil || seen[label] {
				return nil, false
			}
			seen[label] = true
			w, ok := v[label]
			if !ok {
				return nil, false
			}
			nf := *f
			if nf.Value, ok = rebase(f.Value, w); !ok {
				return nil, false
			}
			out.Elts[i] = &nf
		}
		return &out, true
	case []any:
		l, ok := x.(*ast.ListLit)
		if !ok || len(l.Elts) != len(v) {
			return nil, false
		}
		out := *l
		out.Elts = make([]ast.Expr, len(l.Elts))
		for i, e := range l.Elts {
			if out.Elts[i], ok = rebase(e, v[i]); !ok {
				return nil, false
			}
		}
		return &out, true
	}
	switch x.(type) {
	case *ast.StructLit, *ast.ListLit:
		return nil, false
	}
	pos := x.Pos()
	var lit *ast.BasicLit
	switch v := v.(type) {
	case nil:
		lit = ast.NewNull()
	case bool:
		lit = ast.NewBool(v)
	case string:
		lit = ast.NewString(v)
	case json.Number:
		n := string(v)
		neg := strings.HasPrefix(n, "-")
		n = strings.TrimPrefix(n, "-")
		kind := token.INT
		if strings.ContainsAny(n, ".eE") {
			kind = token.FLOAT
		}
		lit = ast.NewLit(kind, n)
		if neg {
			lit.ValuePos = pos
			return &ast.UnaryExpr{Op: token.SUB, OpPos: pos, X: lit}, true
		}
	default:
		return nil, false
	}
	lit.ValuePos = pos
	return lit, true
}

// placement is where a string's content sits in a file: its first byte at
// line and column (counting from 1, the column in bytes), and each
// following non-empty line after indent spaces.
type placement struct {
	line, col, indent int
}

// placeString finds the string of the dotted field in a YAML or JSON file
// and returns where its content sits, when that content is content and can
// be placed exactly: a literal block scalar (`|`), or a plain or quoted
// scalar on one line without escapes. It reports false otherwise (a folded
// block, a string over several lines or with escapes, another content).
func placeString(file []byte, field, content string) (placement, bool) {
	var doc yaml.Node
	if err := yaml.Unmarshal(file, &doc); err != nil {
		return placement{}, false
	}
	n := &doc
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	for sel := range strings.SplitSeq(field, ".") {
		if n.Kind != yaml.MappingNode {
			return placement{}, false
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == sel {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return placement{}, false
		}
		n = next
	}
	if n.Kind != yaml.ScalarNode || n.Value != content || n.Line < 1 || n.Column < 1 {
		return placement{}, false
	}
	lines := strings.Split(string(file), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	switch n.Style {
	case yaml.LiteralStyle:
		return placeBlock(lines, n.Line, content)
	case 0, yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		if n.Line > len(lines) || strings.Contains(content, "\n") {
			return placement{}, false
		}
		line := lines[n.Line-1]
		start, ok := byteIndex(line, n.Column-1)
		if !ok {
			return placement{}, false
		}
		quote := byte(0)
		switch n.Style {
		case yaml.DoubleQuotedStyle:
			quote = '"'
		case yaml.SingleQuotedStyle:
			quote = '\''
		}
		if quote != 0 {
			if start >= len(line) || line[start] != quote {
				return placement{}, false
			}
			start++
		}
		// The content must be there verbatim: no escape, and for a quoted
		// scalar, the closing quote right after it.
		end := start + len(content)
		if end > len(line) || line[start:end] != content {
			return placement{}, false
		}
		if quote != 0 && (end >= len(line) || line[end] != quote) {
			return placement{}, false
		}
		return placement{line: n.Line, col: start + 1}, true
	}
	return placement{}, false
}

// placeBlock places the content of a literal block scalar whose header
// (`|`) is on line header (counting from 1) of lines: its content starts
// on the next line, each line indented alike.
func placeBlock(lines []string, header int, content string) (placement, bool) {
	content = strings.TrimRight(content, "\n")
	cl := strings.Split(content, "\n")
	if header+len(cl) > len(lines) {
		return placement{}, false
	}
	indent := -1
	for k, c := range cl {
		if c != "" {
			fl := lines[header+k]
			indent = len(fl) - len(c)
			if indent < 0 || !strings.HasSuffix(fl, c) {
				return placement{}, false
			}
			break
		}
	}
	if indent < 0 {
		return placement{}, false
	}
	prefix := strings.Repeat(" ", indent)
	for k, c := range cl {
		fl := lines[header+k]
		if c == "" {
			if strings.TrimLeft(fl, " ") != "" {
				return placement{}, false
			}
		} else if fl != prefix+c {
			return placement{}, false
		}
	}
	return placement{line: header + 1, col: indent + 1, indent: indent}, true
}

// byteIndex returns the byte offset of the rune at index i of s.
func byteIndex(s string, i int) (int, bool) {
	for off := range s {
		if i == 0 {
			return off, true
		}
		i--
	}
	return len(s), i == 0
}

// pad returns content placed as p says: preceded by empty lines and spaces
// so that its first byte is at p's line and column, and with each
// following non-empty line indented by p.indent spaces. CUE's whitespace
// is insignificant except in multi-line strings, whose lines all keep the
// indentation of their closing quotes, so the result means the same.
func (p placement) pad(content string) string {
	var b strings.Builder
	b.Grow(p.line + p.col + len(content) + strings.Count(content, "\n")*p.indent)
	b.WriteString(strings.Repeat("\n", p.line-1))
	b.WriteString(strings.Repeat(" ", p.col-1))
	for i, l := range strings.Split(content, "\n") {
		if i > 0 {
			b.WriteByte('\n')
			if l != "" {
				b.WriteString(strings.Repeat(" ", p.indent))
			}
		}
		b.WriteString(l)
	}
	return b.String()
}
