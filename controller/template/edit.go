package template

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cup-dev/cup/controller"
)

// member is one key and value of a JSON object, in an object that keeps the
// order of its keys.
type member struct {
	key string
	val any
}

// object is a JSON object that keeps the order of its keys. Values decoded by
// decodeOrdered are object, []any, json.Number, string, bool or nil.
type object []member

func (o object) get(key string) (any, bool) {
	for _, m := range o {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// decodeOrdered decodes one JSON value, keeping the order of object keys and
// numbers exactly as written.
func decodeOrdered(data []byte) (any, error) {
	return decodeJSON(data, false)
}

// rawScalar is a string or number and its text in the file it was read
// from, so that an unchanged "\u00e9" or 1.50 is written back as it was.
type rawScalar struct {
	val any // string or json.Number
	raw string
}

// decodeJSON is decodeOrdered; with keepRaw, strings and numbers are
// rawScalars.
func decodeJSON(data []byte, keepRaw bool) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw []byte
	if keepRaw {
		raw = data
	}
	v, err := decodeValue(dec, raw)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("unexpected data after the value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, raw []byte) (any, error) {
	start := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok.(type) {
	case string, json.Number:
		if raw != nil {
			text := strings.TrimLeft(string(raw[start:dec.InputOffset()]), " \t\r\n,:")
			return rawScalar{tok, text}, nil
		}
	}
	switch tok {
	case json.Delim('{'):
		o := object{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("object key %v is not a string", k)
			}
			v, err := decodeValue(dec, raw)
			if err != nil {
				return nil, err
			}
			o = append(o, member{key, v})
		}
		_, err := dec.Token() // '}'
		return o, err
	case json.Delim('['):
		a := []any{}
		for dec.More() {
			v, err := decodeValue(dec, raw)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token() // ']'
		return a, err
	default:
		return tok, nil
	}
}

// orderedEqual reports whether a and b, decoded by decodeOrdered, are equal
// JSON values: objects regardless of key order, numbers by decimal value.
func orderedEqual(a, b any) bool {
	if r, ok := a.(rawScalar); ok {
		a = r.val
	}
	if r, ok := b.(rawScalar); ok {
		b = r.val
	}
	switch a := a.(type) {
	case object:
		b, ok := b.(object)
		if !ok || len(a) != len(b) {
			return false
		}
		for _, m := range a {
			bv, ok := b.get(m.key)
			if !ok || !orderedEqual(m.val, bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		return ok && slices.EqualFunc(a, b, orderedEqual)
	case json.Number:
		b, ok := b.(json.Number)
		return ok && numberEqual(string(a), string(b))
	default: // string, bool, nil
		return a == b
	}
}

// isEmpty reports whether v is an empty object or array.
func isEmpty(v any) bool {
	switch v := v.(type) {
	case object:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// fileValue returns r in the form encode writes it, decoded by decodeOrdered.
func fileValue(r *controller.Resource) (object, error) {
	data, err := fileJSON(r)
	if err != nil {
		return nil, err
	}
	v, err := decodeOrdered(data)
	if err != nil {
		return nil, err
	}
	o, ok := v.(object)
	if !ok {
		return nil, errors.New("resource is not a JSON object")
	}
	return o, nil
}

// dropNamespace removes metadata.namespace from v, a resource in file form.
func dropNamespace(v object) object {
	out := slices.Clone(v)
	for i, m := range out {
		if md, ok := m.val.(object); ok && m.key == "metadata" {
			out[i].val = slices.DeleteFunc(slices.Clone(md), func(m member) bool { return m.key == "namespace" })
		}
	}
	return out
}

// hasNamespace reports whether v, a resource in file form, names its namespace.
func hasNamespace(v any) bool {
	o, _ := v.(object)
	md, _ := o.get("metadata")
	mo, _ := md.(object)
	_, ok := mo.get("namespace")
	return ok
}

// mergeJSON returns want with the key order of old where old has the key:
// old's keys stay where they are, keys only want has follow in want's order
// (or, when old's keys are sorted, go to their sorted place), and keys only
// old has are gone. Values equal to old's keep old's form
// (1.0 stays 1.0).
func mergeJSON(old, want any) any {
	switch w := want.(type) {
	case object:
		o, ok := old.(object)
		if !ok {
			return want
		}
		out := make(object, 0, len(w))
		for _, m := range o {
			if wv, ok := w.get(m.key); ok {
				out = append(out, member{m.key, mergeJSON(m.val, wv)})
			}
		}
		for _, m := range w {
			if _, ok := o.get(m.key); !ok {
				out = append(out, m)
			}
		}
		// Keys sorted (as cup writes labels) stay sorted.
		byKey := func(a, b member) int { return strings.Compare(a.key, b.key) }
		if len(o) > 1 && slices.IsSortedFunc(o, byKey) {
			slices.SortStableFunc(out, byKey)
		}
		return out
	case []any:
		o, ok := old.([]any)
		if !ok || len(o) != len(w) {
			return want
		}
		out := make([]any, len(w))
		for i := range w {
			out[i] = mergeJSON(o[i], w[i])
		}
		return out
	default:
		if orderedEqual(old, want) {
			return old
		}
		return want
	}
}

// writeJSON writes v as JSON, each member and element on its own line
// indented by indent per level, or on one line when indent is empty.
func writeJSON(b *bytes.Buffer, v any, indent, prefix string) error {
	nl := func(p string) {
		if indent != "" {
			b.WriteByte('\n')
			b.WriteString(p)
		}
	}
	switch v := v.(type) {
	case object:
		if len(v) == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteByte('{')
		for i, m := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(prefix + indent)
			if err := writeString(b, m.key); err != nil {
				return err
			}
			b.WriteByte(':')
			if indent != "" {
				b.WriteByte(' ')
			}
			if err := writeJSON(b, m.val, indent, prefix+indent); err != nil {
				return err
			}
		}
		nl(prefix)
		b.WriteByte('}')
	case []any:
		if len(v) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(prefix + indent)
			if err := writeJSON(b, e, indent, prefix+indent); err != nil {
				return err
			}
		}
		nl(prefix)
		b.WriteByte(']')
	case rawScalar:
		b.WriteString(v.raw)
	case string:
		return writeString(b, v)
	case json.Number:
		b.WriteString(string(v))
	case bool:
		fmt.Fprint(b, v)
	case nil:
		b.WriteString("null")
	default:
		return fmt.Errorf("unexpected JSON value %T", v)
	}
	return nil
}

func writeString(b *bytes.Buffer, s string) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	return nil
}

// jsonIndent returns the indentation of the first indented line of data, a
// JSON document: the file's indentation unit. It is empty for JSON on one
// line, and two spaces when no line is indented.
func jsonIndent(data []byte) string {
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) == 1 {
		return ""
	}
	for _, l := range lines[1:] {
		if t := strings.TrimLeft(l, " \t"); len(t) < len(l) && t != "" {
			return l[:len(l)-len(t)]
		}
	}
	return "  "
}

// patchJSON rewrites old, a JSON file holding oldValue, to hold want,
// keeping its indentation, its key order, whether it ends in a newline, and
// the text of unchanged strings and numbers.
func patchJSON(old []byte, want object) ([]byte, error) {
	oldValue, err := decodeJSON(old, true)
	if err != nil {
		return nil, err
	}
	if !hasNamespace(oldValue) {
		want = dropNamespace(want)
	}
	var b bytes.Buffer
	if err := writeJSON(&b, mergeJSON(oldValue, want), jsonIndent(old), ""); err != nil {
		return nil, err
	}
	if bytes.HasSuffix(old, []byte("\n")) {
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// patch returns old, the content of the file of r, edited to hold r (see
// patchYAML and patchJSON) and decoded, or false when it cannot be edited or
// the edited file does not read back as r.
func (c *Controller) patch(old []byte, r *controller.Resource) (data []byte, d decoded, ok bool) {
	defer func() {
		// A patcher bug must cost the file's layout, not the write.
		if p := recover(); p != nil {
			data, d, ok = nil, decoded{}, false
		}
	}()
	want, err := fileValue(r)
	if err != nil {
		return nil, decoded{}, false
	}
	if c.spec.Encoding == EncodingYAML {
		data, err = patchYAML(old, want)
	} else {
		data, err = patchJSON(old, want)
	}
	if err != nil {
		return nil, decoded{}, false
	}
	d = decodeContent(c.spec.Encoding, data)
	if d.err != nil {
		return nil, decoded{}, false
	}
	got := d.res.Clone()
	if got.Metadata.Namespace == "" {
		got.Metadata.Namespace = r.Metadata.Namespace
	}
	if !sameContent(got, r) {
		return nil, decoded{}, false
	}
	return data, d, true
}
