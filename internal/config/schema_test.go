package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/internal/config"
)

const schemaDefs = `apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: flags.flipt.io}
spec:
  group: flipt.io
  names: {kind: Flag, singular: flag, plural: flags}
  versions:
    v1:
      schemaTarget: spec
      schema:
        type: object
        required: [enabled]
        properties:
          enabled: {type: boolean}
          rollout: {type: integer, minimum: 0, maximum: 100, multipleOf: 5}
          color: {enum: [red, 1.5]}
          created: {type: string, format: date-time}
          "a/b c": {type: string}
          id:
            anyOf: [{type: string}, {type: integer}]
          twice:
            anyOf: [{type: string, maxLength: 1}, {type: string, maxLength: 1}]
        additionalProperties: false
---
{"apiVersion": "cup.flipt.io/v1alpha1", "kind": "ResourceDefinition", "metadata": {"name": "resources.test.cup.flipt.io"},
 "names": {"kind": "Resource", "singular": "resource", "plural": "resources"},
 "spec": {"group": "test.cup.flipt.io", "versions": {"v1alpha1": {"type": "object",
   "properties": {
     "metadata": {"type": "object", "properties": {"labels": {"type": "object", "required": ["owner"]}}},
     "spec": {"type": "object", "properties": {"foo": {"type": "string"}}, "additionalProperties": false}},
   "additionalProperties": true}}}}
`

func loadVersion(t *testing.T, group, plural, version string) *config.Version {
	t.Helper()
	s, err := config.Parse(fstest.MapFS{"defs.yaml": {Data: []byte(schemaDefs)}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	d, ok := s.Definition(group, plural)
	if !ok {
		t.Fatalf("no definition %s/%s", group, plural)
	}
	v, ok := d.Version(version)
	if !ok {
		t.Fatalf("no version %s", version)
	}
	return v
}

// decoders decode a resource the two ways callers do: plain, giving
// float64 numbers, and with UseNumber, giving json.Number.
var decoders = []struct {
	name   string
	decode func(string) (any, error)
}{
	{"float64", func(s string) (any, error) {
		var v any
		err := json.Unmarshal([]byte(s), &v)
		return v, err
	}},
	{"json.Number", func(s string) (any, error) {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		err := dec.Decode(&v)
		return v, err
	}},
}

func TestValidate(t *testing.T) {
	t.Parallel()
	flags := loadVersion(t, "flipt.io", "flags", "v1")
	resources := loadVersion(t, "test.cup.flipt.io", "resources", "v1alpha1")
	tests := []struct {
		name     string
		version  *config.Version
		resource string
		want     []string // violations; nil for a valid resource
	}{
		{name: "valid", version: flags, resource: `{"apiVersion": "flipt.io/v1", "spec": {"enabled": true, "rollout": 50}}`},
		{name: "integral float is an integer", version: flags, resource: `{"spec": {"enabled": true, "rollout": 1e2}}`},
		{name: "enum holds numbers", version: flags, resource: `{"spec": {"enabled": true, "color": 1.50}}`},
		{
			name:     "wrong type and out of range",
			version:  flags,
			resource: `{"spec": {"enabled": "yes", "rollout": 105}}`,
			want:     []string{"/spec/enabled: expected boolean, but got string", "/spec/rollout: must be <= 100 but found 105"},
		},
		{
			name:     "not an integer",
			version:  flags,
			resource: `{"spec": {"enabled": true, "rollout": 7.5}}`,
			want:     []string{"/spec/rollout: expected integer, but got number"},
		},
		{
			name:     "not a multiple",
			version:  flags,
			resource: `{"spec": {"enabled": true, "rollout": 7}}`,
			want:     []string{"/spec/rollout: 7 not multipleOf 5"},
		},
		{
			name:     "enum",
			version:  flags,
			resource: `{"spec": {"enabled": true, "color": 2}}`,
			want:     []string{`/spec/color: value must be one of "red", "1.5"`},
		},
		{
			name:     "missing and unexpected properties",
			version:  flags,
			resource: `{"spec": {"extra": 1}}`,
			want:     []string{"/spec: additionalProperties 'extra' not allowed", "/spec: missing properties: 'enabled'"},
		},
		{
			name:     "no spec",
			version:  flags,
			resource: `{"metadata": {"name": "a"}}`,
			want:     []string{"/spec: expected object, but got null"},
		},
		{
			name:     "not an object",
			version:  flags,
			resource: `"flag"`,
			want:     []string{"/: expected object, but got string"},
		},
		{
			name:     "format is asserted",
			version:  flags,
			resource: `{"spec": {"enabled": true, "created": "yesterday"}}`,
			want:     []string{"/spec/created: 'yesterday' is not valid 'date-time'"},
		},
		{
			name:     "path is a JSON pointer",
			version:  flags,
			resource: `{"spec": {"enabled": true, "a/b c": 1}}`,
			want:     []string{"/spec/a~1b c: expected string, but got number"},
		},
		{
			name:     "every failing branch, once",
			version:  flags,
			resource: `{"spec": {"enabled": true, "id": false, "twice": "long"}}`,
			want: []string{
				"/spec/id: expected integer, but got boolean",
				"/spec/id: expected string, but got boolean",
				"/spec/twice: length must be <= 1, but got 4",
			},
		},
		{name: "whole resource valid", version: resources, resource: `{"kind": "Resource", "metadata": {"labels": {"owner": "me"}}, "spec": {"foo": "x"}}`},
		{
			name:     "whole resource",
			version:  resources,
			resource: `{"metadata": {"labels": {}}, "spec": {"foo": 1, "bar": 2}}`,
			want: []string{
				"/metadata/labels: missing properties: 'owner'",
				"/spec: additionalProperties 'bar' not allowed",
				"/spec/foo: expected string, but got number",
			},
		},
	}
	for _, tt := range tests {
		for _, dec := range decoders {
			t.Run(tt.name+"/"+dec.name, func(t *testing.T) {
				t.Parallel()
				resource, err := dec.decode(tt.resource)
				if err != nil {
					t.Fatal(err)
				}
				err = tt.version.Validate(resource)
				if tt.want == nil {
					if err != nil {
						t.Fatalf("Validate: %v", err)
					}
					return
				}
				var ve *config.ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("Validate = %v (%T), want *config.ValidationError", err, err)
				}
				var got []string
				for _, v := range ve.Violations {
					got = append(got, v.String())
				}
				diffLines(t, got, tt.want)
				if want := "schema violation: " + strings.Join(tt.want, "; "); err.Error() != want {
					t.Errorf("Error() = %q, want %q", err.Error(), want)
				}
			})
		}
	}
}

func TestValidateNotJSON(t *testing.T) {
	t.Parallel()
	flags := loadVersion(t, "flipt.io", "flags", "v1")
	tests := []struct {
		name     string
		version  *config.Version
		resource any
		want     string
	}{
		{
			name:     "Go value that JSON decoding never yields",
			version:  flags,
			resource: map[string]any{"spec": map[string]string{"enabled": "true"}},
			want:     "invalid jsonType: map[string]string",
		},
		{
			name:     "version not loaded",
			version:  &config.Version{Name: "v1"},
			resource: map[string]any{},
			want:     "no compiled schema",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.version.Validate(tt.resource)
			var ve *config.ValidationError
			if err == nil || errors.As(err, &ve) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want a plain error containing %q", err, tt.want)
			}
		})
	}
}

func TestValidateConcurrently(t *testing.T) {
	t.Parallel()
	flags := loadVersion(t, "flipt.io", "flags", "v1")
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			for j := range 50 {
				resource := map[string]any{"spec": map[string]any{"enabled": j%2 == 0, "rollout": json.Number(fmt.Sprint(j))}}
				err := flags.Validate(resource)
				if wantErr := j%5 != 0; (err != nil) != wantErr {
					t.Errorf("rollout %d: Validate = %v", j, err)
				}
			}
		})
	}
}

func TestSchemaTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		version string // a version's JSON in a ResourceDefinition
		legacy  bool   // apiVersion cup.flipt.io/v1alpha1: the version is the bare schema
		want    config.SchemaTarget
	}{
		{"original: properties.spec means the whole resource", `{"type": "object", "properties": {"spec": {"type": "object"}}}`, true, config.TargetResource},
		{"original: otherwise the spec", `{"type": "object", "properties": {"key": {"type": "string"}}}`, true, config.TargetSpec},
		{"original: boolean schema", `true`, true, config.TargetSpec},
		{"inferred", `{"schema": {"properties": {"spec": {}}}}`, false, config.TargetResource},
		{"explicit resource", `{"schemaTarget": "resource", "schema": {"required": ["metadata"]}}`, false, config.TargetResource},
		{"explicit spec with a spec field", `{"schemaTarget": "spec", "schema": {"properties": {"spec": {"type": "string"}}}}`, false, config.TargetSpec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			apiVersion := config.APIVersion
			if tt.legacy {
				apiVersion = config.LegacyAPIVersion
			}
			doc := fmt.Sprintf(`{"apiVersion": %q, "kind": "ResourceDefinition", "metadata": {"name": "things.example.com"},
				"spec": {"group": "example.com", "names": {"kind": "Thing", "singular": "thing", "plural": "things"},
				"versions": {"v1": %s}}}`, apiVersion, tt.version)
			s, err := config.Load(fstest.MapFS{"d.json": {Data: []byte(doc)}}, ".")
			if err != nil {
				t.Fatal(err)
			}
			v := s.Definitions[0].Versions[0]
			if v.Target != tt.want {
				t.Errorf("Target = %q, want %q", v.Target, tt.want)
			}
			if !json.Valid(v.Schema) || bytes.HasPrefix(v.Schema, []byte(`{"schema"`)) {
				t.Errorf("Schema = %s, want the JSON Schema alone", v.Schema)
			}
		})
	}
}

func TestSchemaSelfContained(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		schema  string
		wantErr string // "" when the schema must compile
	}{
		{"internal $ref", `{"$ref": "#/$defs/a", "$defs": {"a": {"type": "object"}}}`, ""},
		{"known draft in $schema", `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}`, ""},
		{"file $ref", `{"$ref": "file:///etc/passwd"}`, "file:///etc/passwd: external references are not allowed"},
		{"relative $ref", `{"properties": {"a": {"$ref": "common.json#/$defs/a"}}}`, "common.json: external references are not allowed"},
		{"unknown meta-schema", `{"$schema": "https://example.com/meta.json"}`, "https://example.com/meta.json: external references are not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := fmt.Sprintf(`{"apiVersion": "cup.dev/v1alpha1", "kind": "ResourceDefinition", "metadata": {"name": "things.example.com"},
				"spec": {"group": "example.com", "names": {"kind": "Thing", "singular": "thing", "plural": "things"},
				"versions": {"v1": {"schema": %s}}}}`, tt.schema)
			_, err := config.Load(fstest.MapFS{"d.json": {Data: []byte(doc)}}, ".")
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			want := `d.json: ResourceDefinition "things.example.com": spec.versions.v1.schema: invalid JSON Schema: ` + tt.wantErr
			if got := problems(t, err); len(got) != 1 || !strings.HasPrefix(got[0], want) {
				t.Errorf("problems = %q, want one starting with %q", got, want)
			}
		})
	}
}
