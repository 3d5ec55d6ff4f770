package document

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// YAMLDoc is one document of a YAML stream.
type YAMLDoc struct {
	// Data is the document's text. For a document that starts on a "---"
	// line, it starts with whatever follows the "---" on that line.
	Data []byte
	// Line is the 1-based line of the file that Data starts on.
	Line int
}

// SplitYAML splits a YAML stream at "---" lines. Text after "---" on the
// same line belongs to the following document. Blank or comment-only text
// before the first "---" is not a document; empty documents after it are,
// so that a document's index in the result is its position in the file.
func SplitYAML(data []byte) []YAMLDoc {
	var docs []YAMLDoc
	cur := YAMLDoc{Line: 1}
	prelude := true
	flush := func() {
		if !prelude || !blankYAML(cur.Data) {
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
			cur = YAMLDoc{Line: lineNo, Data: append([]byte(nil), line[3:]...)}
			continue
		}
		cur.Data = append(cur.Data, line...)
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

// JSON converts the document to JSON as sigs.k8s.io/yaml does, strictly: a
// key set twice in a mapping is an error. YAML is read as YAML 1.1, as
// Kubernetes does, so yes, no, on and off are booleans. It returns nil and
// no error for an empty document (or one that holds only null), and a
// [*YAMLError] for a document that is not valid YAML.
func (d YAMLDoc) JSON() ([]byte, error) {
	js, err := yaml.YAMLToJSONStrict(d.Data)
	if err != nil {
		return nil, newYAMLError(err, d.Line)
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, nil
	}
	return js, nil
}

// JSONToYAML converts JSON to YAML as sigs.k8s.io/yaml's JSONToYAML does,
// keys sorted and ending with a newline, but keeps every string as it is.
// JSONToYAML alone parses JSON as YAML, so it refuses strings holding DEL,
// a C1 control, U+FFFE or U+FFFF ("control characters are not allowed"),
// which encoding/json writes unescaped, and turns NEL, U+2028 and U+2029
// into line breaks, which the YAML it writes then folds into spaces. Here
// they are escaped in the JSON first, and the YAML escapes them again.
func JSONToYAML(data []byte) ([]byte, error) {
	return yaml.JSONToYAML(escapeForYAML(data))
}

// EscapeForYAML escapes, in JSON, the characters that a YAML parser refuses
// to read unescaped or reads as line breaks (see [JSONToYAML]), so that the
// JSON can stand in YAML as a flow value.
func EscapeForYAML(data []byte) []byte { return escapeForYAML(data) }

// escapeForYAML escapes, in JSON, the characters that a YAML parser refuses
// to read unescaped or reads as line breaks. Outside strings JSON holds none
// of them, and bytes that are not UTF-8 are left as they are.
func escapeForYAML(data []byte) []byte {
	var out []byte
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x2028 || r == 0x2029 || r == 0xfffe || r == 0xffff {
			if out == nil {
				out = append(make([]byte, 0, len(data)+16), data[:i]...)
			}
			out = fmt.Appendf(out, `\u%04x`, r)
		} else if out != nil {
			out = append(out, data[i:i+n]...)
		}
		i += n
	}
	if out == nil {
		return data
	}
	return out
}

// YAMLError is a document that is not valid YAML.
type YAMLError struct {
	// Line is the first line of the file that Message names, or 0 if it
	// names none.
	Line int
	// Message is the YAML parser's message, on one line and without the
	// names of the decoding layers, its line numbers counted from the top
	// of the file rather than of the document, e.g.
	// `line 10: mapping values are not allowed in this context` or
	// `unmarshal errors: line 14: key "kind" already set in map`.
	Message string
}

// Error returns Message.
func (e *YAMLError) Error() string { return e.Message }

// Detail returns Message without what a "file:line:" prefix says already:
// a leading "unmarshal errors: " and a leading "line N: " for Line, e.g.
// `key "kind" already set in map`.
func (e *YAMLError) Detail() string {
	msg := strings.TrimPrefix(e.Message, "unmarshal errors: ")
	if e.Line == 0 {
		return msg
	}
	return strings.TrimPrefix(msg, fmt.Sprintf("line %d: ", e.Line))
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// newYAMLError shortens a YAML error and makes its line numbers relative to
// the file rather than to the document, whose first line is firstLine.
func newYAMLError(err error, firstLine int) *YAMLError {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.Join(strings.Fields(msg), " ")
	e := &YAMLError{}
	e.Message = yamlLineRE.ReplaceAllStringFunc(msg, func(s string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(s, "line "))
		if err != nil {
			return s
		}
		n += firstLine - 1
		if e.Line == 0 {
			e.Line = n
		}
		return "line " + strconv.Itoa(n)
	})
	return e
}
