package config_test

import (
	"reflect"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/internal/config"
)

// columnsDefinition is a definition whose version v1 has the given
// additionalPrinterColumns (YAML, indented as a list under the version).
func columnsDefinition(columns string) fstest.MapFS {
	return fstest.MapFS{"defs.yaml": {Data: []byte(`apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: flags.flipt.io}
spec:
  group: flipt.io
  names: {kind: Flag, singular: flag, plural: flags}
  versions:
    v1:
      schema: {type: object}
      additionalPrinterColumns:
` + columns)}}
}

func TestPrinterColumns(t *testing.T) {
	t.Parallel()
	set, err := config.Load(columnsDefinition(`
      - {name: Enabled, type: boolean, jsonPath: .spec.enabled, description: Whether it is on.}
      - {name: Rollout, type: integer, jsonPath: '.spec.variants[0].weight', priority: 1, format: int32}
      - {name: Created, type: date, jsonPath: '.metadata.annotations.created\.at'}
`), ".")
	if err != nil {
		t.Fatal(err)
	}
	want := []config.PrinterColumn{
		{Name: "Enabled", Type: "boolean", JSONPath: ".spec.enabled", Description: "Whether it is on."},
		{Name: "Rollout", Type: "integer", JSONPath: ".spec.variants[0].weight", Priority: 1, Format: "int32"},
		{Name: "Created", Type: "date", JSONPath: `.metadata.annotations.created\.at`},
	}
	if got := set.Definitions[0].Versions[0].PrinterColumns; !reflect.DeepEqual(got, want) {
		t.Errorf("columns:\n%+v\nwant\n%+v", got, want)
	}
}

func TestPrinterColumnsInvalid(t *testing.T) {
	t.Parallel()
	_, err := config.Load(columnsDefinition(`
      - {type: string, jsonPath: .spec.a}
      - {name: Enabled, type: boolean, jsonPath: .spec.enabled}
      - {name: ENABLED, type: bool, jsonPath: spec.enabled}
      - {name: Rollout, jsonPath: '.spec[', priority: -1}
      - {name: Big, type: integer, jsonPath: .spec.big, priority: 3000000000}
      - {name: NoPath, type: string}
`), ".")
	const at = `defs.yaml: ResourceDefinition "flags.flipt.io": spec.versions.v1.additionalPrinterColumns`
	diffLines(t, problems(t, err), []string{
		at + `[0].name is required`,
		at + `[2].jsonPath "spec.enabled" must start with a dot, e.g. .spec.enabled`,
		at + `[2].name "ENABLED" is used by an earlier column (names are compared case-insensitively, as headings are upper-cased)`,
		at + `[2].type "bool" is not one of integer, number, string, boolean, date`,
		at + `[3].jsonPath ".spec[" does not parse: unterminated array`,
		at + `[3].priority -1 may not be negative`,
		at + `[3].type is required (integer, number, string, boolean, date)`,
		at + `[4].priority 3000000000 is too large (at most 2147483647)`,
		at + `[5].jsonPath is required, e.g. .spec.enabled`,
	})
	_, err = config.Load(columnsDefinition(`
      - {name: Typo, type: string, jsonpath: .spec.x, priority: "1"}
`), ".")
	diffLines(t, problems(t, err), []string{
		`defs.yaml: ResourceDefinition "flags.flipt.io": spec.versions.v1.additionalPrinterColumns[0].priority: expected integer, got string`,
		`defs.yaml: ResourceDefinition "flags.flipt.io": unknown field "spec.versions.v1.additionalPrinterColumns[0].jsonpath" (did you mean "jsonPath"?)`,
	})
}
