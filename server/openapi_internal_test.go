package server

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cup-dev/cup/controller"
)

// BenchmarkBuildOpenAPI builds the document of a group/version of n types
// with the demo's Flag schema and every operation the REST form serves,
// as a cache miss does.
func BenchmarkBuildOpenAPI(b *testing.B) {
	schema := json.RawMessage(`{"type": "object", "required": ["enabled"], "additionalProperties": false, "properties": {
		"description": {"type": "string", "maxLength": 500}, "enabled": {"type": "boolean"},
		"rollout": {"description": "Percentage of requests that see the flag on.", "type": "integer", "minimum": 0, "maximum": 100},
		"variants": {"type": "array", "items": {"type": "object", "required": ["key"], "additionalProperties": false,
			"properties": {"key": {"type": "string", "pattern": "^[a-z0-9-]+$"}, "weight": {"type": "integer", "minimum": 0}}}}}}`)
	write := []string{"revision", "message", "dryRun", "idempotencyKey", "resourceVersion", "changeSet"}
	ops := []restOperation{
		{method: "GET", path: collectionPath, params: []string{"revision", "labelSelector", "continue", "limit", "problems"}, watchParams: watchParams},
		{method: "GET", path: allNamespacesPath, params: []string{"revision", "labelSelector", "continue", "limit", "problems"}, watchParams: watchParams},
		{method: "GET", path: itemPath, params: []string{"revision"}},
		{method: "PUT", path: itemPath, params: write},
		{method: "PATCH", path: itemPath, params: write},
		{method: "DELETE", path: itemPath, params: write},
		{method: "GET", path: statusPath, params: []string{"revision"}},
		{method: "GET", path: historyPath, params: []string{"until", "since", "limit", "continue"}},
		{method: "GET", path: renderPath, params: []string{"revision"}},
	}
	for _, n := range []int{1, 10, 100} {
		types := make([]*Type, n)
		for i := range types {
			types[i] = &Type{
				Type:   controller.Type{Group: "flags.cup.dev", Version: "v1alpha1", Kind: fmt.Sprintf("Flag%d", i), Plural: fmt.Sprintf("flags%d", i)},
				Schema: schema, SchemaTarget: "spec", Singular: "flag",
			}
		}
		b.Run(fmt.Sprintf("types=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			size := 0
			for b.Loop() {
				doc, err := buildOpenAPI("flags.cup.dev", "v1alpha1", types, ops)
				if err != nil {
					b.Fatal(err)
				}
				size = len(doc)
			}
			b.ReportMetric(float64(size), "bytes/doc")
		})
	}
}
