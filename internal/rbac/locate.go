package rbac

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Field paths name a value in a document the way messages do:
// "metadata.name", "rules[0].verbs[1]"; "" is the whole document.

// pathSegment is one step of a field path: an object's key, or an array's
// index when key is empty.
type pathSegment struct {
	key   string
	index int
}

// splitPath splits a field path into its segments.
func splitPath(path string) []pathSegment {
	var segs []pathSegment
	for part := range strings.SplitSeq(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			segs = append(segs, pathSegment{key: key})
		}
		for rest != "" {
			n, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(n)
			if !ok || err != nil {
				return segs
			}
			segs = append(segs, pathSegment{index: i})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return segs
}

// parentPath drops the last segment of a field path.
func parentPath(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

// joinPath appends an object's key to a field path.
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// indexPath appends an array's index to a field path.
func indexPath(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// yamlDoc is one document of a YAML stream.
type yamlDoc struct {
	data []byte
	// line is the line of the file the document's data starts on.
	line int
}

// splitYAML splits a YAML stream at "---" lines. Text after "---" on the
// same line belongs to the following document. Blank or comment-only text
// before the first "---" is not a document.
func splitYAML(data []byte) []yamlDoc {
	var docs []yamlDoc
	cur := yamlDoc{line: 1}
	prelude := true
	flush := func() {
		if !prelude || !blankYAML(cur.data) {
			docs = append(docs, cur)
		}
		prelude = false
	}
	lineNo := 0
	for rest := data; len(rest) > 0; {
		lineNo++
		end := bytes.IndexByte(rest, '\n') + 1
		if end == 0 {
			end = len(rest)
		}
		line := rest[:end]
		rest = rest[end:]
		if bytes.HasPrefix(line, []byte("---")) && (len(line) == 3 || strings.ContainsRune(" \t\r\n", rune(line[3]))) {
			flush()
			cur = yamlDoc{line: lineNo, data: append([]byte(nil), line[3:]...)}
			continue
		}
		cur.data = append(cur.data, line...)
	}
	flush()
	return docs
}

// blankYAML reports whether data holds only blank lines, comments and
// directives.
func blankYAML(data []byte) bool {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && line[0] != '%' {
			return false
		}
	}
	return true
}

// yamlLocator finds the lines of fields in a YAML document written in block
// style, the way policies are written. It reads indentation only, so it
// finds a field inside a flow collection ({...} or [...]) at the line the
// collection starts on, which is close enough for a message.
type yamlLocator struct {
	lines []string
	first int // the file's line number of lines[0]
}

func newYAMLLocator(doc yamlDoc) *yamlLocator {
	return &yamlLocator{lines: strings.Split(string(doc.data), "\n"), first: doc.line}
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

// line returns the file's line of the field at path, or of the nearest
// enclosing field it can find; the document's first line of content for "".
func (l *yamlLocator) line(path string) int {
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

// jsonLocator knows the line of every field of a JSON text.
type jsonLocator struct {
	lines map[string]int
	// prefix is prepended to paths: "[i]" for the i-th resource of an array.
	prefix string
}

func (l *jsonLocator) line(path string) int {
	p := l.prefix + path
	if l.prefix != "" && path != "" && path[0] != '[' {
		p = l.prefix + "." + path
	}
	for {
		if n, ok := l.lines[p]; ok {
			return n
		}
		if p == "" {
			return 1
		}
		p = parentPath(p)
	}
}

// scanJSON records the line of each field of a valid JSON text (of its key
// in an object, of its value in an array) and returns the paths of keys
// that appear twice in one object, which encoding/json would silently
// resolve to the last.
func scanJSON(data []byte) (map[string]int, []string) {
	var starts []int // offsets of the lines' starts
	starts = append(starts, 0)
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	lineAt := func(off int64) int {
		for off < int64(len(data)) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
			off++
		}
		return sort.Search(len(starts), func(i int) bool { return int64(starts[i]) > off })
	}
	lines := map[string]int{}
	var dups []string
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func(path string) error
	walk = func(path string) error {
		if _, ok := lines[path]; !ok {
			lines[path] = lineAt(dec.InputOffset())
		}
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				at := lineAt(dec.InputOffset())
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k, _ := kt.(string)
				p := joinPath(path, k)
				if seen[k] {
					dups = append(dups, p)
				} else {
					lines[p] = at
				}
				seen[k] = true
				if err := walk(p); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := walk(indexPath(path, i)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	_ = walk("") // the text is valid: json.Unmarshal accepted it
	return lines, dups
}
