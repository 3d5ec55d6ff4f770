package controller

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/cup-dev/cup/internal/document"
)

// Resource is an API resource in the form users keep in files:
//
//	{"apiVersion": "...", "kind": "...", "metadata": {...}, "spec": {...}}
//
// Spec is free-form JSON and, when present, a JSON object.
type Resource struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   Metadata        `json:"metadata"`
	Spec       json.RawMessage `json:"spec,omitempty"`
}

// Metadata names and describes a resource.
type Metadata struct {
	Namespace   string            `json:"namespace,omitempty"`
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// ResourceVersion identifies the content of a stored resource. It is set by
	// cup on reads and never stored in files; controllers ignore it.
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// Clone returns a deep copy of r.
func (r *Resource) Clone() *Resource {
	if r == nil {
		return nil
	}
	c := *r
	c.Metadata.Labels = maps.Clone(r.Metadata.Labels)
	c.Metadata.Annotations = maps.Clone(r.Metadata.Annotations)
	if r.Spec != nil {
		c.Spec = bytes.Clone(r.Spec)
	}
	return &c
}

// ParseResource decodes one resource from JSON. Unknown fields, trailing data,
// a spec that is not a JSON object, bytes that are not UTF-8 and objects and
// arrays nested more than document.MaxDepth (512) deep are errors; the depth
// is checked before encoding/json decodes anything.
func ParseResource(data []byte) (*Resource, error) {
	// The usual resource is read in one pass, which bounds its nesting as
	// it goes; a listing reads thousands, and a pass of CheckDepth over
	// each was 5% of a first listing's CPU. Anything else is checked, then
	// decoded by encoding/json.
	if utf8.Valid(data) {
		if r, ok := parseCommon(data); ok {
			return r, nil
		}
	}
	if err := document.CheckDepth(data, document.MaxDepth); err != nil {
		return nil, fmt.Errorf("decoding resource: %w", err)
	}
	// JSON is UTF-8. encoding/json would replace other bytes in strings
	// with U+FFFD and keep them in a RawMessage: either changes what the
	// file holds without a word.
	if err := CheckUTF8(data); err != nil {
		return nil, fmt.Errorf("decoding resource: %w", err)
	}
	return parseJSON(data)
}

// parseJSON is ParseResource's decoding by encoding/json.
func parseJSON(data []byte) (*Resource, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Resource
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decoding resource: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decoding resource: unexpected data after the resource")
	}
	if err := checkSpec(r.Spec); err != nil {
		return nil, err
	}
	if string(r.Spec) == "null" {
		r.Spec = nil
	}
	return &r, nil
}

// CheckUTF8 returns an error saying where b stops being UTF-8, or nil.
func CheckUTF8(b []byte) error {
	if utf8.Valid(b) {
		return nil
	}
	line, col := 1, 1
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return fmt.Errorf("not UTF-8: byte 0x%02x at line %d, column %d (byte offset %d); save the file as UTF-8", b[i], line, col, i)
		}
		if r == '\n' {
			line, col = line+1, 0
		}
		i += n
		col++
	}
	return errors.New("not UTF-8; save the file as UTF-8")
}

func checkSpec(spec json.RawMessage) error {
	s := bytes.TrimSpace(spec)
	if len(s) == 0 || string(s) == "null" || s[0] == '{' {
		return nil
	}
	return errors.New("decoding resource: spec must be a JSON object")
}

// MarshalFile encodes r in its stable file form: indented JSON with a trailing
// newline, fields in a fixed order, spec keys kept in their order, and no
// resourceVersion. Encoding the same resource twice gives identical bytes.
func (r *Resource) MarshalFile() ([]byte, error) {
	c := *r
	c.Metadata.ResourceVersion = ""
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&c); err != nil {
		return nil, fmt.Errorf("encoding resource: %w", err)
	}
	return buf.Bytes(), nil
}

// ContentVersion returns an opaque identifier of r's content: apiVersion, kind,
// metadata (without resourceVersion) and spec. It changes exactly when the
// content changes: whitespace in spec does not count, nor does the order of
// labels and annotations; the order of keys in spec does (cup writes it
// stably, so only a hand edit can change it).
func (r *Resource) ContentVersion() (string, error) {
	var spec []byte
	if len(bytes.TrimSpace(r.Spec)) > 0 {
		var err error
		if spec, err = compact(r.Spec); err != nil {
			return "", err
		}
	}
	return r.contentVersion(spec, sortedKeys(r.Metadata.Labels), sortedKeys(r.Metadata.Annotations)), nil
}

func sortedKeys(m map[string]string) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m)) // one allocation, where slices.Collect grows
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// compact returns spec compacted, as json.Compact does.
func compact(spec []byte) ([]byte, error) {
	if c, ok := compactJSON(make([]byte, 0, len(spec)), spec); ok {
		return c, nil
	}
	var b bytes.Buffer
	b.Grow(len(spec))
	if err := json.Compact(&b, spec); err != nil {
		return nil, fmt.Errorf("encoding spec: %w", err)
	}
	return b.Bytes(), nil
}

// contentVersion is ContentVersion with the spec already compacted and the
// keys of labels and annotations sorted.
func (r *Resource) contentVersion(spec []byte, labels, annotations []string) string {
	scratch := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(scratch)
	sum := r.contentSum(scratch, spec, labels, annotations)
	return hex.EncodeToString(sum[:])
}

// contentSum returns the bytes of contentVersion's version, hashing its
// fields as one buffer, built in *scratch: a write to the hash for each
// field took half of the hashing.
func (r *Resource) contentSum(scratch *[]byte, spec []byte, labels, annotations []string) [16]byte {
	b := (*scratch)[:0]
	b = appendField(b, r.APIVersion)
	b = appendField(b, r.Kind)
	b = appendField(b, r.Metadata.Namespace)
	b = appendField(b, r.Metadata.Name)
	for _, m := range [...]struct {
		m    map[string]string
		keys []string
	}{{r.Metadata.Labels, labels}, {r.Metadata.Annotations, annotations}} {
		b = appendField(b, strconv.Itoa(len(m.m)))
		for _, k := range m.keys {
			b = appendField(b, k)
			b = appendField(b, m.m[k])
		}
	}
	if s := string(spec); s != "{}" && s != "null" {
		b = appendField(b, spec)
	} else {
		b = appendField(b, "") // no spec, null and {} are the same content
	}
	sum := sha256.Sum256(b)
	if cap(b) <= maxScratch {
		*scratch = b
	}
	return [16]byte(sum[:16])
}

// appendField appends s with its length before it, as contentSum hashes
// each field.
func appendField[S string | []byte](b []byte, s S) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}
