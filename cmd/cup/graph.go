package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

func (c *cli) newGraphCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "Print the dependency graph of the server's reconcilers",
		Long: `Print which types each reconciler of the server reads and writes: a change
of a type wakes the reconcilers that read it, and a reconciler whose output
another reads starts a cascade.

Columns: RECONCILER; KIND, how it relates to the type (primary: one
reconcile per resource of it; mapped: an input its mapper relates to
primaries; output-exclusive: an output only it writes; output-shared: an
output others may write too); TYPE (plural.group); MAPPER (of a mapped
input: nameAligned, owner, selector, reference or referencedBy).

-o json prints the edges in full. -o dot prints a Graphviz digraph: types
(boxes) and reconcilers (ellipses) as nodes, an edge from each type a
reconciler reads to the reconciler, labelled with its mapper (or
"primary"), and from the reconciler to each type it writes, bold when it
alone writes the type. With a policy, the graph shows the types you may
see.`,
		Example: `  cup graph
  cup graph -o dot | dot -Tsvg > graph.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case "table", "json", "dot":
			default:
				return fmt.Errorf("-o: %q is not one of table, json, dot", output)
			}
			conn, err := c.connect()
			if err != nil {
				return err
			}
			res, err := conn.discovery.GetDependencyGraph(cmd.Context(), connect.NewRequest(&cupv1alpha1.GetDependencyGraphRequest{}))
			if err != nil {
				return err
			}
			edges := res.Msg.GetEdges()
			switch output {
			case "json":
				m, err := resourceObject(res.Msg)
				if err != nil {
					return err
				}
				if _, ok := m["edges"]; !ok {
					m["edges"] = []any{}
				}
				return encode(c.stdout, m, "json")
			case "dot":
				return writeDot(c.stdout, edges)
			}
			if len(edges) == 0 {
				_, err := fmt.Fprintln(c.stderr, "No reconcilers found.")
				return err
			}
			tw := tabwriter.NewWriter(c.stdout, 0, 8, 3, ' ', 0)
			fmt.Fprintln(tw, "RECONCILER\tKIND\tTYPE\tMAPPER")
			for _, e := range edges {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.GetReconciler(), edgeKindName(e.GetEdgeKind()), e.GetPlural()+"."+e.GetGroup(), orNone(e.GetMapper()))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, json or dot")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "dot"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// edgeKindName is an edge kind as the table prints it: primary, mapped,
// output-exclusive or output-shared.
func edgeKindName(k cupv1alpha1.EdgeKind) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k.String(), "EDGE_KIND_")), "_", "-")
}

// writeDot writes the graph as a Graphviz digraph: a node per type (a box
// labelled with its kind and plural.group/version) and per reconciler (an
// ellipse), in the order the edges first name them, then the edges: type
// to reconciler for what it reads, labelled with the mapper ("primary"
// for its primary type), reconciler to type for what it writes, bold when
// the output is exclusive.
func writeDot(w io.Writer, edges []*cupv1alpha1.DependencyEdge) error {
	var b strings.Builder
	b.WriteString("digraph reconcilers {\n  rankdir=LR;\n")
	typeID := func(e *cupv1alpha1.DependencyEdge) string {
		return e.GetPlural() + "." + e.GetGroup() + "/" + e.GetVersion()
	}
	recID := func(e *cupv1alpha1.DependencyEdge) string { return "reconciler/" + e.GetReconciler() }
	seen := map[string]bool{}
	for _, e := range edges {
		if id := typeID(e); !seen[id] {
			seen[id] = true
			fmt.Fprintf(&b, "  %s [shape=box, label=%s];\n", dotQuote(id), dotQuote(e.GetKind()+"\n"+id))
		}
	}
	for _, e := range edges {
		if id := recID(e); !seen[id] {
			seen[id] = true
			fmt.Fprintf(&b, "  %s [shape=ellipse, label=%s];\n", dotQuote(id), dotQuote(e.GetReconciler()))
		}
	}
	for _, e := range edges {
		t, r := dotQuote(typeID(e)), dotQuote(recID(e))
		switch e.GetEdgeKind() {
		case cupv1alpha1.EdgeKind_EDGE_KIND_PRIMARY:
			fmt.Fprintf(&b, "  %s -> %s [label=\"primary\"];\n", t, r)
		case cupv1alpha1.EdgeKind_EDGE_KIND_MAPPED:
			fmt.Fprintf(&b, "  %s -> %s [label=%s];\n", t, r, dotQuote(e.GetMapper()))
		case cupv1alpha1.EdgeKind_EDGE_KIND_OUTPUT_EXCLUSIVE:
			fmt.Fprintf(&b, "  %s -> %s [style=bold];\n", r, t)
		default:
			fmt.Fprintf(&b, "  %s -> %s;\n", r, t)
		}
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// dotQuote quotes s as a DOT string: backslashes and quotes escaped, a
// newline as \n (a centred line break in a label).
func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
