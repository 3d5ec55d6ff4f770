package controller

// compactJSON appends src with its insignificant space left out, as
// json.Compact writes it, when src is one JSON value; ok is false for
// anything else, and for values nested deeper than maxCompactDepth, for
// json.Compact to write or word the error. json.Compact runs a state
// machine through a function value for every byte, which took a quarter of
// the flagfile module's list of 10,000 entries.
func compactJSON(dst, src []byte) (_ []byte, ok bool) {
	c := compacter{src: src, dst: dst}
	c.space()
	if !c.value(0) {
		return dst, false
	}
	c.space()
	if c.i != len(src) {
		return dst, false
	}
	return c.dst, true
}

// maxCompactDepth is the deepest nesting compactJSON reads.
const maxCompactDepth = 512

// A compacter reads src from i on, appending what it reads to dst.
type compacter struct {
	src, dst []byte
	i        int
}

func (c *compacter) space() {
	for c.i < len(c.src) {
		switch c.src[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// at reports whether the next byte is b.
func (c *compacter) at(b byte) bool { return c.i < len(c.src) && c.src[c.i] == b }

// take appends the next byte.
func (c *compacter) take() {
	c.dst = append(c.dst, c.src[c.i])
	c.i++
}

func (c *compacter) value(depth int) bool {
	if c.i >= len(c.src) || depth > maxCompactDepth {
		return false
	}
	switch c.src[c.i] {
	case '{':
		return c.container('}', depth+1)
	case '[':
		return c.container(']', depth+1)
	case '"':
		return c.str()
	case 't':
		return c.literal("true")
	case 'f':
		return c.literal("false")
	case 'n':
		return c.literal("null")
	}
	return c.number()
}

// container reads an object (end '}') or an array (end ']').
func (c *compacter) container(end byte, depth int) bool {
	c.take()
	c.space()
	if c.at(end) {
		c.take()
		return true
	}
	for {
		if end == '}' {
			if !c.at('"') || !c.str() {
				return false
			}
			c.space()
			if !c.at(':') {
				return false
			}
			c.take()
			c.space()
		}
		if !c.value(depth) {
			return false
		}
		c.space()
		switch {
		case c.at(','):
			c.take()
			c.space()
		case c.at(end):
			c.take()
			return true
		default:
			return false
		}
	}
}

// str reads a string, as it is written: escapes are kept, and bytes that
// are not UTF-8 too, as json.Compact keeps them.
func (c *compacter) str() bool {
	start := c.i
	for c.i++; c.i < len(c.src); {
		switch b := c.src[c.i]; {
		case b == '"':
			c.i++
			c.dst = append(c.dst, c.src[start:c.i]...)
			return true
		case b < 0x20:
			return false
		case b == '\\':
			if c.i+1 >= len(c.src) {
				return false
			}
			switch c.src[c.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				c.i += 2
			case 'u':
				if c.i+6 > len(c.src) {
					return false
				}
				for _, h := range c.src[c.i+2 : c.i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				c.i += 6
			default:
				return false
			}
		default:
			c.i++
		}
	}
	return false
}

func (c *compacter) literal(word string) bool {
	if len(c.src)-c.i < len(word) || string(c.src[c.i:c.i+len(word)]) != word {
		return false
	}
	c.dst = append(c.dst, word...)
	c.i += len(word)
	return true
}

// number reads -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func (c *compacter) number() bool {
	start := c.i
	if c.at('-') {
		c.i++
	}
	switch {
	case c.at('0'):
		c.i++
	case c.i < len(c.src) && '1' <= c.src[c.i] && c.src[c.i] <= '9':
		c.digits()
	default:
		return false
	}
	if c.at('.') {
		c.i++
		if !c.digits() {
			return false
		}
	}
	if c.at('e') || c.at('E') {
		c.i++
		if c.at('+') || c.at('-') {
			c.i++
		}
		if !c.digits() {
			return false
		}
	}
	c.dst = append(c.dst, c.src[start:c.i]...)
	return true
}

// digits skips digits, and reports whether there was one.
func (c *compacter) digits() bool {
	start := c.i
	for c.i < len(c.src) && '0' <= c.src[c.i] && c.src[c.i] <= '9' {
		c.i++
	}
	return c.i > start
}
