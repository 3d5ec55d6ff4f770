package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// checkShape compares a decoded JSON value (from json.Decoder with UseNumber)
// with the Go type it is about to be decoded into, and returns every unknown
// field and every JSON type mismatch, each with its path. Unlike
// json.Decoder.DisallowUnknownFields it reports all of them, with the field's
// full path, and it matches field names case-sensitively. null is accepted
// anywhere, like encoding/json does; required fields are checked afterwards.
func checkShape(path string, v any, t reflect.Type) []string {
	if v == nil || t == rawMessageType {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkShape(path, v, t.Elem())
	case reflect.String:
		if _, ok := v.(string); !ok {
			return []string{fmt.Sprintf("%s: expected string, got %s", path, jsonKind(v))}
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: expected array, got %s", path, jsonKind(v))}
		}
		var out []string
		for i, e := range arr {
			out = append(out, checkShape(fmt.Sprintf("%s[%d]", path, i), e, t.Elem())...)
		}
		return out
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: expected object, got %s", path, jsonKind(v))}
		}
		var out []string
		for _, k := range sortedKeys(obj) {
			out = append(out, checkShape(joinPath(path, k), obj[k], t.Elem())...)
		}
		return out
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: expected object, got %s", orRoot(path), jsonKind(v))}
		}
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.IsExported() && name != "" && name != "-" {
				fields[name] = f.Type
			}
		}
		var out []string
		for _, k := range sortedKeys(obj) {
			ft, ok := fields[k]
			if !ok {
				msg := fmt.Sprintf("unknown field %q", joinPath(path, k))
				for name := range fields {
					if strings.EqualFold(name, k) {
						msg += fmt.Sprintf(" (did you mean %q?)", name)
					}
				}
				out = append(out, msg)
				continue
			}
			out = append(out, checkShape(joinPath(path, k), obj[k], ft)...)
		}
		return out
	default:
		// Only reached if a document type gains a field of a new Go type.
		return []string{fmt.Sprintf("%s: internal error: cannot check Go type %s", orRoot(path), t)}
	}
	return nil
}

func orRoot(path string) string {
	if path == "" {
		return "document"
	}
	return path
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
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

// duplicateKeys returns the paths of keys that appear twice in one JSON
// object, which encoding/json would silently resolve to the last value.
// data must be valid JSON.
func duplicateKeys(data []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []string
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k, _ := kt.(string)
				p := joinPath(path, k)
				if seen[k] {
					out = append(out, p)
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
				if err := walk(fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil // not reached for valid JSON; the decoder reports syntax errors
	}
	return out
}
