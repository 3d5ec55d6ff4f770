package rbac

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/cup-dev/cup/internal/document"
)

// shape checks documents against the document types in load.go.
var shape = document.NewShape(document.WithUnknownField(unknownField), document.WithYAMLBooleanHint())

func reflectType(v any) reflect.Type { return reflect.TypeOf(v).Elem() }

// unknownField describes the unknown field key of the object at path, whose
// fields are known.
func unknownField(path, key string, known []string) string {
	msg := fmt.Sprintf("unknown field %q", document.JoinPath(path, key))
	if key == "apiGroup" {
		return msg + " (policy resources name roles and subjects without an API group; remove it)"
	}
	if key == "spec" {
		return msg + " (rules, subjects and roleRef sit at the top level, as in Kubernetes)"
	}
	for _, name := range known {
		if strings.EqualFold(name, key) || strings.EqualFold(name, key+"s") || strings.EqualFold(name+"s", key) {
			return msg + fmt.Sprintf(" (did you mean %q?)", name)
		}
	}
	return msg + " (want " + strings.Join(known, ", ") + ")"
}
