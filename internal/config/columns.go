package config

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"k8s.io/client-go/util/jsonpath"
)

// PrinterColumn is one of a version's additionalPrinterColumns: a column
// cup get shows besides NAME and AGE, as a CustomResourceDefinition has
// them.
type PrinterColumn struct {
	// Name is the column's heading as written, e.g. "Enabled" (cup get
	// upper-cases it). It is unique within the version.
	Name string
	// Type is one of integer, number, string, boolean or date.
	Type string
	// JSONPath is a simple JSONPath into the resource, starting with a
	// dot, e.g. ".spec.enabled".
	JSONPath string
	// Description is shown by cup explain.
	Description string
	// Priority is 0 for a column shown always, more for one shown only
	// with -o wide.
	Priority int32
	// Format is an optional hint, as OpenAPI's format.
	Format string
}

// printerColumnDoc is an entry of additionalPrinterColumns as written.
type printerColumnDoc struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	JSONPath    string `json:"jsonPath"`
	Description string `json:"description"`
	Priority    int64  `json:"priority"`
	Format      string `json:"format"`
}

// printerColumnTypes are the types a printer column may have, as
// Kubernetes allows them.
var printerColumnTypes = []string{"integer", "number", "string", "boolean", "date"}

// newPrinterColumns checks the additionalPrinterColumns of the version at
// path p (e.g. "spec.versions.v1alpha1").
func newPrinterColumns(p string, docs []printerColumnDoc) ([]PrinterColumn, []string) {
	var (
		cols []PrinterColumn
		msgs []string
		seen = map[string]bool{}
	)
	for i, d := range docs {
		at := fmt.Sprintf("%s.additionalPrinterColumns[%d]", p, i)
		switch {
		case d.Name == "":
			msgs = append(msgs, at+".name is required")
		case seen[strings.ToLower(d.Name)]:
			msgs = append(msgs, fmt.Sprintf("%s.name %q is used by an earlier column (names are compared case-insensitively, as headings are upper-cased)", at, d.Name))
		}
		seen[strings.ToLower(d.Name)] = true
		switch {
		case d.Type == "":
			msgs = append(msgs, fmt.Sprintf("%s.type is required (%s)", at, strings.Join(printerColumnTypes, ", ")))
		case !slices.Contains(printerColumnTypes, d.Type):
			msgs = append(msgs, fmt.Sprintf("%s.type %q is not one of %s", at, d.Type, strings.Join(printerColumnTypes, ", ")))
		}
		if msg := checkColumnPath(d.JSONPath); msg != "" {
			msgs = append(msgs, fmt.Sprintf("%s.jsonPath %s", at, msg))
		}
		switch {
		case d.Priority < 0:
			msgs = append(msgs, fmt.Sprintf("%s.priority %d may not be negative", at, d.Priority))
		case d.Priority > math.MaxInt32:
			msgs = append(msgs, fmt.Sprintf("%s.priority %d is too large (at most %d)", at, d.Priority, math.MaxInt32))
		}
		cols = append(cols, PrinterColumn{Name: d.Name, Type: d.Type, JSONPath: d.JSONPath,
			Description: d.Description, Priority: int32(d.Priority), Format: d.Format})
	}
	return cols, msgs
}

// checkColumnPath returns what is wrong with a printer column's JSONPath,
// or "": as Kubernetes checks a CRD's, it must start with a dot and parse
// as the inside of a JSONPath template ({...}).
func checkColumnPath(p string) string {
	switch {
	case p == "":
		return "is required, e.g. .spec.enabled"
	case !strings.HasPrefix(p, "."):
		return fmt.Sprintf("%q must start with a dot, e.g. .spec.enabled", p)
	}
	if _, err := jsonpath.Parse("column", "{"+p+"}"); err != nil {
		return fmt.Sprintf("%q does not parse: %v", p, err)
	}
	return ""
}
