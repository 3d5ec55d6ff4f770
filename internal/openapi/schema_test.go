package openapi_test

import (
	"encoding/json"
	"testing"

	"github.com/cup-dev/cup/internal/openapi"
)

func TestConvert(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, schema string
		want         string // the root, then each other component by name
		components   map[string]string
	}{
		{"kept as it is", `{"type": "object", "required": ["a"], "properties": {"a": {"type": "string", "pattern": "^a+$", "maxLength": 3, "default": "a"}}, "additionalProperties": false}`,
			`{"additionalProperties":false,"properties":{"a":{"default":"a","maxLength":3,"pattern":"^a+$","type":"string"}},"required":["a"],"type":"object"}`, nil},
		{"const", `{"const": "x"}`, `{"enum":["x"]}`, nil},
		{"const null", `{"const": null}`, `{"enum":[null],"nullable":true}`, nil},
		{"type with null", `{"type": ["string", "null"], "minLength": 1}`, `{"minLength":1,"nullable":true,"type":"string"}`, nil},
		{"types", `{"type": ["integer", "array", "null"]}`, `{"anyOf":[{"nullable":true,"type":"integer"},{"items":{},"type":"array"}]}`, nil},
		{"types and anyOf", `{"type": ["integer", "string"], "anyOf": [{"minimum": 1}, {"minLength": 1}]}`,
			`{"allOf":[{"anyOf":[{"minimum":1},{"minLength":1}]},{"anyOf":[{"type":"integer"},{"type":"string"}]}]}`, nil},
		{"exact numbers", `{"minimum": 0.1000000000000000055511151231257827, "maximum": 12345678901234567890}`,
			`{"maximum":12345678901234567890,"minimum":0.1000000000000000055511151231257827}`, nil},
		{"exclusive bounds", `{"exclusiveMinimum": 0, "exclusiveMaximum": 10}`, `{"exclusiveMaximum":true,"exclusiveMinimum":true,"maximum":10,"minimum":0}`, nil},
		{"the stricter bound wins", `{"minimum": 5, "exclusiveMinimum": 3, "maximum": 9, "exclusiveMaximum": 9}`,
			`{"exclusiveMaximum":true,"maximum":9,"minimum":5}`, nil},
		{"draft 4 bounds", `{"minimum": 1, "exclusiveMinimum": true}`, `{"exclusiveMinimum":true,"minimum":1}`, nil},
		{"boolean schemas", `{"properties": {"a": true, "b": false}}`, `{"properties":{"a":{},"b":{"not":{}}}}`, nil},
		{"array without items", `{"type": "array"}`, `{"items":{},"type":"array"}`, nil},
		{"tuple", `{"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}`,
			`{"items":{"anyOf":[{"type":"string"},{"type":"integer"}]},"maxItems":2,"type":"array"}`, nil},
		{"draft-07 tuple with more", `{"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}], "additionalItems": {"type": "integer"}}`,
			`{"items":{"anyOf":[{"type":"string"},{"type":"integer"}]}}`, nil},
		{"patternProperties", `{"patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": false}`,
			`{"additionalProperties":{"anyOf":[{"type":"string"}]}}`, nil},
		{"patternProperties alone", `{"patternProperties": {"^x-": {"type": "string"}}}`, `{}`, nil},
		{"examples", `{"examples": [1, 2]}`, `{"example":1}`, nil},
		{"dropped", `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x", "$comment": "c", "if": {}, "then": {}, "dependentRequired": {"a": ["b"]}, "x-keep": 1}`,
			`{"x-keep":1}`, nil},
		{"empty enum and required", `{"enum": [], "required": []}`, `{"not":{}}`, nil},
		{"oneOf with a loosened branch", `{"oneOf": [{"required": ["a"], "propertyNames": {"maxLength": 1}}, {"required": ["b"]}]}`,
			`{"anyOf":[{"required":["a"]},{"required":["b"]}]}`, nil},
		{"oneOf kept", `{"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}`, `{"oneOf":[{"required":["a"]},{"required":["b"]}]}`, nil},
		{"not of a loosened schema", `{"type": "object", "not": {"if": {"required": ["a"]}}}`, `{"type":"object"}`, nil},
		{"not kept", `{"not": {"required": ["a"]}}`, `{"not":{"required":["a"]}}`, nil},
		{"$defs", `{"properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"const": 1}}}`,
			`{"properties":{"a":{"$ref":"#/components/schemas/R.a"}}}`, map[string]string{"R.a": `{"enum":[1]}`}},
		{"draft-07 definitions, siblings ignored", `{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"$ref": "#/definitions/a b", "description": "x"}}, "definitions": {"a b": {"type": "string"}}}`,
			`{"properties":{"a":{"$ref":"#/components/schemas/R.a_b"}}}`, map[string]string{"R.a_b": `{"type":"string"}`}},
		{"2020-12 siblings apply", `{"properties": {"a": {"$ref": "#/$defs/a", "description": "x"}}, "$defs": {"a": {"type": "string"}}}`,
			`{"properties":{"a":{"allOf":[{"$ref":"#/components/schemas/R.a"}],"description":"x"}}}`, map[string]string{"R.a": `{"type":"string"}`}},
		{"cycle to the root", `{"properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}`,
			`{"properties":{"children":{"items":{"$ref":"#/components/schemas/R"},"type":"array"}}}`, nil},
		{"anchor", `{"properties": {"a": {"$ref": "#c"}}, "$defs": {"color": {"$anchor": "c", "enum": ["red"]}}}`,
			`{"properties":{"a":{"$ref":"#/components/schemas/R.color"}}}`, map[string]string{"R.color": `{"enum":["red"]}`}},
		{"pointer into properties", `{"properties": {"a": {"type": "integer"}, "b": {"$ref": "#/properties/a"}}}`,
			`{"properties":{"a":{"type":"integer"},"b":{"$ref":"#/components/schemas/R.properties.a"}}}`, map[string]string{"R.properties.a": `{"type":"integer"}`}},
		{"mutual recursion under not", `{"$defs": {"a": {"not": {"$ref": "#/$defs/b"}}, "b": {"properties": {"x": {"$ref": "#/$defs/a"}}}}, "$ref": "#/$defs/a"}`,
			`{"$ref":"#/components/schemas/R.a"}`, map[string]string{"R.a": `{}`, "R.b": `{"properties":{"x":{"$ref":"#/components/schemas/R.a"}}}`}},
		{"a reference that cannot be followed", `{"$ref": "#/$defs/missing"}`, `{}`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			comps := openapi.Components{}
			comps.Claim("R")
			got, err := openapi.Convert([]byte(c.schema), "R", comps)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(got); string(b) != c.want {
				t.Errorf("Convert(%s)\n got %s\nwant %s", c.schema, b, c.want)
			}
			for name, want := range c.components {
				if b, _ := json.Marshal(comps[name]); string(b) != want {
					t.Errorf("component %s = %s, want %s", name, b, want)
				}
			}
			if len(comps) != 1+len(c.components) {
				t.Errorf("components %v", comps)
			}
		})
	}
}

func TestConvertRefuses(t *testing.T) {
	t.Parallel()
	deep := ""
	for range 300 {
		deep += `{"not":`
	}
	deep += "{}"
	for range 300 {
		deep += "}"
	}
	for _, s := range []string{`[]`, `{"properties": 1}`, `{"minimum": "1"}`, `{"allOf": {}}`, deep, `{`} {
		if _, err := openapi.Convert([]byte(s), "R", openapi.Components{}); err == nil {
			t.Errorf("Convert(%.40s) succeeded", s)
		}
	}
}
