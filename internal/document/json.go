package document

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// EmptyJSON is the message for a JSON file that holds nothing but white
// space.
const EmptyJSON = "empty file; a JSON file holds a resource or an array of resources"

// Decode decodes one JSON value, keeping numbers as json.Number, for
// [Shape.Check] and [JSONKind]. A value nested more than [MaxDepth] deep is
// refused with a [*DepthError].
func Decode(data []byte) (any, error) {
	if err := CheckDepth(data, MaxDepth); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// JSONKind names the JSON type of a decoded value: null, boolean, number,
// string, array or object.
func JSONKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// Position returns the 1-based line and column of a byte offset into data,
// such as a json.SyntaxError's; an offset past the end counts as the end.
func Position(data []byte, offset int64) (line, column int) {
	offset = min(offset, int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	column = max(int(offset)-(bytes.LastIndexByte(before, '\n')+1), 1)
	return line, column
}

// JSONLocator knows the line of every field of a JSON text.
type JSONLocator struct {
	lines map[string]int
	// prefix is prepended to paths: "[i]" for the i-th element of an array.
	prefix string
}

// Element returns a Locator for the i-th element of the array that is the
// whole text, whose paths start at that element.
func (l *JSONLocator) Element(i int) *JSONLocator {
	return &JSONLocator{lines: l.lines, prefix: IndexPath("", i)}
}

// Line returns the line of the field at path (of its key in an object, of
// its value in an array), or of the nearest enclosing one found.
func (l *JSONLocator) Line(path string) int {
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
		p = ParentPath(p)
	}
}

// ScanJSON reads a valid JSON text and returns a Locator for its fields
// and the paths of keys that appear twice in one object, which
// encoding/json would silently resolve to the last value.
func ScanJSON(data []byte) (*JSONLocator, []string) {
	starts := []int{0} // offsets of the lines' starts
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
	dec.UseNumber()
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
				p := JoinPath(path, k)
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
				if err := walk(IndexPath(path, i)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	_ = walk("") // not an error for a valid text; the caller checked it
	return &JSONLocator{lines: lines}, dups
}

// Pointer is the value at the JSON Pointer ptr (RFC 6901) in v, a value
// Decode (or encoding/json) made; false when there is none. An array
// index is decimal without leading zeros.
func Pointer(v any, ptr string) (any, bool) {
	if ptr == "" {
		return v, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) || (len(tok) > 1 && tok[0] == '0') {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}
