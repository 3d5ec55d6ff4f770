package controller

import "encoding/binary"

// compactJSON appends src to dst compacted as json.Compact compacts it,
// and reports true, when src is one JSON value that json.Compact takes;
// otherwise it reports false and dst as it was, and the caller asks
// encoding/json, which says what is wrong. It is encoding/json's grammar
// (its nesting limit of 10,000 included) in one pass over plain bytes:
// specs are validated and compacted for every resource a listing decodes,
// and encoding/json's scanner, a function call per byte, made those passes
// a sixth of a first listing's CPU. FuzzCompactJSON checks it against
// json.Compact.
func compactJSON(dst, src []byte) ([]byte, bool) {
	s := jsonScan{src: src, dst: dst, keep: true}
	if !s.whole() {
		return dst, false
	}
	return append(s.dst, src[s.run:]...), true
}

// prefixJSON returns the length of the JSON value src starts with, as
// json.Valid would take it on its own, or false; and false for a value
// whose objects and arrays nest more than depth deep (at most
// maxJSONDepth).
func prefixJSON(src []byte, depth int) (int, bool) {
	s := jsonScan{src: src, depth: depth}
	ok := s.value()
	return s.i, ok
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

// jsonScan reads src at i; with keep, it appends what it read to dst but
// for whitespace outside strings, copying runs from run.
type jsonScan struct {
	src, dst []byte
	i, run   int
	keep     bool
	depth    int // the deepest nesting taken; 0 for maxJSONDepth
}

// space skips whitespace, leaving it out of the copy.
func (s *jsonScan) space() {
	j := s.i
	for j < len(s.src) {
		switch s.src[j] {
		case ' ', '\t', '\n', '\r':
			j++
			continue
		}
		break
	}
	if j > s.i {
		if s.keep {
			s.dst = append(s.dst, s.src[s.run:s.i]...)
		}
		s.i, s.run = j, j
	}
}

// whole reads the whole of src as one value, with whitespace around it.
func (s *jsonScan) whole() bool {
	if !s.value() {
		return false
	}
	s.space()
	return s.i == len(s.src)
}

// value reads one value, after whitespace, and stops after its last byte.
func (s *jsonScan) value() bool {
	var stackBuf [64]byte
	stack := stackBuf[:0] // the open '{' and '['
	depth := s.depth
	if depth <= 0 || depth > maxJSONDepth {
		depth = maxJSONDepth
	}
	s.space()
	for {
		// A value.
		if s.i >= len(s.src) {
			return false
		}
		switch c := s.src[s.i]; {
		case c == '{' || c == '[':
			if len(stack) == depth {
				return false
			}
			s.i++
			s.space()
			if s.i < len(s.src) && s.src[s.i] == c+2 { // '}' and ']' are 2 past
				s.i++
				break
			}
			stack = append(stack, c)
			if c == '{' && !s.key() {
				return false
			}
			continue
		case c == '"':
			if !s.str() {
				return false
			}
		case c == '-' || c >= '0' && c <= '9':
			if !s.number() {
				return false
			}
		case c == 't':
			if !s.literal("true") {
				return false
			}
		case c == 'f':
			if !s.literal("false") {
				return false
			}
		case c == 'n':
			if !s.literal("null") {
				return false
			}
		default:
			return false
		}
		// After a value: the next one, or the end of containers.
		for {
			if len(stack) == 0 {
				return true
			}
			s.space()
			if s.i >= len(s.src) {
				return false
			}
			top := stack[len(stack)-1]
			c := s.src[s.i]
			if c == top+2 {
				s.i++
				stack = stack[:len(stack)-1]
				continue
			}
			if c != ',' {
				return false
			}
			s.i++
			s.space()
			if top == '{' && !s.key() {
				return false
			}
			break
		}
	}
}

// key reads an object's key and the colon after it, and the whitespace
// before the value.
func (s *jsonScan) key() bool {
	if s.i >= len(s.src) || s.src[s.i] != '"' || !s.str() {
		return false
	}
	s.space()
	if s.i >= len(s.src) || s.src[s.i] != ':' {
		return false
	}
	s.i++
	s.space()
	return true
}

// str reads a string; s.i is at its opening quote.
func (s *jsonScan) str() bool {
	src := s.src
	for i := s.i + 1; i < len(src); i++ {
		// Eight bytes at a time while none of them ends the string,
		// starts an escape or is a control character: most of a spec's
		// bytes are in strings such as descriptions.
		for i+8 <= len(src) && plainWord(binary.LittleEndian.Uint64(src[i:])) {
			i += 8
		}
		if i == len(src) {
			break
		}
		switch c := src[i]; {
		case c == '"':
			s.i = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if i++; i >= len(src) {
				return false
			}
			switch src[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(src) || !isHex(src[i+1]) || !isHex(src[i+2]) || !isHex(src[i+3]) || !isHex(src[i+4]) {
					return false
				}
				i += 4
			default:
				return false
			}
		}
	}
	return false
}

// Words of eight bytes: ones has a 1 in each byte, highs the high bit of
// each byte, lows the other bits.
const ones, highs, lows = 0x0101010101010101, 0x8080808080808080, 0x7f7f7f7f7f7f7f7f

// plainWord reports whether no byte of w, eight bytes of a string, is
// '"', '\\' or below 0x20. Each test is exact per byte: adding to the
// low seven bits never carries into the next byte.
func plainWord(w uint64) bool {
	zero := func(x uint64) uint64 { return ^(((x & lows) + lows) | x) & highs } // bytes of x that are 0
	control := ^(((w & lows) + 0x60*ones) | w) & highs                          // bytes below 0x20
	return control|zero(w^'"'*ones)|zero(w^'\\'*ones) == 0
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *jsonScan) number() bool {
	src, i := s.src, s.i
	if src[i] == '-' {
		i++
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && src[i] >= '1' && src[i] <= '9':
		i = digits(src, i)
	default:
		return false
	}
	if i < len(src) && src[i] == '.' {
		j := digits(src, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		j := digits(src, i)
		if j == i {
			return false
		}
		i = j
	}
	s.i = i
	return true
}

func digits(src []byte, i int) int {
	for i < len(src) && src[i] >= '0' && src[i] <= '9' {
		i++
	}
	return i
}

func (s *jsonScan) literal(word string) bool {
	if len(s.src)-s.i < len(word) || string(s.src[s.i:s.i+len(word)]) != word {
		return false
	}
	s.i += len(word)
	return true
}
