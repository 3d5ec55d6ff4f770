package controller

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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

// ParseResource decodes one resource from JSON. Unknown fields, trailing data
// and a spec that is not a JSON object are errors.
func ParseResource(data []byte) (*Resource, error) {
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
// content changes; formatting and key order in spec do not count.
func (r *Resource) ContentVersion() (string, error) {
	var spec any
	if len(r.Spec) > 0 {
		dec := json.NewDecoder(bytes.NewReader(r.Spec))
		dec.UseNumber()
		if err := dec.Decode(&spec); err != nil {
			return "", fmt.Errorf("decoding spec: %w", err)
		}
		if m, ok := spec.(map[string]any); ok && len(m) == 0 {
			spec = nil
		}
	}
	canonical, err := json.Marshal(struct {
		APIVersion  string            `json:"a"`
		Kind        string            `json:"k"`
		Namespace   string            `json:"n"`
		Name        string            `json:"m"`
		Labels      map[string]string `json:"l"`
		Annotations map[string]string `json:"o"`
		Spec        any               `json:"s"`
	}{r.APIVersion, r.Kind, r.Metadata.Namespace, r.Metadata.Name, nilIfEmpty(r.Metadata.Labels), nilIfEmpty(r.Metadata.Annotations), spec})
	if err != nil {
		return "", fmt.Errorf("encoding resource: %w", err)
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:16]), nil
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
