package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/document"
)

// checkResource checks that the body of a put agrees with the request, fills
// in what it leaves empty, and validates it against the type's schema. The
// spec is rawSpec when that is not nil (JSON as the caller sent it, nesting
// checked already), else the request's.
func (s *Server) checkResource(t *Type, req *cupv1alpha1.PutRequest, rawSpec json.RawMessage) (*controller.Resource, error) {
	in := req.Resource
	apiVersion := t.Group + "/" + t.Version
	var vs []FieldViolation
	mismatch := func(field, got, want, what string) {
		if got != "" && got != want {
			vs = append(vs, FieldViolation{Field: field, Description: fmt.Sprintf("%q does not match the request's %s %q", got, what, want)})
		}
	}
	mismatch("resource.api_version", in.GetApiVersion(), apiVersion, "group/version")
	mismatch("resource.kind", in.GetKind(), t.Names.Kind, "kind")
	mismatch("resource.metadata.namespace", in.GetMetadata().GetNamespace(), req.Namespace, "namespace")
	mismatch("resource.metadata.name", in.GetMetadata().GetName(), req.Name, "name")
	if len(vs) > 0 {
		return nil, invalidArgument(vs...)
	}
	r := &controller.Resource{
		APIVersion: apiVersion,
		Kind:       t.Names.Kind,
		Metadata: controller.Metadata{
			Namespace:   req.Namespace,
			Name:        req.Name,
			Labels:      in.GetMetadata().GetLabels(),
			Annotations: in.GetMetadata().GetAnnotations(),
		},
	}
	// A spec sent as spec_json is JSON, as the REST form's is.
	specField := "resource.spec"
	if j := in.GetSpecJson(); j != "" {
		if rawSpec != nil || in.GetSpec() != nil {
			return nil, fieldError("resource.spec_json", "send the spec in spec or in spec_json, not both")
		}
		// The resource is depth 1, its spec 2.
		if document.CheckDepth([]byte(j), s.cfg.maxDepth-1) != nil {
			return nil, s.depthError("resource.spec_json")
		}
		rawSpec, specField = json.RawMessage(j), "resource.spec_json"
	}
	switch {
	case rawSpec != nil:
		spec, err := compactSpec(rawSpec)
		if err != nil {
			return nil, fieldError(specField, "%v", err)
		}
		r.Spec = spec
	case in.GetSpec() != nil:
		// The resource is depth 1, its spec 2.
		if d := structDepth(in.GetSpec(), 2, s.cfg.maxDepth); d > s.cfg.maxDepth {
			return nil, s.depthError("resource.spec")
		}
		b, err := protojson.Marshal(in.GetSpec())
		if err != nil {
			return nil, fieldError("resource.spec", "%v", err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			return nil, fieldError("resource.spec", "%v", err)
		}
		r.Spec = compact.Bytes()
	}
	// What a write stores is the indented file form, which a deeply nested
	// spec makes many times larger than the request: bound it before
	// anything encodes it.
	if n := fileSize(r); n > s.cfg.maxResource {
		return nil, fieldError("resource", "stored as a file it would take %d bytes with indentation, more than the limit of %d (cupd --max-resource-bytes): nest less deeply or split the resource", n, s.cfg.maxResource)
	}
	// A spec sent as JSON is stored with its keys sorted, as one sent as a
	// Struct is, so that the same content makes the same file and
	// resourceVersion over every protocol; its numbers stay as written.
	var spec any
	if rawSpec != nil && r.Spec != nil {
		if err := decodeNumber(r.Spec, &spec); err != nil {
			return nil, fieldError(specField, "%v", err)
		}
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
	// Validated in its compact form: the schema sees the same values.
	withoutSpec := *r
	if spec != nil {
		withoutSpec.Spec = nil
	}
	b, err := json.Marshal(&withoutSpec)
	if err != nil {
		return nil, fieldError("resource", "%v", err)
	}
	var doc any
	if err := decodeNumber(b, &doc); err != nil {
		return nil, fieldError("resource", "%v", err)
	}
	if spec != nil {
		doc.(map[string]any)["spec"] = spec
	}
	if v := t.Validate(doc); len(v) > 0 {
		for i := range v {
			v[i].Field = strings.TrimSuffix("resource."+v[i].Field, ".")
			v[i].Description = "schema violation: " + v[i].Description
		}
		return nil, invalidArgument(v...)
	}
	return r, nil
}

// depthError is the error for a resource nested past the limit, at field.
func (s *Server) depthError(field string) error {
	return fieldError(field, "objects and arrays nested more than %d deep, counting the resource as 1 (cupd --max-json-depth)", s.cfg.maxDepth)
}

// structDepth returns the depth of the deepest object or array in st, st
// itself being at depth d, or a number past limit as soon as it finds one.
func structDepth(st *structpb.Struct, d, limit int) int {
	deepest := d
	for _, v := range st.GetFields() {
		if deepest = max(deepest, valueDepth(v, d, limit)); deepest > limit {
			return deepest
		}
	}
	return deepest
}

// valueDepth is structDepth for a value held at depth d.
func valueDepth(v *structpb.Value, d, limit int) int {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		return structDepth(k.StructValue, d+1, limit)
	case *structpb.Value_ListValue:
		deepest := d + 1
		for _, e := range k.ListValue.GetValues() {
			if deepest = max(deepest, valueDepth(e, d+1, limit)); deepest > limit {
				return deepest
			}
		}
		return deepest
	}
	return d
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

func structFromJSON(b []byte) (*structpb.Struct, error) {
	var st structpb.Struct
	if err := protojson.Unmarshal(b, &st); err != nil {
		return nil, err
	}
	return &st, nil
}
