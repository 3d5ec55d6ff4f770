package main

import (
	"bytes"
	"unicode/utf8"

	"github.com/cup-dev/cup/sdk/go/controller"
)

// A list reads most entries without yaml.v3, whose parser costs about a
// millisecond an entry of 700 bytes in a module (yaml.v3 builds a tree of
// nodes, token by token, and Go's WebAssembly runs such code fifteen to
// twenty times slower than the same code built for the machine): a list of
// 10,000 such entries took ten seconds, past a call's default time limit.
//
// A fastParser reads the entries written in the YAML most files use, line
// by line: block mappings and sequences, with plain, quoted and flow
// scalars on one line each, and writes the spec's JSON as it goes, with few
// allocations (each costs a module dearly). It declines the rest, whatever
// may be read in more than one way or is an error: the entry is then parsed
// with yaml.v3, which stays the authority on what a file means and the
// author of every error. FuzzFastEntry checks that an entry a fastParser
// reads, yaml.v3 reads to the same resource.

// fastMaxDepth is the deepest nesting a fastParser reads.
const fastMaxDepth = 64

// A fastParser reads entries one after another, reusing its buffers.
type fastParser struct {
	lines []fastLine
	i     int      // the next line to read
	json  []byte   // the spec being written
	keys  [][]byte // the keys of the mappings being read, innermost last
}

// A fastLine is a line of an entry that is neither blank nor a comment.
type fastLine struct {
	indent int
	text   []byte // from the first character that is not a space
}

// fastEntry reads the entry called name whose lines, from the line of its
// name on, are data; ok is false when it declines.
func fastEntry(kind, namespace, name string, data []byte) (r *controller.Resource, ok bool) {
	var p fastParser
	return p.entry(kind, namespace, name, data)
}

// entry is fastEntry with p's buffers.
func (p *fastParser) entry(kind, namespace, name string, data []byte) (r *controller.Resource, ok bool) {
	if !p.split(data) || p.lines[0].indent != 0 {
		return nil, false
	}
	key, rest, ok := fastKey(p.lines[0].text)
	if !ok || string(key) != name {
		return nil, false
	}
	r = &controller.Resource{Kind: kind, Metadata: controller.Metadata{Namespace: namespace, Name: name}}
	switch {
	case bytes.Equal(cutComment(rest), []byte("{}")):
		return r, len(p.lines) == 1
	case len(rest) > 0:
		return nil, false
	case len(p.lines) == 1:
		return r, true
	}
	// The fields, at the column of the first.
	indent := p.lines[1].indent
	var seen [3]bool // labels, annotations, spec
	for p.i = 1; p.i < len(p.lines); {
		l := p.lines[p.i]
		if l.indent != indent {
			return nil, false
		}
		key, rest, ok := fastKey(l.text)
		if !ok {
			return nil, false
		}
		p.i++
		var field int
		switch string(key) {
		case "labels":
			field = 0
			r.Metadata.Labels, ok = p.strings(rest, indent)
		case "annotations":
			field = 1
			r.Metadata.Annotations, ok = p.strings(rest, indent)
		case "spec":
			field = 2
			r.Spec, ok = p.spec(rest, indent)
		default:
			return nil, false // an error, which yaml.v3's path words
		}
		if !ok || seen[field] {
			return nil, false
		}
		seen[field] = true
	}
	return r, true
}

// split sets p.lines to the lines of data that are neither blank nor
// comments. It declines data with tabs, carriage returns, other control
// characters, or characters yaml.v3 does not take as printable or takes
// as line breaks (see printable).
func (p *fastParser) split(data []byte) bool {
	p.lines, p.i = p.lines[:0], 0
	indent, text := 0, -1
	for j := 0; j < len(data); j++ {
		switch c := data[j]; {
		case c == '\n':
			if text >= 0 && data[text] != '#' {
				p.lines = append(p.lines, fastLine{indent: indent, text: data[text:j]})
			}
			indent, text = 0, -1
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(data[j:])
			if size == 1 || !printable(r) {
				return false
			}
			if text < 0 {
				text = j
			}
			j += size - 1
		case c < ' ' || c == 0x7f:
			return false
		case text < 0 && c == ' ':
			indent++
		case text < 0:
			text = j
		}
	}
	if text >= 0 && data[text] != '#' {
		p.lines = append(p.lines, fastLine{indent: indent, text: data[text:]})
	}
	return len(p.lines) > 0
}

// printable reports whether r, not ASCII, is a character a fastParser
// reads: one yaml.v3 takes as printable (U+00A0 to U+D7FF and U+E000 to
// U+FFFD but U+FEFF; not U+10000 and above), but for U+2028 and U+2029,
// which it takes as line breaks. JSON writes them all as they are.
func printable(r rune) bool {
	return r >= 0xA0 && r <= 0xD7FF && r != 0x2028 && r != 0x2029 || r >= 0xE000 && r <= 0xFFFD && r != 0xFEFF
}

// strings reads labels or annotations as stringMap does: null, {}, or a
// block mapping of scalars. rest is what follows the field's key on its
// line; indent is the key's column.
func (p *fastParser) strings(rest []byte, indent int) (map[string]string, bool) {
	if len(rest) > 0 {
		switch {
		case bytes.Equal(cutComment(rest), []byte("{}")):
			return map[string]string{}, p.ends(indent)
		case nullWord(cutComment(rest)):
			return nil, p.ends(indent)
		}
		return nil, false
	}
	if p.i == len(p.lines) || p.lines[p.i].indent <= indent {
		return nil, true // null
	}
	at := p.lines[p.i].indent
	m := make(map[string]string)
	for ; p.i < len(p.lines) && p.lines[p.i].indent >= at; p.i++ {
		l := p.lines[p.i]
		key, rest, ok := fastKey(l.text)
		if !ok || l.indent != at {
			return nil, false
		}
		if _, dup := m[string(key)]; dup {
			return nil, false
		}
		var v []byte
		if len(rest) > 0 {
			var quoted bool
			if v, quoted, ok = scalar(rest); !ok {
				return nil, false
			}
			if !quoted && nullWord(v) {
				v = nil
			}
		}
		if p.i+1 < len(p.lines) && p.lines[p.i+1].indent > at {
			return nil, false // a block below a key, or a plain scalar going on
		}
		m[string(key)] = string(v)
	}
	return m, true
}

// ends reports whether the value on the line of a key at column indent ends
// it: no line below is indented further.
func (p *fastParser) ends(indent int) bool {
	return p.i == len(p.lines) || p.lines[p.i].indent <= indent
}

// spec reads the spec as specJSON does: null or a mapping.
func (p *fastParser) spec(rest []byte, indent int) ([]byte, bool) {
	p.json, p.keys = p.json[:0], p.keys[:0]
	switch {
	case len(rest) == 0 && p.ends(indent):
		return nil, true
	case len(rest) == 0:
		if p.lines[p.i].indent <= indent || isDash(p.lines[p.i].text) {
			return nil, false
		}
		if !p.mapping(p.lines[p.i].indent, 1) {
			return nil, false
		}
	case rest[0] == '{':
		if !p.inline(rest, indent, 1) {
			return nil, false
		}
	case nullWord(cutComment(rest)):
		return nil, p.ends(indent)
	default:
		return nil, false
	}
	return bytes.Clone(p.json), true
}

// value writes the value of a key or dash at column indent, rest being what
// follows it on its line. Under a key (inMap), a sequence may begin at the
// key's column.
func (p *fastParser) value(rest []byte, indent, depth int, inMap bool) bool {
	if len(rest) > 0 {
		return p.inline(rest, indent, depth)
	}
	if p.i == len(p.lines) {
		p.json = append(p.json, "null"...)
		return true
	}
	switch l := p.lines[p.i]; {
	case l.indent > indent && isDash(l.text), inMap && l.indent == indent && isDash(l.text):
		return p.sequence(l.indent, depth+1)
	case l.indent > indent:
		return p.mapping(l.indent, depth+1)
	}
	p.json = append(p.json, "null"...)
	return true
}

// mapping writes a block mapping whose keys are at column indent.
func (p *fastParser) mapping(indent, depth int) bool {
	if depth > fastMaxDepth {
		return false
	}
	mark := len(p.keys)
	p.json = append(p.json, '{')
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if l.indent < indent {
			break
		}
		key, rest, ok := fastKey(l.text)
		if l.indent > indent || !ok || !p.key(mark, key) {
			return false
		}
		p.i++
		if !p.value(rest, indent, depth, true) {
			return false
		}
	}
	p.keys = p.keys[:mark]
	p.json = append(p.json, '}')
	return true
}

// fastMaxKeys is the most keys a fastParser reads in one mapping: it finds
// a key twice by comparing each with those before, which yaml.v3's path does
// with a map.
const fastMaxKeys = 64

// key writes key and a colon, checking that the mapping whose keys begin at
// p.keys[mark] has it once, and a comma before when it is not the first.
func (p *fastParser) key(mark int, key []byte) bool {
	if len(p.keys)-mark == fastMaxKeys {
		return false
	}
	for _, k := range p.keys[mark:] {
		if bytes.Equal(k, key) {
			return false // an error, which yaml.v3's path words
		}
	}
	if len(p.keys) > mark {
		p.json = append(p.json, ',')
	}
	p.keys = append(p.keys, key)
	p.json = appendString(p.json, key)
	p.json = append(p.json, ':')
	return true
}

// sequence writes a block sequence whose dashes are at column indent.
func (p *fastParser) sequence(indent, depth int) bool {
	if depth > fastMaxDepth {
		return false
	}
	p.json = append(p.json, '[')
	for n := 0; p.i < len(p.lines); n++ {
		l := p.lines[p.i]
		if l.indent < indent || l.indent == indent && !isDash(l.text) {
			break
		}
		if l.indent > indent {
			return false
		}
		if n > 0 {
			p.json = append(p.json, ',')
		}
		rest := l.text[1:]
		spaces := 0
		for spaces < len(rest) && rest[spaces] == ' ' {
			spaces++
		}
		rest = rest[spaces:]
		var ok bool
		switch {
		case len(rest) == 0 || rest[0] == '#':
			p.i++
			ok = p.value(nil, indent, depth, false)
		case isDash(rest):
			return false // "- - a"
		default:
			if _, _, isKey := fastKey(rest); isKey {
				// "- key: value": a mapping whose keys are at the column
				// of this one.
				p.lines[p.i] = fastLine{indent: indent + 1 + spaces, text: rest}
				ok = p.mapping(indent+1+spaces, depth+1)
			} else {
				p.i++
				ok = p.inline(rest, indent, depth)
			}
		}
		if !ok {
			return false
		}
	}
	p.json = append(p.json, ']')
	return true
}

// inline writes the value after a key or dash at column indent, text: the
// rest of the line.
func (p *fastParser) inline(text []byte, indent, depth int) bool {
	// A value on the line ends the node: more indented lines would go on
	// with a plain scalar, or be an error.
	if !p.ends(indent) {
		return false
	}
	if text[0] != '[' && text[0] != '{' {
		v, quoted, ok := scalar(text)
		return ok && p.scalar(v, quoted)
	}
	text, ok := p.flow(text, depth+1)
	// After the closing bracket: the end of the line, or spaces and a
	// comment.
	if !ok || len(text) > 0 && text[0] != ' ' {
		return false
	}
	text = bytes.TrimLeft(text, " ")
	return len(text) == 0 || text[0] == '#'
}

// scalar reads the scalar that is the rest of a line, text: quoted without
// escapes, or plain; either then a comment after a space.
func scalar(text []byte) (v []byte, quoted, ok bool) {
	if text[0] == '"' || text[0] == '\'' {
		v, rest, ok := quotedScalar(text)
		if !ok || len(rest) > 0 && rest[0] != ' ' {
			return nil, false, false
		}
		rest = bytes.TrimLeft(rest, " ")
		return v, true, len(rest) == 0 || rest[0] == '#'
	}
	v = cutComment(text)
	if !plainStart(v) || bytes.Contains(v, []byte(": ")) || v[len(v)-1] == ':' {
		return nil, false, false
	}
	return v, false, true
}

// flow writes the flow sequence or mapping at the start of text, which
// must close on this line, and returns the text after it.
func (p *fastParser) flow(text []byte, depth int) ([]byte, bool) {
	if depth > fastMaxDepth {
		return nil, false
	}
	closer, mark := byte(']'), len(p.keys)
	if text[0] == '{' {
		closer = '}'
	}
	p.json = append(p.json, text[0])
	text = bytes.TrimLeft(text[1:], " ")
	for n := 0; ; n++ {
		if len(text) == 0 {
			return nil, false // not closed on this line
		}
		if text[0] == closer {
			break
		}
		if n > 0 {
			if text[0] != ',' {
				return nil, false
			}
			if text = bytes.TrimLeft(text[1:], " "); len(text) == 0 || text[0] == closer || text[0] == ',' {
				return nil, false // a trailing or doubled comma
			}
			if closer == ']' {
				p.json = append(p.json, ',')
			}
		}
		if closer == '}' {
			end := bytes.IndexByte(text, ':')
			if end <= 0 || end+1 == len(text) || text[end+1] != ' ' || !keyText(text[:end]) || !p.key(mark, text[:end]) {
				return nil, false
			}
			if text = bytes.TrimLeft(text[end+1:], " "); len(text) == 0 {
				return nil, false
			}
		}
		var ok bool
		switch text[0] {
		case '[', '{':
			text, ok = p.flow(text, depth+1)
		case '"', '\'':
			var v []byte
			v, text, ok = quotedScalar(text)
			ok = ok && p.scalar(v, true)
		default:
			end := 0
			for end < len(text) && flowPlain(text[end]) {
				end++
			}
			v := bytes.TrimRight(text[:end], " ")
			ok = plainStart(v) && p.scalar(v, false)
			text = text[end:]
		}
		if !ok {
			return nil, false
		}
		text = bytes.TrimLeft(text, " ")
	}
	p.keys = p.keys[:mark]
	p.json = append(p.json, closer)
	return afterClose(text[1:])
}

// flowPlain reports whether c may be in a plain scalar in a flow
// collection, as a fastParser reads them.
func flowPlain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= utf8.RuneSelf || bytes.IndexByte([]byte(" _./@+-~"), c) >= 0
}

// afterClose returns the text after a closing quote or bracket, which must
// be the end of the line, a space, or what closes or goes on a flow
// collection.
func afterClose(text []byte) ([]byte, bool) {
	if len(text) > 0 && text[0] != ' ' && text[0] != ',' && text[0] != ']' && text[0] != '}' {
		return nil, false
	}
	return text, true
}

// quotedScalar reads a quoted scalar without escapes at the start of text.
func quotedScalar(text []byte) (v, rest []byte, ok bool) {
	q := text[0]
	end := bytes.IndexByte(text[1:], q)
	if end < 0 {
		return nil, nil, false
	}
	v = text[1 : 1+end]
	if q == '"' && bytes.IndexByte(v, '\\') >= 0 {
		return nil, nil, false
	}
	rest, ok = afterClose(text[2+end:])
	if !ok || q == '\'' && len(rest) > 0 && rest[0] == '\'' {
		return nil, nil, false
	}
	return v, rest, true
}

// scalar writes the JSON of a scalar as writeScalar does: a quoted one is a
// string; a plain one true or false, null, a number of the forms
// simpleNumber takes as written, or text that cannot be anything but a
// string. It declines the rest.
func (p *fastParser) scalar(v []byte, quoted bool) bool {
	if quoted {
		p.json = appendString(p.json, v)
		return true
	}
	switch string(v) {
	case "true", "True", "TRUE":
		p.json = append(p.json, "true"...)
		return true
	case "false", "False", "FALSE":
		p.json = append(p.json, "false"...)
		return true
	}
	if nullWord(v) {
		p.json = append(p.json, "null"...)
		return true
	}
	if c := v[0]; c >= '0' && c <= '9' || c == '-' || c == '.' {
		if !simpleNumber(v) {
			return false
		}
		p.json = append(p.json, v...)
		return true
	}
	p.json = appendString(p.json, v)
	return true
}

// appendString appends s, text split has checked, as writeString writes it:
// only quotes and backslashes need escapes.
func appendString(b, s []byte) []byte {
	b = append(b, '"')
	for {
		i := 0
		for i < len(s) && s[i] != '"' && s[i] != '\\' {
			i++
		}
		b = append(b, s[:i]...)
		if i == len(s) {
			return append(b, '"')
		}
		b = append(b, '\\', s[i])
		s = s[i+1:]
	}
}

// cutComment returns text without a comment (" #" on) and trailing spaces.
func cutComment(text []byte) []byte {
	if i := bytes.Index(text, []byte(" #")); i >= 0 {
		text = text[:i]
	}
	return bytes.TrimRight(text, " ")
}

// nullWord reports whether a plain scalar is null.
func nullWord(s []byte) bool {
	switch string(s) {
	case "~", "null", "Null", "NULL":
		return true
	}
	return false
}

// plainStart reports whether text is a plain scalar a fastParser reads:
// not empty, and beginning with a letter, a digit, an underscore, a slash
// or a character beyond ASCII, or a minus or dot before a digit, or ~
// alone.
func plainStart(text []byte) bool {
	if len(text) == 0 {
		return false
	}
	switch c := text[0]; {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '/', c >= utf8.RuneSelf:
		return true
	case (c == '-' || c == '.') && len(text) > 1 && text[1] >= '0' && text[1] <= '9':
		return true
	}
	return len(text) == 1 && text[0] == '~'
}

// isDash reports whether a line's text begins a sequence item.
func isDash(text []byte) bool { return text[0] == '-' && (len(text) == 1 || text[1] == ' ') }

// fastKey reads "key:" at the start of text: a key a fastParser reads, then
// a colon and the end of the line, a space or a comment. rest is what
// follows, without a comment; it is empty for a block below the key.
func fastKey(text []byte) (key, rest []byte, ok bool) {
	i := bytes.IndexByte(text, ':')
	if i <= 0 || !keyText(text[:i]) {
		return nil, nil, false
	}
	rest = text[i+1:]
	if len(rest) > 0 && rest[0] != ' ' {
		return nil, nil, false
	}
	rest = bytes.TrimLeft(rest, " ")
	if len(rest) > 0 && rest[0] == '#' {
		rest = nil
	}
	return text[:i], rest, true
}

// keyText reports whether s is a key a fastParser reads: up to 256
// letters, digits and _ . / - after a letter, digit or underscore, and not
// a null. (YAML allows a key of up to 1,024 characters without a "?"
// before it.)
func keyText(s []byte) bool {
	if len(s) > 256 {
		return false
	}
	if c := s[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '/' || c == '-') {
			return false
		}
	}
	return !nullWord(s)
}

// simpleNumber reports whether s is an integer of up to 18 digits or a
// decimal of up to 15 digits on either side of its point, without leading
// zeros: numbers yaml.v3 reads as an int or a float, that JSON writes alike.
func simpleNumber(s []byte) bool {
	if s[0] == '-' {
		s = s[1:]
	}
	whole, frac, point := bytes.Cut(s, []byte("."))
	if !digits(whole, 18) || len(whole) > 1 && whole[0] == '0' {
		return false
	}
	return !point || len(whole) <= 15 && digits(frac, 15)
}

func digits(s []byte, most int) bool {
	if len(s) == 0 || len(s) > most {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
