package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"unicode/utf8"
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

// appendJSON appends r as encode writes it, without reflection: a list of
// thousands costs a module a tenth of the time. It declines (ok false)
// where a string needs escapes or the spec is not valid JSON, for encode
// to write, or word the error; TestAppendJSONMatchesEncode checks that the
// bytes are encode's.
func (r *Resource) appendJSON(b []byte) (_ []byte, ok bool) {
	b = append(b, `{"apiVersion":`...)
	if b, ok = appendPlainString(b, r.APIVersion); !ok {
		return b, false
	}
	b = append(b, `,"kind":`...)
	if b, ok = appendPlainString(b, r.Kind); !ok {
		return b, false
	}
	b = append(b, `,"metadata":{`...)
	if r.Metadata.Namespace != "" {
		b = append(b, `"namespace":`...)
		if b, ok = appendPlainString(b, r.Metadata.Namespace); !ok {
			return b, false
		}
		b = append(b, ',')
	}
	b = append(b, `"name":`...)
	if b, ok = appendPlainString(b, r.Metadata.Name); !ok {
		return b, false
	}
	for _, m := range []struct {
		field string
		m     map[string]string
	}{{`,"labels":`, r.Metadata.Labels}, {`,"annotations":`, r.Metadata.Annotations}} {
		if len(m.m) == 0 {
			continue
		}
		b = append(append(b, m.field...), '{')
		for i, k := range slices.Sorted(maps.Keys(m.m)) {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendPlainString(b, k); !ok {
				return b, false
			}
			b = append(b, ':')
			if b, ok = appendPlainString(b, m.m[k]); !ok {
				return b, false
			}
		}
		b = append(b, '}')
	}
	b = append(b, '}')
	if len(r.Spec) > 0 {
		b = append(b, `,"spec":`...)
		var compact bool
		if b, compact = compactJSON(b, r.Spec); !compact {
			buf := bytes.NewBuffer(b)
			if json.Compact(buf, r.Spec) != nil {
				return b, false
			}
			b = buf.Bytes()
		}
	}
	return append(b, "}\n"...), true
}

// appendPlainString appends s quoted, when encoding/json writes it
// without escapes: valid UTF-8 without control characters, quotes,
// backslashes, U+2028 or U+2029.
func appendPlainString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < ' ' || c == '"' || c == '\\' {
				return b, false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if size == 1 || r == '\u2028' || r == '\u2029' {
			return b, false
		}
		i += size
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}
