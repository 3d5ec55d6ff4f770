package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Resource is an API resource in the form cup keeps in files and exchanges
// with modules:
//
//	{"apiVersion": "...", "kind": "...", "metadata": {...}, "spec": {...}}
//
// Spec is free-form JSON and, when present, a JSON object; its keys keep
// their order.
type Resource struct {
	// APIVersion is "group/version", e.g. "flags.cup.dev/v1alpha1".
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
}

// MatchLabels reports whether r has every label of selector with the same
// value. An empty selector matches every resource.
func (r *Resource) MatchLabels(selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := r.Metadata.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// parseResource decodes the resource a put receives on stdin. Unknown fields
// are ignored, so that cupd may send metadata this SDK does not know yet;
// trailing data and a spec that is not an object are errors. A null spec
// becomes nil.
func parseResource(data []byte) (*Resource, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var r Resource
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decoding the resource on stdin: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decoding the resource on stdin: unexpected data after the resource")
	}
	if err := checkSpec(r.Spec); err != nil {
		return nil, err
	}
	if string(bytes.TrimSpace(r.Spec)) == "null" {
		r.Spec = nil
	}
	return &r, nil
}

// checkSpec reports an error unless spec is absent, null or a JSON object.
func checkSpec(spec json.RawMessage) error {
	s := bytes.TrimSpace(spec)
	if len(s) == 0 || string(s) == "null" || s[0] == '{' {
		return nil
	}
	return errors.New("spec must be a JSON object")
}
