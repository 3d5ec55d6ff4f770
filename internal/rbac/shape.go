package rbac

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// shapeProblem is a field of the wrong JSON type, or an unknown one.
type shapeProblem struct {
	path, msg string
}

func reflectType(v any) reflect.Type { return reflect.TypeOf(v).Elem() }

// checkShape compares a decoded JSON value (from decodeValue) with the Go
// type it is about to be decoded into, and returns every unknown field and
// every JSON type mismatch, each with its path. Unlike
// json.Decoder.DisallowUnknownFields it reports all of them, with the
// field's full path, and it matches field names case-sensitively. null is
// accepted anywhere, as encoding/json does; required fields are checked
// afterwards.
func checkShape(path string, v any, t reflect.Type) []shapeProblem {
	if v == nil {
		return nil
	}
	mismatch := func(want string) []shapeProblem {
		msg := fmt.Sprintf("%s: expected %s, got %s", orRoot(path), want, jsonKind(v))
		if _, ok := v.(bool); ok && want == "string" {
			msg += " (in YAML, quote words such as yes, no, on, off, y and n, which are booleans otherwise)"
		}
		return []shapeProblem{{path, msg}}
	}
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			return mismatch("string")
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			return mismatch("array")
		}
		var out []shapeProblem
		for i, e := range arr {
			out = append(out, checkShape(indexPath(path, i), e, t.Elem())...)
		}
		return out
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return mismatch("object")
		}
		var out []shapeProblem
		for _, k := range sortedKeys(obj) {
			out = append(out, checkShape(joinPath(path, k), obj[k], t.Elem())...)
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
			fields[name] = f.Type
			names = append(names, name)
		}
		var out []shapeProblem
		for _, k := range sortedKeys(obj) {
			ft, ok := fields[k]
			if !ok {
				out = append(out, shapeProblem{joinPath(path, k), unknownField(path, k, names)})
				continue
			}
			out = append(out, checkShape(joinPath(path, k), obj[k], ft)...)
		}
		return out
	default:
		// Only reached if a document type gains a field of a new Go type.
		return []shapeProblem{{path, fmt.Sprintf("%s: internal error: cannot check Go type %s", orRoot(path), t)}}
	}
	return nil
}

func orRoot(path string) string {
	if path == "" {
		return "document"
	}
	return path
}

// unknownField describes the unknown field key of the object at path, whose
// fields are known.
func unknownField(path, key string, known []string) string {
	msg := fmt.Sprintf("unknown field %q", joinPath(path, key))
	if key == "apiGroup" {
		return msg + " (policy resources name roles and subjects without an API group; remove it)"
	}
	if key == "spec" {
		return msg + " (rules, subjects and roleRef sit at the top level, as in Kubernetes)"
	}
	for _, name := range known {
		if strings.EqualFold(name, key) || strings.EqualFold(name, key+"s") || strings.EqualFold(name+"s", key) {
			return msg + fmt.Sprintf(" (did you mean %q?)", name)
		}
	}
	return msg + " (want " + strings.Join(known, ", ") + ")"
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
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

// decodeValue decodes one JSON value, keeping numbers as json.Number.
func decodeValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

var dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// isDNSLabel reports whether s is an RFC 1123 label: at most 63 lowercase
// letters, digits and '-', starting and ending with a letter or digit.
func isDNSLabel(s string) bool { return len(s) <= 63 && dnsLabelRE.MatchString(s) }

// isDNSSubdomain reports whether s is an RFC 1123 subdomain: at most 253
// characters of dot-separated DNS labels.
func isDNSSubdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for l := range strings.SplitSeq(s, ".") {
		if !isDNSLabel(l) {
			return false
		}
	}
	return true
}
