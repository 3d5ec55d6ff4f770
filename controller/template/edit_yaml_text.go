// The YAML patcher's view of the source text: lines, columns, offsets and
// where nodes end.

package template

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"

	yamlv3 "go.yaml.in/yaml/v3"
)

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
