package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/cup-dev/cup/internal/document"
)

// SchemaViolation is one way a resource fails its version's schema.
type SchemaViolation struct {
	// Path is the JSON Pointer (RFC 6901) of the offending value within the
	// resource, e.g. "/spec/enabled"; "" is the resource itself. For a
	// missing or unexpected property it is the object holding it.
	Path string
	// Message says what is wrong, e.g. "expected boolean, but got string".
	Message string
}

// String returns the path and the message.
func (v SchemaViolation) String() string {
	path := v.Path
	if path == "" {
		path = "/"
	}
	return path + ": " + v.Message
}

// ValidationError is returned by [Version.Validate] when a resource does not
// match the schema.
type ValidationError struct {
	// Violations are the most specific failures, de-duplicated and sorted by
	// path and message. There is at least one.
	Violations []SchemaViolation
}

// Error lists the violations.
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = v.String()
	}
	return "schema violation: " + strings.Join(parts, "; ")
}

// Validate checks a resource against the version's schema. resource is the
// whole resource as decoded from JSON (map[string]any, with float64 or
// json.Number numbers); when the schema targets the spec only, resource's
// "spec" member is checked. Either way violation paths are relative to the
// resource, so a bad spec field is reported as "/spec/<field>".
//
// A mismatch returns a [*ValidationError]; a resource that is not a JSON
// value (e.g. holds a Go struct) returns another error.
func (v *Version) Validate(resource any) error {
	if v.compiled == nil {
		return fmt.Errorf("config: version %q has no compiled schema; load it with config.Load", v.Name)
	}
	value, prefix := resource, ""
	if v.Target == TargetSpec {
		obj, ok := resource.(map[string]any)
		if !ok {
			return &ValidationError{Violations: []SchemaViolation{{Message: "expected object, but got " + document.JSONKind(resource)}}}
		}
		value, prefix = obj["spec"], "/spec"
	}
	err := v.compiled.Validate(value)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("config: validating against %s: %w", v.Name, err)
	}
	return &ValidationError{Violations: violations(ve, prefix)}
}

// violations flattens a jsonschema error tree into its leaves, which say
// what failed where; inner nodes only say that a subschema failed.
func violations(ve *jsonschema.ValidationError, prefix string) []SchemaViolation {
	seen := map[SchemaViolation]bool{}
	var out []SchemaViolation
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		path := e.InstanceLocation
		if p, err := url.PathUnescape(path); err == nil {
			path = p
		}
		sv := SchemaViolation{Path: prefix + path, Message: e.Message}
		if !seen[sv] {
			seen[sv] = true
			out = append(out, sv)
		}
	}
	walk(ve)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Message < out[j].Message
	})
	return out
}

// errExternalRef is returned by the compiler's loader: schemas are
// self-contained, nothing is fetched from files or the network.
var errExternalRef = errors.New("external references are not allowed; $ref may only point inside the same schema (\"#...\")")

// compileSchema compiles a schema for draft 2020-12 (unless it says
// otherwise in $schema) without loading anything from outside it.
func compileSchema(id string, schema []byte) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(s string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("%s: %w", s, errExternalRef)
	}
	if err := c.AddResource(id, bytes.NewReader(schema)); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "jsonschema: "))
	}
	s, err := c.Compile(id)
	if err != nil {
		// Show references relative to the schema, as written.
		msg := schemaError(err).Error()
		msg = strings.ReplaceAll(msg, id, "")
		msg = strings.ReplaceAll(msg, id[:strings.LastIndexByte(id, '/')+1], "")
		return nil, errors.New(msg)
	}
	return s, nil
}

// schemaError turns a compilation error into a short message: meta-schema
// violations become their paths within the schema.
func schemaError(err error) error {
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		vs := violations(ve, "")
		parts := make([]string, len(vs))
		for i, v := range vs {
			parts[i] = v.String()
		}
		return errors.New(strings.Join(parts, "; "))
	}
	var se *jsonschema.SchemaError
	if errors.As(err, &se) && se.Err != nil {
		err = se.Err
	}
	return errors.New(strings.TrimPrefix(err.Error(), "jsonschema: "))
}

// schemaID is the base URI a version's schema is compiled under. It is never
// fetched; it only shows in messages about references that cannot resolve.
func schemaID(group, version, plural string) string {
	return "https://schemas.cup.invalid/" + group + "/" + version + "/" + plural + ".json"
}
