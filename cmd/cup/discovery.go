package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

func (c *cli) newAPIResourcesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "api-resources",
		Short: "List the resource types the server serves",
		Long: `List the resource types the server serves, one row per version:
NAME (the plural), SHORTNAMES, APIVERSION (group/version) and KIND.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			defs, err := c.definitions(cmd.Context())
			if err != nil {
				return err
			}
			defs = slices.Clone(defs)
			slices.SortFunc(defs, func(a, b *cupv1alpha1.ResourceDefinition) int {
				return strings.Compare(a.GetNames().GetPlural()+"."+a.GetGroup(), b.GetNames().GetPlural()+"."+b.GetGroup())
			})
			tw := tabwriter.NewWriter(c.stdout, 0, 8, 3, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSHORTNAMES\tAPIVERSION\tKIND")
			for _, d := range defs {
				for _, v := range d.GetVersions() {
					fmt.Fprintf(tw, "%s\t%s\t%s/%s\t%s\n", d.GetNames().GetPlural(), strings.Join(d.GetNames().GetShortNames(), ","), d.GetGroup(), v.GetName(), d.GetNames().GetKind())
				}
			}
			return tw.Flush()
		},
	}
}

func (c *cli) newExplainCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "explain TYPE[.field.path]",
		Short: "Describe a type's fields from its JSON Schema",
		Long: `Describe a type, or one of its fields, from the JSON Schema the server
validates it with: the field's type, description, enum and, for objects,
its fields (required ones marked -required-). Paths start at the resource
(apiVersion, kind, metadata, spec): cup explain flags.spec.rollout.
Array fields are walked into their items. $ref is not followed.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			defs, err := c.definitions(cmd.Context())
			if err != nil {
				return err
			}
			parts := strings.Split(args[0], ".")
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
			var v *cupv1alpha1.DefinitionVersion
			for _, x := range t.def.GetVersions() {
				if x.GetName() == t.version {
					v = x
				}
			}
			schema := v.GetSchema().AsMap()
			if _, whole := propertiesOf(schema)["spec"]; !(v.GetSchemaTarget() == "resource" || (v.GetSchemaTarget() == "" && whole)) {
				schema = map[string]any{
					"type": "object",
					"properties": map[string]any{
						"apiVersion": map[string]any{"type": "string", "description": "The group and version: " + t.apiVersion() + "."},
						"kind":       map[string]any{"type": "string", "description": "The kind: " + t.def.GetNames().GetKind() + "."},
						"metadata":   map[string]any{"type": "object", "description": "The namespace, name, labels, annotations and resourceVersion."},
						"spec":       schema,
					},
				}
			}
			field, fieldSchema := "", schema
			for _, p := range path {
				if p == "" {
					return errors.New("empty field name in " + args[0])
				}
				next, ok := propertiesOf(schema)[p].(map[string]any)
				if !ok {
					return fmt.Errorf("field %q does not exist in %s", strings.Join(path, "."), t.def.GetNames().GetKind())
				}
				schema, fieldSchema = next, next
				for schema["type"] == "array" {
					items, ok := schema["items"].(map[string]any)
					if !ok {
						break
					}
					schema = items
				}
				field = p
			}
			w := c.stdout
			fmt.Fprintf(w, "KIND:     %s\nVERSION:  %s\n\n", t.def.GetNames().GetKind(), t.apiVersion())
			if field != "" {
				fmt.Fprintf(w, "FIELD:    %s <%s>\n\n", field, typeName(fieldSchema))
			}
			if d, _ := schema["description"].(string); d != "" {
				fmt.Fprintf(w, "DESCRIPTION:\n    %s\n\n", strings.ReplaceAll(d, "\n", "\n    "))
			}
			if enum, ok := schema["enum"].([]any); ok {
				var vals []string
				for _, e := range enum {
					vals = append(vals, fmt.Sprint(e))
				}
				fmt.Fprintf(w, "ENUM:\n    %s\n\n", strings.Join(vals, ", "))
			}
			props := propertiesOf(schema)
			if len(props) > 0 {
				required := map[string]bool{}
				if rs, ok := schema["required"].([]any); ok {
					for _, r := range rs {
						required[fmt.Sprint(r)] = true
					}
				}
				fmt.Fprintln(w, "FIELDS:")
				tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
				var names []string
				for k := range props {
					names = append(names, k)
				}
				slices.Sort(names)
				for _, k := range names {
					p, _ := props[k].(map[string]any)
					req := ""
					if required[k] {
						req = " -required-"
					}
					fmt.Fprintf(tw, "  %s\t<%s>%s\n", k, typeName(p), req)
				}
				return tw.Flush()
			}
			return nil
		},
	}
}

func propertiesOf(schema map[string]any) map[string]any {
	p, _ := schema["properties"].(map[string]any)
	return p
}

// typeName is a schema's type for display: string, []object, map[string]string.
func typeName(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		switch t {
		case "array":
			if items, ok := s["items"].(map[string]any); ok {
				return "[]" + typeName(items)
			}
		case "object":
			if ap, ok := s["additionalProperties"].(map[string]any); ok && len(propertiesOf(s)) == 0 {
				return "map[string]" + typeName(ap)
			}
		}
		return t
	case []any:
		var ts []string
		for _, x := range t {
			ts = append(ts, fmt.Sprint(x))
		}
		return strings.Join(ts, "|")
	}
	if _, ok := s["$ref"]; ok {
		return "ref"
	}
	return "any"
}
