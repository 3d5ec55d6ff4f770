package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"

	"gopkg.in/yaml.v3"
)

// nodeError is an error about one node of a file.
type nodeError struct {
	node *yaml.Node
	msg  string
}

func (e *nodeError) Error() string { return fmt.Sprintf("line %d: %s", e.node.Line, e.msg) }

func errorf(n *yaml.Node, format string, args ...any) error {
	return &nodeError{node: n, msg: fmt.Sprintf(format, args...)}
}

// resolve returns the node an alias stands for, and any other node itself.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// lookup returns the value of key in mapping m, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// str returns a string scalar, quoted as yaml.v3 quotes Go strings: where
// it would read as another type, in YAML 1.2 or 1.1 ("NO", "on").
func str(s string) *yaml.Node {
	var n yaml.Node
	_ = n.Encode(s) // a string always encodes
	if s == "<<" {
		n.Tag, n.Style = "!!str", yaml.DoubleQuotedStyle // not a merge key
	}
	return &n
}

// stringMap reads labels or annotations: a mapping of scalars, or null.
// A null value reads as "".
func stringMap(n *yaml.Node) (map[string]string, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, errorf(n, "%s; want a mapping of strings", describe(n))
	}
	m := make(map[string]string, len(n.Content)/2)
	for i := 0; i < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
			return nil, errorf(k, "key %q holds %s; want a string", k.Value, describe(v))
		}
		if _, dup := m[k.Value]; dup {
			return nil, errorf(k, "key %q twice", k.Value)
		}
		m[k.Value] = scalarString(v)
	}
	return m, nil
}

func scalarString(n *yaml.Node) string {
	if isNull(n) {
		return ""
	}
	return n.Value
}

// stringsNode returns a mapping holding m, nil when m is empty. Keys of old,
// the mapping m replaces, come first in their order, then the others sorted.
func stringsNode(old *yaml.Node, m map[string]string) *yaml.Node {
	if len(m) == 0 {
		return nil
	}
	n := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k string) {
		if v, ok := m[k]; ok && lookup(n, k) == nil {
			n.Content = append(n.Content, str(k), str(v))
		}
	}
	if old != nil && old.Kind == yaml.MappingNode {
		for i := 0; i < len(old.Content); i += 2 {
			add(old.Content[i].Value)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		add(k)
	}
	return n
}

// specJSON converts a spec, a mapping or null, to JSON with its keys in the
// file's order.
func specJSON(n *yaml.Node) (json.RawMessage, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, errorf(n, "%s; want a mapping", describe(n))
	}
	var buf bytes.Buffer
	if err := writeJSON(&buf, n); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeJSON(buf *bytes.Buffer, n *yaml.Node) error {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		buf.WriteByte('{')
		seen := make(map[string]bool)
		for i := 0; i < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				return errorf(k, "a key that is not a string")
			}
			if seen[k.Value] {
				return errorf(k, "key %q twice", k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k.Value)
			buf.WriteByte(':')
			if err := writeJSON(buf, n.Content[i+1]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSON(buf, item); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		return writeScalar(buf, n)
	default:
		return errorf(n, "an alias without an anchor")
	}
	return nil
}

func writeScalar(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		buf.WriteString("null")
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return errorf(n, "%v", err)
		}
		fmt.Fprint(buf, b)
	case "!!int", "!!float":
		if isJSONNumber(n.Value) {
			buf.WriteString(n.Value) // exactly as written
			return nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return errorf(n, "%v", err)
		}
		if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			return errorf(n, "%s is not a JSON number", n.Value)
		}
		data, err := json.Marshal(v)
		if err != nil {
			return errorf(n, "%v", err)
		}
		buf.Write(data)
	default: // strings, and timestamps and binaries in their text form
		writeString(buf, n.Value)
	}
	return nil
}

func writeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	buf.Truncate(buf.Len() - 1)
}

// isJSONNumber reports whether s is a number in JSON's syntax.
func isJSONNumber(s string) bool {
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return false
	}
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil
}

// specNode converts a spec, a JSON object, to a YAML mapping with its keys in
// the same order, in block style.
func specNode(spec json.RawMessage) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.UseNumber()
	return jsonNode(dec)
}

func jsonNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		if t == '{' {
			n.Kind = yaml.MappingNode
		}
		for dec.More() {
			if n.Kind == yaml.MappingNode {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				if lookup(n, k.(string)) != nil {
					return nil, fmt.Errorf("key %q twice", k)
				}
				n.Content = append(n.Content, str(k.(string)))
			}
			v, err := jsonNode(dec)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		_, err := dec.Token() // the closing delimiter
		return n, err
	case string:
		return str(t), nil
	case json.Number:
		tag := "!!int"
		if bytes.ContainsAny([]byte(t), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(t)}, nil
	default: // nil
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
}

// merge returns next, a node to stand where old stood, reusing the nodes of
// old that hold the same content so that their comments, style and anchors
// stay. Mappings take the order of next. It may change old.
func merge(old, next *yaml.Node) *yaml.Node {
	switch {
	case next == nil || old == nil || old.Kind == yaml.AliasNode:
		return next
	case old.Kind != next.Kind || old.Kind == yaml.ScalarNode && (old.ShortTag() != next.ShortTag() || old.Value != next.Value):
		next.HeadComment, next.LineComment, next.FootComment = old.HeadComment, old.LineComment, old.FootComment
		return next
	case old.Kind == yaml.ScalarNode:
		return old
	}
	if len(old.Content) == 0 {
		old.Style &^= yaml.FlowStyle // {} and [] grow in block style
	}
	content := make([]*yaml.Node, 0, len(next.Content))
	if next.Kind == yaml.MappingNode {
		for i := 0; i < len(next.Content); i += 2 {
			k, v := next.Content[i], next.Content[i+1]
			for j := 0; j < len(old.Content); j += 2 {
				if old.Content[j].Value == k.Value {
					k, v = old.Content[j], merge(old.Content[j+1], v)
					break
				}
			}
			content = append(content, k, v)
		}
	} else {
		for i, v := range next.Content {
			if i < len(old.Content) {
				v = merge(old.Content[i], v)
			}
			content = append(content, v)
		}
	}
	old.Content = content
	return old
}
