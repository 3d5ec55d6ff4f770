package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cup-dev/cup/controller"
)

// parsePath parses a dotted path of object fields.
func parsePath(p string) ([]string, error) {
	if p == "" {
		return nil, errors.New("required, e.g. spec.selector")
	}
	parts := strings.Split(p, ".")
	for _, s := range parts {
		if s == "" {
			return nil, fmt.Errorf("%q has an empty field name", p)
		}
	}
	if parts[0] != "spec" && parts[0] != "metadata" {
		return nil, fmt.Errorf("%q does not start with spec. or metadata.", p)
	}
	return parts, nil
}

// ValueAt returns the JSON value at a dotted path (spec.… or metadata.…)
// in res, as the mappers read it (numbers as json.Number); nil where there
// is none.
func ValueAt(res *controller.Resource, path string) any {
	parts, err := parsePath(path)
	if err != nil {
		return nil
	}
	var cur any
	switch parts[0] {
	case "spec":
		if len(res.Spec) == 0 {
			return nil
		}
		dec := json.NewDecoder(bytes.NewReader(res.Spec))
		dec.UseNumber()
		if dec.Decode(&cur) != nil {
			return nil
		}
	case "metadata":
		m := map[string]any{"namespace": res.Metadata.Namespace, "name": res.Metadata.Name}
		if res.Metadata.Labels != nil {
			m["labels"] = toAny(res.Metadata.Labels)
		}
		if res.Metadata.Annotations != nil {
			m["annotations"] = toAny(res.Metadata.Annotations)
		}
		cur = m
	}
	for _, p := range parts[1:] {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// namesAt returns the names the value at path holds: a string, or a list
// of strings (other values are skipped).
func namesAt(res *controller.Resource, path string) []string {
	switch v := ValueAt(res, path).(type) {
	case string:
		if v != "" {
			return []string{v}
		}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// matchLabels reads the label selector at path: {"matchLabels": {...}}.
// An empty selector matches everything in the namespace.
func matchLabels(res *controller.Resource, path string) (map[string]string, bool) {
	m, ok := ValueAt(res, path).(map[string]any)
	if !ok {
		return nil, false
	}
	out := map[string]string{}
	if ml, ok := m["matchLabels"].(map[string]any); ok {
		for k, v := range ml {
			s, ok := v.(string)
			if !ok {
				return nil, false
			}
			out[k] = s
		}
	}
	return out, true
}

func selectorMatches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
