package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
)

// explainMaxDepth bounds how deep explain --recursive prints fields.
const explainMaxDepth = 10

func (c *cli) newExplainCommand() *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{
		Use:   "explain TYPE[.field.path]",
		Short: "Describe a type's fields and their constraints",
		Long: `Describe a type, or one of its fields, from the server's OpenAPI document
for its group and version (GET /openapi/v3/apis/GROUP/VERSION), which is
built from the JSON Schema the server validates with: the field's type,
description, constraints (minimum, maximum, exclusive bounds, lengths,
pattern, format, item counts, default, nullable), enum and, for objects,
its fields (required ones marked -required-). Paths start at the
resource (apiVersion, kind, metadata, spec): cup explain flags.spec.rollout.
Array fields are walked into their items, and $ref is followed.

--recursive prints every field beneath, indented, as kubectl explain
--recursive does. A schema that holds itself ($ref cycles) is printed
once: the field that repeats it says so. Fields deeper than 10 levels
are left out, and the output says where.`,
		Example: `  cup explain flags
  cup explain flags.spec.rollout
  cup explain flags --recursive`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.explain(cmd.Context(), args[0], recursive)
		},
	}
	cmd.Flags().BoolVar(&recursive, "recursive", false, "print every field beneath, indented")
	return cmd
}

func (c *cli) explain(ctx context.Context, arg string, recursive bool) error {
	defs, err := c.definitions(ctx)
	if err != nil {
		return err
	}
	parts := strings.Split(arg, ".")
	var (
		t    typeRef
		path []string
	)
	for i := len(parts); i > 0; i-- {
		name := strings.Join(parts[:i], ".")
		found := lookupType(defs, name)
		if len(found) == 0 {
			continue
		}
		if t, err = chooseType(name, found); err != nil {
			return err
		}
		path = parts[i:]
		break
	}
	if t.def == nil {
		return fmt.Errorf("the server has no resource type %q (see cup api-resources)", parts[0])
	}
	doc, err := c.openapiDocument(ctx, t.group(), t.version)
	if err != nil {
		return err
	}
	kind := t.def.GetNames().GetKind()
	root := doc.resource(t.group(), t.version, kind)
	if root == nil {
		return fmt.Errorf("the server's OpenAPI document for %s has no schema of %s", t.apiVersion(), kind)
	}
	field, fieldSchema, schema := "", root, root
	seen, paths := []schemaObj{doc.resolve(root)}, []string{t.plural()}
	for i, p := range path {
		if p == "" {
			return errors.New("empty field name in " + arg)
		}
		next, ok := doc.fields(schema).props[p]
		if !ok {
			return fmt.Errorf("field %q does not exist in %s", strings.Join(path[:i+1], "."), kind)
		}
		fieldSchema = next
		schema = doc.element(next)
		seen, paths = append(seen, doc.resolve(schema)), append(paths, paths[len(paths)-1]+"."+p)
		field = p
	}
	w := c.stdout
	fmt.Fprintf(w, "KIND:     %s\nVERSION:  %s\n\n", kind, t.apiVersion())
	if field != "" {
		fmt.Fprintf(w, "FIELD:    %s <%s>\n\n", field, doc.typeName(fieldSchema))
	}
	s := doc.resolve(fieldSchema)
	if d, _ := s["description"].(string); d != "" {
		fmt.Fprintf(w, "DESCRIPTION:\n    %s\n\n", strings.ReplaceAll(d, "\n", "\n    "))
	}
	if cs := doc.constraints(fieldSchema); len(cs) > 0 {
		fmt.Fprintf(w, "CONSTRAINTS:\n    %s\n\n", strings.Join(cs, "\n    "))
	}
	if enum := doc.enum(fieldSchema); enum != "" {
		fmt.Fprintf(w, "ENUM:\n    %s\n\n", enum)
	}
	if len(doc.fields(schema).props) == 0 {
		return nil
	}
	fmt.Fprintln(w, "FIELDS:")
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	doc.printFields(tw, schema, 1, recursive, seen, paths)
	return tw.Flush()
}

// schemaObj is a schema of an OpenAPI document, decoded with exact numbers.
type schemaObj = map[string]any

// openapiDoc is the part of an OpenAPI document explain reads.
type openapiDoc struct {
	Components struct {
		Schemas map[string]schemaObj `json:"schemas"`
	} `json:"components"`
}

// openapiDocument fetches the server's OpenAPI document of group/version.
func (c *cli) openapiDocument(ctx context.Context, group, version string) (*openapiDoc, error) {
	conn, err := c.connect()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, conn.server+"/openapi/v3/apis/"+group+"/"+version, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if conn.token != nil {
		token, err := conn.token.get()
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := conn.http.Do(req)
	if err != nil {
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	if res.StatusCode != http.StatusOK {
		var e struct{ Code, Message string }
		if json.Unmarshal(body, &e) == nil && e.Message != "" {
			return nil, errors.New(e.Message)
		}
		return nil, fmt.Errorf("GET %s: %s", req.URL.Path, res.Status)
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber() // bounds print as written
	var doc openapiDoc
	if err := d.Decode(&doc); err != nil {
		return nil, fmt.Errorf("the server's OpenAPI document for %s/%s: %w", group, version, err)
	}
	return &doc, nil
}

// resource is the component of group/version/kind, found by its
// x-kubernetes-group-version-kind.
func (d *openapiDoc) resource(group, version, kind string) schemaObj {
	for _, name := range slices.Sorted(maps.Keys(d.Components.Schemas)) {
		s := d.Components.Schemas[name]
		gvks, _ := s["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			if m, _ := g.(map[string]any); m["group"] == group && m["version"] == version && m["kind"] == kind {
				return s
			}
		}
	}
	return nil
}

// resolve follows s's $ref, and an allOf of one $ref beside annotations
// (the form a $ref with siblings takes), to the schema that holds its
// fields and constraints; what s says itself wins.
func (d *openapiDoc) resolve(s schemaObj) schemaObj {
	for range explainMaxDepth {
		if ref, ok := s["$ref"].(string); ok {
			s = d.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
			continue
		}
		all, _ := s["allOf"].([]any)
		if len(all) != 1 {
			return s
		}
		inner, _ := all[0].(schemaObj)
		if _, ok := inner["$ref"]; !ok {
			return s
		}
		merged := maps.Clone(d.resolve(inner))
		for k, v := range s {
			if k != "allOf" {
				merged[k] = v
			}
		}
		return merged
	}
	return s
}

// element is the schema of s's values once arrays are walked into their
// items.
func (d *openapiDoc) element(s schemaObj) schemaObj {
	for range explainMaxDepth {
		r := d.resolve(s)
		items, ok := r["items"].(schemaObj)
		if r["type"] != "array" || !ok {
			return s
		}
		s = items
	}
	return s
}

// fieldSet is an object's fields and which of them are required.
type fieldSet struct {
	props    map[string]schemaObj
	required map[string]bool
}

// fields are s's properties, with those of the schemas it is allOf.
func (d *openapiDoc) fields(s schemaObj) fieldSet {
	out := fieldSet{props: map[string]schemaObj{}, required: map[string]bool{}}
	var add func(s schemaObj, depth int)
	add = func(s schemaObj, depth int) {
		if depth > explainMaxDepth {
			return
		}
		s = d.resolve(s)
		props, _ := s["properties"].(map[string]any)
		for k, v := range props {
			if p, ok := v.(schemaObj); ok {
				out.props[k] = p
			}
		}
		req, _ := s["required"].([]any)
		for _, r := range req {
			if name, ok := r.(string); ok {
				out.required[name] = true
			}
		}
		all, _ := s["allOf"].([]any)
		for _, a := range all {
			if m, ok := a.(schemaObj); ok {
				add(m, depth+1)
			}
		}
	}
	add(s, 0)
	return out
}

// typeName is a schema's type as kubectl explain prints it: string,
// integer, Object, []Object, map[string]string, integer|string.
func (d *openapiDoc) typeName(s schemaObj) string {
	return d.typeNameDepth(s, 0)
}

func (d *openapiDoc) typeNameDepth(s schemaObj, depth int) string {
	if depth > explainMaxDepth {
		return "…"
	}
	s = d.resolve(s)
	switch t, _ := s["type"].(string); t {
	case "array":
		items, _ := s["items"].(schemaObj)
		return "[]" + d.typeNameDepth(items, depth+1)
	case "object":
		if ap, ok := s["additionalProperties"].(schemaObj); ok && len(d.fields(s).props) == 0 {
			return "map[string]" + d.typeNameDepth(ap, depth+1)
		}
		return "Object"
	case "":
		if len(d.fields(s).props) > 0 {
			return "Object"
		}
		if enum, _ := s["enum"].([]any); len(enum) > 0 {
			return enumType(enum)
		}
		if any, _ := s["anyOf"].([]any); len(any) > 0 {
			var ts []string
			for _, a := range any {
				m, _ := a.(schemaObj)
				if t := d.typeNameDepth(m, depth+1); !slices.Contains(ts, t) {
					ts = append(ts, t)
				}
			}
			return strings.Join(ts, "|")
		}
		return "any"
	default:
		return t
	}
}

// enumType is the type of an enum's values when they share one.
func enumType(enum []any) string {
	var t string
	for _, e := range enum {
		var et string
		switch v := e.(type) {
		case string:
			et = "string"
		case bool:
			et = "boolean"
		case json.Number:
			et = "number"
			if !strings.ContainsAny(string(v), ".eE") {
				et = "integer"
			}
		case nil:
			continue
		default:
			return "any"
		}
		switch {
		case t == "" || t == et:
			t = et
		case t == "integer" && et == "number", t == "number" && et == "integer":
			t = "number"
		default:
			return "any"
		}
	}
	return cmp.Or(t, "any")
}

// constraints are what s (resolved) says a value must be, one per line.
func (d *openapiDoc) constraints(s schemaObj) []string {
	s = d.resolve(s)
	var out []string
	bound := func(k, excl string) {
		v, ok := s[k]
		if !ok {
			return
		}
		line := fmt.Sprintf("%s: %v", k, v)
		if s[excl] == true {
			line += " (exclusive)"
		}
		out = append(out, line)
	}
	bound("minimum", "exclusiveMinimum")
	bound("maximum", "exclusiveMaximum")
	for _, k := range []string{"multipleOf", "minLength", "maxLength", "pattern", "format", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties", "nullable", "readOnly"} {
		if v, ok := s[k]; ok {
			out = append(out, fmt.Sprintf("%s: %s", k, jsonText(v)))
		}
	}
	if v, ok := s["default"]; ok {
		out = append(out, "default: "+jsonText(v))
	}
	return out
}

// enum is s's enum (or its items'), comma-separated.
func (d *openapiDoc) enum(s schemaObj) string {
	s = d.resolve(s)
	enum, ok := s["enum"].([]any)
	if !ok {
		return ""
	}
	vals := make([]string, len(enum))
	for i, e := range enum {
		if str, ok := e.(string); ok {
			vals[i] = str
		} else {
			vals[i] = jsonText(e)
		}
	}
	return strings.Join(vals, ", ")
}

// jsonText is v as JSON; strings bare.
func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// printFields prints s's fields at depth (two spaces each), and with
// recursive every field beneath. seen are the schemas on the way from the
// resource and paths their names (TYPE.field...), which a field that
// holds one of them again names rather than repeats.
func (d *openapiDoc) printFields(w io.Writer, s schemaObj, depth int, recursive bool, seen []schemaObj, paths []string) {
	fs := d.fields(s)
	indent := strings.Repeat("  ", depth)
	for _, name := range slices.Sorted(maps.Keys(fs.props)) {
		p := fs.props[name]
		line := fmt.Sprintf("%s%s\t<%s>", indent, name, d.typeName(p))
		if fs.required[name] {
			line += " -required-"
		}
		elem := d.resolve(d.element(p))
		here := paths[len(paths)-1] + "." + name
		deeper := recursive && len(d.fields(elem).props) > 0
		if deeper {
			if i := slices.IndexFunc(seen, func(x schemaObj) bool { return sameSchema(x, elem) }); i >= 0 {
				line += " (recursive: the fields of " + paths[i] + ")"
				deeper = false
			} else if depth >= explainMaxDepth {
				line += fmt.Sprintf(" (fields more than %d levels deep left out: cup explain %s --recursive shows them)", explainMaxDepth, here)
				deeper = false
			}
		}
		fmt.Fprintln(w, line)
		if deeper {
			d.printFields(w, elem, depth+1, recursive, append(seen, elem), append(paths, here))
		}
	}
}

// sameSchema reports whether a and b are the same decoded schema.
func sameSchema(a, b schemaObj) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
