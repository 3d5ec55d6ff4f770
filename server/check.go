package server

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/document"
)

// checkResource checks that the resource a put sends agrees with the
// names the call gives, fills in what it leaves empty, puts its spec in
// the form it is stored in, and validates it against the type's schema.
func (s *Server) checkResource(t *Type, at ref, in *putInput) (*controller.Resource, error) {
	sent := &in.resource
	apiVersion := t.Group + "/" + t.Version
	var vs []FieldViolation
	mismatch := func(field, got, want, what string) {
		if got != "" && got != want {
			vs = append(vs, FieldViolation{Field: field, Description: fmt.Sprintf("%q does not match the request's %s %q", got, what, want)})
		}
	}
	mismatch("resource.api_version", sent.APIVersion, apiVersion, "group/version")
	mismatch("resource.kind", sent.Kind, t.Kind, "kind")
	mismatch("resource.metadata.namespace", sent.Metadata.Namespace, at.namespace, "namespace")
	mismatch("resource.metadata.name", sent.Metadata.Name, at.name, "name")
	if len(vs) > 0 {
		return nil, invalidArgument(vs...)
	}
	r := &controller.Resource{
		APIVersion: apiVersion,
		Kind:       t.Kind,
		Metadata: controller.Metadata{
			Namespace:   at.namespace,
			Name:        at.name,
			Labels:      sent.Metadata.Labels,
			Annotations: sent.Metadata.Annotations,
		},
	}
	field := cmp.Or(in.field, "resource")
	specField := cmp.Or(in.specField, field+".spec")
	if sent.Spec != nil {
		if in.specSorted {
			r.Spec = sent.Spec
		} else {
			spec, err := compactSpec(sent.Spec)
			if err != nil {
				return nil, fieldError(specField, "%v", err)
			}
			r.Spec = spec
		}
	}
	// What a write stores is the indented file form, which a deeply nested
	// spec makes many times larger than the request: bound it before
	// anything encodes it.
	if n := fileSize(r); n > s.cfg.maxResource {
		return nil, fieldError(field, "stored as a file it would take %d bytes with indentation, more than the limit of %d (cupd --max-resource-bytes): nest less deeply or split the resource", n, s.cfg.maxResource)
	}
	// A spec sent as JSON is stored with its keys sorted, as one sent as a
	// Struct is, so that the same content makes the same file and
	// resourceVersion over every protocol; its numbers stay as written.
	// The decoded spec is what the schema sees.
	var spec any
	if r.Spec != nil && (!in.specSorted || t.Validate != nil) {
		if err := decodeNumber(r.Spec, &spec); err != nil {
			return nil, fieldError(specField, "%v", err)
		}
	}
	if r.Spec != nil && !in.specSorted {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(spec); err != nil {
			return nil, fieldError(specField, "%v", err)
		}
		r.Spec = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	}
	if t.Validate == nil {
		return r, nil
	}
	if v := t.Validate(resourceDoc(r, spec)); len(v) > 0 {
		for i := range v {
			v[i].Field = strings.TrimSuffix(in.fieldPrefix()+v[i].Field, ".")
			v[i].Description = "schema violation: " + v[i].Description
		}
		return nil, invalidArgument(v...)
	}
	return r, nil
}

// resourceDoc is r as the schema sees it: its JSON form decoded, numbers
// as json.Number, with spec the decoded r.Spec. It is built directly
// rather than by encoding r and decoding the result.
func resourceDoc(r *controller.Resource, spec any) map[string]any {
	meta := map[string]any{"name": r.Metadata.Name}
	if r.Metadata.Namespace != "" {
		meta["namespace"] = r.Metadata.Namespace
	}
	for _, f := range [...]struct {
		key string
		m   map[string]string
	}{{"labels", r.Metadata.Labels}, {"annotations", r.Metadata.Annotations}} {
		if len(f.m) == 0 {
			continue
		}
		m := make(map[string]any, len(f.m))
		for k, v := range f.m {
			m[k] = v
		}
		meta[f.key] = m
	}
	doc := map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "metadata": meta}
	if len(r.Spec) > 0 {
		doc["spec"] = spec
	}
	return doc
}

// depthError is the error for a resource nested past the limit, at field.
func (s *Server) depthError(field string) error {
	return fieldError(field, "objects and arrays nested more than %d deep, counting the resource as 1 (cupd --max-json-depth)", s.cfg.maxDepth)
}

// fileSize is the size of r's file form (MarshalFile's indented JSON),
// computed from its compact spec without encoding it: every non-empty
// object or array, every comma and every closing bracket of a non-empty
// one starts a line indented two spaces a level, and every colon gains a
// space. The metadata is counted as if compact and indented at the deepest
// level it has, which is more than it takes, and so are the characters
// encoding/json escapes.
func fileSize(r *controller.Resource) int64 {
	n := int64(len(r.APIVersion)+len(r.Kind)+len(r.Metadata.Namespace)+len(r.Metadata.Name)) + 128
	for _, m := range []map[string]string{r.Metadata.Labels, r.Metadata.Annotations} {
		for k, v := range m {
			n += int64(2*len(k)+2*len(v)) + 16 // escapes may double them
		}
	}
	spec := r.Spec
	n += int64(len(spec)) + 3*int64(bytes.Count(spec, []byte{0xe2})) // U+2028 and U+2029 are escaped
	newline := func(d int) { n += 1 + 2*int64(d) }
	// The spec is a field of the resource, one level in.
	document.Structure(spec, func(i int, c byte, depth int) bool {
		switch c {
		case ':':
			n++
		case '{', '[':
			if i+1 < len(spec) && spec[i+1] != '}' && spec[i+1] != ']' {
				newline(depth + 1)
			}
		case '}', ']':
			if i > 0 && spec[i-1] != '{' && spec[i-1] != '[' {
				newline(depth + 1)
			}
		case ',':
			newline(depth + 1)
		}
		return true
	})
	return n
}

// compactSpec checks a spec sent as JSON, which must be an object or null
// in valid UTF-8, and returns it compacted; nil for null.
func compactSpec(raw json.RawMessage) (json.RawMessage, error) {
	var b bytes.Buffer
	b.Grow(len(raw))
	if err := json.Compact(&b, raw); err != nil {
		return nil, err
	}
	switch c := b.Bytes(); {
	case string(c) == "null":
		return nil, nil
	case c[0] != '{':
		return nil, errors.New("must be a JSON object")
	case !utf8.Valid(c):
		return nil, errors.New("holds bytes that are not UTF-8")
	default:
		return c, nil
	}
}

func decodeNumber(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}
