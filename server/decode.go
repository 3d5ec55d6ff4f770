package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/cup-dev/cup/controller"
)

// decodeResource decodes a resource in the REST form's JSON straight into
// the core's terms, with no message in between: the spec stays the JSON
// the caller sent, unchecked (the core checks it), and the rest fills a
// controller.Resource. Fields go by their JSON names or their proto names
// (apiVersion or api_version), as protojson takes them; a field the
// resource does not have, a field given twice, a value of the wrong type
// and text that is not UTF-8 are errors naming the field as the caller
// wrote it. A null is an absent field.
func decodeResource(body []byte) (*putInput, error) {
	in := &putInput{specField: "resource.spec"}
	r := &in.resource
	var spec json.RawMessage
	var specJSON string
	hasSpec := false
	err := decodeObject(body, "", func(key, field string, v json.RawMessage) error {
		switch field {
		case "apiVersion":
			return decodeString(v, key, &r.APIVersion)
		case "kind":
			return decodeString(v, key, &r.Kind)
		case "metadata":
			return decodeMetadata(v, key, &r.Metadata)
		case "spec":
			spec, hasSpec = v, true
			return nil
		case "specJson":
			return decodeString(v, key, &specJSON)
		}
		if key == "status" {
			// What a GET of a reconciler's primary answers, sent back.
			return errors.New(`unknown field "status": status is derived by reconcilers, never written: leave it out`)
		}
		return fmt.Errorf("unknown field %q", truncate(key, 64))
	})
	if err != nil {
		return nil, err
	}
	switch {
	case specJSON != "" && hasSpec:
		return nil, fieldError("resource.spec_json", "send the spec in spec or in spec_json, not both")
	case specJSON != "":
		r.Spec, in.specField = json.RawMessage(specJSON), "resource.spec_json"
	case hasSpec:
		r.Spec = spec // null too: the core reads it as no spec
	}
	return in, nil
}

// resourceFields maps the names a resource's fields may take in JSON to
// the field, as protojson does: the JSON name and the proto name.
var resourceFields = map[string]string{
	"apiVersion": "apiVersion", "api_version": "apiVersion",
	"kind": "kind", "metadata": "metadata", "spec": "spec",
	"specJson": "specJson", "spec_json": "specJson",
	// metadata
	"namespace": "namespace", "name": "name", "labels": "labels", "annotations": "annotations",
	"resourceVersion": "resourceVersion", "resource_version": "resourceVersion",
}

// decodeObject calls fn with each key of the JSON object b (in path, for
// errors), the field it names (empty for none) and its value, skipping
// nulls. A key given twice, under either of its names, is an error.
func decodeObject(b []byte, path string, fn func(key, field string, v json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		if path == "" {
			return errors.New("the body must be a JSON object")
		}
		return fmt.Errorf("field %q must be a JSON object", path)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if path != "" {
			key = path + "." + key
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		name, _ := tok.(string)
		field := resourceFields[name]
		id := field
		if id == "" {
			id = "?" + name
		}
		if seen[id] {
			return fmt.Errorf("field %q is given twice", truncate(key, 64))
		}
		seen[id] = true
		if string(v) == "null" && field != "spec" {
			continue
		}
		if field != "spec" && !utf8.Valid(v) {
			return fmt.Errorf("field %q holds bytes that are not UTF-8", truncate(key, 64))
		}
		if err := fn(key, field, v); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the resource")
	}
	return nil
}

func decodeMetadata(b json.RawMessage, path string, md *controller.Metadata) error {
	return decodeObject(b, path, func(key, field string, v json.RawMessage) error {
		switch field {
		case "namespace":
			return decodeString(v, key, &md.Namespace)
		case "name":
			return decodeString(v, key, &md.Name)
		case "resourceVersion":
			return decodeString(v, key, &md.ResourceVersion)
		case "labels":
			return decodeStrings(v, key, &md.Labels)
		case "annotations":
			return decodeStrings(v, key, &md.Annotations)
		}
		return fmt.Errorf("unknown field %q", truncate(key, 64))
	})
}

func decodeString(v json.RawMessage, key string, s *string) error {
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, s) != nil {
		return fmt.Errorf("field %q must be a string", truncate(key, 64))
	}
	return nil
}

// decodeStrings decodes a map of strings to strings; a key given twice is
// an error.
func decodeStrings(v json.RawMessage, key string, m *map[string]string) error {
	dec := json.NewDecoder(bytes.NewReader(v))
	bad := fmt.Errorf("field %q must map strings to strings", truncate(key, 64))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return bad
	}
	out := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bad
		}
		k, _ := tok.(string)
		tok, err = dec.Token()
		val, ok := tok.(string)
		if err != nil || !ok {
			return bad
		}
		if _, dup := out[k]; dup {
			return fmt.Errorf("field %q: key %q is given twice", truncate(key, 64), truncate(k, 64))
		}
		out[k] = val
	}
	if len(out) > 0 {
		*m = out
	}
	return nil
}
