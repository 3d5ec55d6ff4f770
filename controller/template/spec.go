package template

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// The templates used when a Spec leaves them empty. They are the original
// Cup's defaults: one JSON file per resource, directly in a directory named
// after the namespace.
const (
	DefaultListTemplate     = `{{ .Namespace }}/{{ .Group }}-{{ .Version }}-{{ .Kind }}-*.json`
	DefaultResourceTemplate = `{{ .Namespace }}/{{ .Group }}-{{ .Version }}-{{ .Kind }}-{{ .Name }}.json`
)

// Encoding is the file format of resources.
type Encoding string

// The supported encodings.
const (
	// EncodingJSON stores resources as indented JSON. New files are
	// written as [controller.Resource.MarshalFile] writes them; edits keep
	// a file's indentation and key order.
	EncodingJSON Encoding = "json"
	// EncodingYAML stores resources as YAML. New files have their keys in
	// sorted order; edits keep a file's layout (see the package
	// documentation).
	EncodingYAML Encoding = "yaml"
)

// Spec configures a template controller. Its JSON form is the "spec" of a
// Controller configuration resource of type template, and reads configuration
// written for the original Cup unchanged:
//
//	{
//	  "directory_template": "{{ .Namespace }}/{{ .Group }}-{{ .Version }}-{{ .Kind }}-*.json",
//	  "path_template": "{{ .Namespace }}/{{ .Group }}-{{ .Version }}-{{ .Kind }}-{{ .Name }}.json"
//	}
//
// Both templates are Go text/template templates executed with the fields
// .Group, .Version, .Kind, .Plural, .Namespace and .Name (all strings) and the
// functions of text/template plus
//
//	replace s old new   strings.ReplaceAll(s, old, new)
//	lower s             strings.ToLower(s)
//	upper s             strings.ToUpper(s)
//	shard s             one of 256 buckets for s, as two hex digits ("3f")
//
// shard spreads a namespace of many thousands of resources over
// directories, so that a write rewrites a small tree rather than one entry
// per resource of the namespace:
//
//	{
//	  "list_template": "items/{{ .Namespace }}/*/*.json",
//	  "resource_template": "items/{{ .Namespace }}/{{ shard .Name }}/{{ .Name }}.json"
//	}
//
// They may use actions, pipelines, if and with, but not range, define, block
// or template: a path template has nothing to loop over.
type Spec struct {
	// ListTemplate renders a glob pattern (see [path.Match]) matching the files
	// of one namespace; List reads every match. It must use .Namespace and must
	// not use .Name. The JSON name directory_template is an alias.
	// Empty means [DefaultListTemplate].
	ListTemplate string `json:"list_template,omitempty"`
	// ResourceTemplate renders the path of one resource's file. It must use
	// .Namespace and .Name, and the pattern of ListTemplate must match the
	// paths it renders. The JSON name path_template is an alias.
	// Empty means [DefaultResourceTemplate].
	ResourceTemplate string `json:"resource_template,omitempty"`
	// Encoding is the file format. Empty means YAML when ResourceTemplate ends
	// in ".yaml" or ".yml" and JSON otherwise.
	Encoding Encoding `json:"encoding,omitempty"`
}

// specFields maps each accepted JSON name to the canonical one.
var specFields = map[string]string{
	"list_template":      "list_template",
	"directory_template": "list_template",
	"resource_template":  "resource_template",
	"path_template":      "resource_template",
	"encoding":           "encoding",
}

// ParseSpec decodes a Spec from JSON. An empty raw or JSON null is the zero
// Spec, which selects the defaults. Unknown fields, duplicate fields, a field
// given under both its name and its alias with different values, values that
// are not strings and unknown encodings are errors. ParseSpec does not look
// inside the templates; [New] does.
func ParseSpec(raw json.RawMessage) (Spec, error) {
	var s Spec
	if len(bytes.TrimSpace(raw)) == 0 {
		return s, nil
	}
	if err := s.UnmarshalJSON(raw); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// UnmarshalJSON implements [json.Unmarshaler] with the rules of [ParseSpec],
// so that a Spec embedded in a larger configuration decodes the same way.
func (s *Spec) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("template spec: %w", err)
	}
	if tok == nil { // null
		*s = Spec{}
		return checkTrailing(dec)
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("template spec: want a JSON object, got %v", tok)
	}
	values := map[string]string{} // by canonical name
	given := map[string]string{}  // canonical name -> name used
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("template spec: %w", err)
		}
		key := tok.(string) // object keys are strings
		canonical, ok := specFields[key]
		if !ok {
			return fmt.Errorf("template spec: unknown field %q (known: list_template or directory_template, resource_template or path_template, encoding)", key)
		}
		var v *string
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("template spec: field %q: want a string: %w", key, err)
		}
		if prev, dup := given[canonical]; dup {
			if prev == key {
				return fmt.Errorf("template spec: field %q given twice", key)
			}
			if v == nil || values[canonical] != *v {
				return fmt.Errorf("template spec: %q and its alias %q conflict; give only one", prev, key)
			}
		}
		given[canonical] = key
		if v != nil {
			values[canonical] = *v
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return fmt.Errorf("template spec: %w", err)
	}
	if err := checkTrailing(dec); err != nil {
		return err
	}
	spec := Spec{
		ListTemplate:     values["list_template"],
		ResourceTemplate: values["resource_template"],
		Encoding:         Encoding(values["encoding"]),
	}
	if spec.Encoding != "" {
		if err := spec.Encoding.check(); err != nil {
			return fmt.Errorf("template spec: %w", err)
		}
	}
	*s = spec
	return nil
}

func checkTrailing(dec *json.Decoder) error {
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("template spec: unexpected data after the object")
	}
	return nil
}

func (e Encoding) check() error {
	switch e {
	case EncodingJSON, EncodingYAML:
		return nil
	}
	return fmt.Errorf("unknown encoding %q (want %q or %q)", string(e), EncodingJSON, EncodingYAML)
}

// withDefaults returns s with its empty fields set to their defaults.
func (s Spec) withDefaults() Spec {
	if s.ListTemplate == "" {
		s.ListTemplate = DefaultListTemplate
	}
	if s.ResourceTemplate == "" {
		s.ResourceTemplate = DefaultResourceTemplate
	}
	if s.Encoding == "" {
		switch strings.ToLower(path.Ext(strings.TrimSpace(s.ResourceTemplate))) {
		case ".yaml", ".yml":
			s.Encoding = EncodingYAML
		default:
			s.Encoding = EncodingJSON
		}
	}
	return s
}
