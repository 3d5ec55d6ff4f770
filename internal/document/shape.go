package document

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// ShapeProblem is a field of the wrong JSON type, or an unknown one.
type ShapeProblem struct {
	// Path is the field's path; "" for the whole document.
	Path string
	// Message says what is wrong, starting with the field's path, e.g.
	// `metadata.name: expected string, got number` or
	// `unknown field "spec.names.shortnames" (did you mean "shortNames"?)`.
	Message string
}

// Shape checks decoded documents against the Go types they are about to be
// decoded into. Make one with [NewShape]; it is immutable and safe for
// concurrent use.
type Shape struct {
	unknownField func(path, key string, known []string) string
	yamlBooleans bool
}

// ShapeOption configures a [Shape].
type ShapeOption func(*Shape)

// WithUnknownField sets how a Shape describes the unknown field key of the
// object at path, whose Go type has the fields known (their JSON names, in
// the order the type declares them). The default is [UnknownField].
func WithUnknownField(describe func(path, key string, known []string) string) ShapeOption {
	return func(s *Shape) {
		if describe != nil {
			s.unknownField = describe
		}
	}
}

// WithYAMLBooleanHint makes a Shape explain a boolean where a string is
// expected: YAML 1.1 reads unquoted yes, no, on, off, y and n as booleans.
// By default it does not.
func WithYAMLBooleanHint() ShapeOption {
	return func(s *Shape) { s.yamlBooleans = true }
}

// NewShape returns a Shape configured by opts.
func NewShape(opts ...ShapeOption) *Shape {
	s := &Shape{unknownField: UnknownField}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// UnknownField is the default description of the unknown field key of the
// object at path: `unknown field "path.key"`, followed by
// ` (did you mean "Name"?)` for a known field whose name differs only in
// case.
func UnknownField(path, key string, known []string) string {
	msg := fmt.Sprintf("unknown field %q", JoinPath(path, key))
	for _, name := range known {
		if strings.EqualFold(name, key) {
			msg += fmt.Sprintf(" (did you mean %q?)", name)
		}
	}
	return msg
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// Check compares v, a value decoded by [Decode] found at path, with t, the
// Go type it is about to be decoded into with encoding/json, and returns
// every unknown field and every JSON type mismatch, each with its path.
// Unlike json.Decoder.DisallowUnknownFields it reports all of them, with
// the field's full path, and it matches field names case-sensitively. A
// struct's fields are its exported fields with a name in their json tag.
// null is accepted anywhere, as encoding/json does (required fields are the
// caller's to check), and so is anything where t is json.RawMessage.
func (s *Shape) Check(path string, v any, t reflect.Type) []ShapeProblem {
	if v == nil || t == rawMessageType {
		return nil
	}
	mismatch := func(want string) []ShapeProblem {
		msg := fmt.Sprintf("%s: expected %s, got %s", orRoot(path), want, JSONKind(v))
		if _, ok := v.(bool); ok && want == "string" && s.yamlBooleans {
			msg += " (in YAML, quote words such as yes, no, on, off, y and n, which are booleans otherwise)"
		}
		return []ShapeProblem{{path, msg}}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return s.Check(path, v, t.Elem())
	case reflect.String:
		if _, ok := v.(string); !ok {
			return mismatch("string")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return mismatch("boolean")
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return mismatch("integer")
		}
		if _, err := strconv.ParseInt(n.String(), 10, t.Bits()); err != nil {
			return []ShapeProblem{{path, fmt.Sprintf("%s: %s is not an integer of %d bits", orRoot(path), n, t.Bits())}}
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			return mismatch("array")
		}
		var out []ShapeProblem
		for i, e := range arr {
			out = append(out, s.Check(IndexPath(path, i), e, t.Elem())...)
		}
		return out
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return mismatch("object")
		}
		var out []ShapeProblem
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			out = append(out, s.Check(JoinPath(path, k), obj[k], t.Elem())...)
		}
		return out
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return mismatch("object")
		}
		fields := map[string]reflect.Type{}
		var names []string
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.IsExported() && name != "" && name != "-" {
				fields[name] = f.Type
				names = append(names, name)
			}
		}
		var out []ShapeProblem
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			ft, ok := fields[k]
			if !ok {
				out = append(out, ShapeProblem{JoinPath(path, k), s.unknownField(path, k, names)})
				continue
			}
			out = append(out, s.Check(JoinPath(path, k), obj[k], ft)...)
		}
		return out
	default:
		// Only reached if a document type gains a field of a new Go type.
		return []ShapeProblem{{path, fmt.Sprintf("%s: internal error: cannot check Go type %s", orRoot(path), t)}}
	}
	return nil
}

// Messages returns the problems' messages.
func Messages(ps []ShapeProblem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Message)
	}
	return out
}
