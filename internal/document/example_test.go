package document_test

import (
	"fmt"
	"reflect"

	"github.com/cup-dev/cup/internal/document"
)

// Example reads a YAML stream, reports its problems with their lines, and
// checks each document's shape.
func Example() {
	type widget struct {
		Name  string   `json:"name"`
		Sizes []string `json:"sizes"`
	}
	data := []byte(`name: a
sizes: [s, m]
---
name: b
colour: red
sizes:
- s
- 1
---
name: c
 sizes: []
`)
	shape := document.NewShape()
	for _, doc := range document.SplitYAML(data) {
		js, err := doc.JSON()
		if err != nil {
			fmt.Printf("widgets.yaml: invalid YAML: %v\n", err)
			continue
		}
		v, _ := document.Decode(js)
		for _, p := range shape.Check("", v, reflect.TypeFor[widget]()) {
			fmt.Printf("widgets.yaml:%d: %s\n", doc.Locator().Line(p.Path), p.Message)
		}
	}
	// Output:
	// widgets.yaml:5: unknown field "colour"
	// widgets.yaml:8: sizes[1]: expected string, got number
	// widgets.yaml: invalid YAML: line 11: mapping values are not allowed in this context
}
