package document

import (
	"strconv"
	"strings"
)

// Locator finds the line of a field in a document.
type Locator interface {
	// Line returns the 1-based line of the file that holds the field at
	// path, or the nearest enclosing field it can find.
	Line(path string) int
}

var (
	_ Locator = (*YAMLLocator)(nil)
	_ Locator = (*JSONLocator)(nil)
)

// YAMLLocator finds the lines of fields in a YAML document written in block
// style. It reads indentation only, so it finds a field inside a flow
// collection ({...} or [...]) at the line the collection starts on, which
// is close enough for a message.
type YAMLLocator struct {
	lines []string
	first int // the file's line number of lines[0]
}

// Locator returns a Locator for the document's fields.
func (d YAMLDoc) Locator() *YAMLLocator {
	return &YAMLLocator{lines: strings.Split(string(d.Data), "\n"), first: d.Line}
}

// content returns the indentation of a line and whether it holds anything
// but blanks and a comment.
func content(line string) (indent int, ok bool) {
	trimmed := strings.TrimLeft(line, " ")
	if trimmed == "" || trimmed[0] == '#' || strings.TrimSpace(trimmed) == "" {
		return 0, false
	}
	return len(line) - len(trimmed), true
}

// isItem reports whether a line, without its indentation, is a block
// sequence's item.
func isItem(s string) bool {
	return s == "-" || strings.HasPrefix(s, "- ") || strings.HasPrefix(s, "-\t")
}

// keyValue reports whether a line, without its indentation, is the mapping
// entry key, and returns what follows the colon, without a comment.
func keyValue(s, key string) (string, bool) {
	for _, k := range []string{key, strconv.Quote(key), "'" + key + "'"} {
		rest, ok := strings.CutPrefix(s, k)
		if !ok {
			continue
		}
		rest = strings.TrimLeft(rest, " \t")
		if rest, ok = strings.CutPrefix(rest, ":"); !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '\r') {
			continue
		}
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(rest, "#") {
			rest = ""
		}
		return rest, true
	}
	return "", false
}

// Line returns the file's line of the field at path, or of the nearest
// enclosing field it can find; the document's first line of content for
// "".
func (l *YAMLLocator) Line(path string) int {
	lines := append([]string(nil), l.lines...) // items' dashes get blanked
	lo, hi := 0, len(lines)
	best := -1
	for i := range lines {
		if _, ok := content(lines[i]); ok {
			best = i
			break
		}
	}
	if best < 0 {
		return l.first
	}
	// firstContent returns the first line with content in [lo, hi).
	firstContent := func() (int, int) {
		for i := lo; i < hi; i++ {
			if ind, ok := content(lines[i]); ok {
				return i, ind
			}
		}
		return -1, 0
	}
	for _, seg := range splitPath(path) {
		start, indent := firstContent()
		if start < 0 {
			break
		}
		found := -1
		if seg.key != "" {
			var value string
			for i := start; i < hi && found < 0; i++ {
				if ind, ok := content(lines[i]); ok && ind == indent {
					if v, ok := keyValue(lines[i][ind:], seg.key); ok {
						found, value = i, v
					}
				}
			}
			if found < 0 {
				break
			}
			best = found
			if value != "" && !strings.HasPrefix(value, "&") && !strings.HasPrefix(value, "!") {
				break // a scalar or a flow collection: nothing below is on a line of its own
			}
			// The value: deeper lines, and a block sequence's items, which
			// may sit at the key's own indentation.
			lo, hi = found+1, endOf(lines, found+1, hi, indent, true)
		} else {
			if !isItem(lines[start][indent:]) {
				break
			}
			n := 0
			for i := start; i < hi; i++ {
				if ind, ok := content(lines[i]); ok && ind == indent && isItem(lines[i][ind:]) {
					if n == seg.index {
						found = i
						break
					}
					n++
				}
			}
			if found < 0 {
				break
			}
			best = found
			// The item's content starts after the dash, as if indented.
			b := []byte(lines[found])
			b[indent] = ' '
			lines[found] = string(b)
			lo, hi = found, endOf(lines, found+1, hi, indent, false)
		}
	}
	return l.first + best
}

// endOf returns the end of a block that starts at line from and holds the
// lines indented deeper than indent (and, with items, the sequence items at
// indent), up to hi.
func endOf(lines []string, from, hi, indent int, items bool) int {
	for i := from; i < hi; i++ {
		ind, ok := content(lines[i])
		if !ok || ind > indent || (items && ind == indent && isItem(lines[i][ind:])) {
			continue
		}
		return i
	}
	return hi
}
