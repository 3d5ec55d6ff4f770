package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// Namespaces are not a resource type in cup: they are where resources
// are. cup get namespaces asks DiscoveryService.ListNamespaces which hold
// resources, and how many of each type.

// isNamespaces reports whether TYPE names namespaces, as kubectl's
// namespaces, namespace and ns do.
func isNamespaces(typ string) bool {
	switch strings.ToLower(typ) {
	case "namespaces", "namespace", "ns":
		return true
	}
	return false
}

// getNamespaces prints the namespaces that hold resources at revision (only
// those named, when names are given): NAME and RESOURCES (of every type)
// as a table, or each with its count per type as json or yaml.
func (c *cli) getNamespaces(ctx context.Context, names []string, revision, output string) error {
	conn, err := c.connect()
	if err != nil {
		return err
	}
	res, err := conn.discovery.ListNamespaces(ctx, connect.NewRequest(&cupv1alpha1.ListNamespacesRequest{Revision: revision}))
	if err != nil {
		return err
	}
	nss := res.Msg.GetNamespaces()
	if len(names) > 0 {
		byName := map[string]*cupv1alpha1.Namespace{}
		for _, ns := range nss {
			byName[ns.GetName()] = ns
		}
		nss = nil
		for _, n := range names {
			ns, ok := byName[n]
			if !ok {
				return fmt.Errorf("namespace %q not found: it holds no resources", n)
			}
			nss = append(nss, ns)
		}
	}
	switch output {
	case "name":
		for _, ns := range nss {
			if _, err := fmt.Fprintf(c.stdout, "namespaces/%s\n", ns.GetName()); err != nil {
				return err
			}
		}
		return nil
	case "json", "yaml":
		items := []any{}
		for _, ns := range nss {
			items = append(items, namespaceObject(ns))
		}
		if len(names) == 1 {
			return encode(c.stdout, items[0], output)
		}
		return encode(c.stdout, map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, output)
	}
	if len(nss) == 0 {
		_, err := fmt.Fprintln(c.stderr, "No namespaces found.")
		return err
	}
	rows := [][]string{{"NAME", "RESOURCES"}}
	for _, ns := range nss {
		total := 0
		for _, tc := range ns.GetTypes() {
			total += int(tc.GetCount())
		}
		rows = append(rows, []string{ns.GetName(), strconv.Itoa(total)})
	}
	return (&rowPrinter{w: c.stdout}).print(rows...)
}

// namespaceObject is a namespace as -o json and yaml print it: its name,
// and how many resources of each type it holds.
func namespaceObject(ns *cupv1alpha1.Namespace) map[string]any {
	types := []any{}
	total := 0
	for _, tc := range ns.GetTypes() {
		total += int(tc.GetCount())
		types = append(types, map[string]any{
			"group": tc.GetGroup(), "version": tc.GetVersion(), "plural": tc.GetPlural(),
			"kind": tc.GetKind(), "count": int(tc.GetCount()),
		})
	}
	return map[string]any{
		"name":      ns.GetName(),
		"resources": total,
		"types":     types,
	}
}
