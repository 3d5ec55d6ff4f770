package main

import (
	"context"
	"fmt"
	"strings"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// isAll reports whether TYPE is "all", as in kubectl get all.
func isAll(typ string) bool { return strings.EqualFold(typ, "all") }

// getAll prints the resources of every served type in namespace ("" for
// every namespace), as kubectl get all does: a table per type that has
// any, names as plural.group/name. A type that cannot be listed is
// warned of on stderr, and the others are printed.
func (c *cli) getAll(ctx context.Context, namespace, selector, fieldSelector string, limit int32, o printOptions) error {
	defs, err := c.definitions(ctx)
	if err != nil {
		return err
	}
	var items []item
	for _, def := range defs {
		t, err := newTypeRef(def, "")
		if err != nil {
			fmt.Fprintf(c.stderr, "Warning: %s.%s: %v\n", def.GetNames().GetPlural(), def.GetGroup(), err)
			continue
		}
		found, err := c.listItems(ctx, t, &cupv1alpha1.ListRequest{
			Group: t.group(), Version: t.version, Plural: t.plural(), Namespace: namespace,
			Revision: o.revision, LabelSelector: selector, FieldSelector: fieldSelector, PageSize: limit,
			WithChanges: showsAge(o.output),
		}, t.qualified())
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintf(c.stderr, "Warning: %s: cannot list: %v\n", t.qualified(), err)
			continue
		}
		items = append(items, found...)
	}
	if len(items) == 0 && isTable(o.output) {
		_, err := fmt.Fprintln(c.stderr, noResources(namespace))
		return err
	}
	o.qualify = true
	return c.printItems(ctx, items, o)
}
