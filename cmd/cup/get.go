package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
)

func (c *cli) newGetCommand() *cobra.Command {
	var (
		selector, fieldSelector, revision, output string
		allNamespaces, problems                   bool
		limit                                     int32
		wf                                        watchFlags
		tf                                        tableFlags
	)
	cmd := &cobra.Command{
		Use:   "get TYPE [NAME...] | TYPE/NAME... | namespaces | all",
		Short: "Print resources",
		Long: `Print one resource, several, or every resource of a type in the namespace
(in every namespace with --all-namespaces, -A).

TYPE is a plural, singular, kind or short name (case-insensitive), or
plural.group where several types share a name (see cup api-resources).

Output formats (-o):
  table  NAME, the type's printer columns (its definition's
         additionalPrinterColumns of priority 0) and AGE, the default
  wide   also the printer columns of higher priority, RESOURCE VERSION (its
         first 7 characters), NAMESPACE and LABELS (key=value, sorted)
  json   the resource's file form; several as {"apiVersion": "v1", "kind": "List", "items": [...]}
  yaml   the same as YAML
  name   plural.group/name
  jsonpath=TEMPLATE, jsonpath-file=FILE
         kubectl's JSONPath template, on the resource or the List as json
         prints it: -o jsonpath='{.items[*].metadata.name}'
  custom-columns=HEADER:JSONPATH,...
         a table of those columns: -o custom-columns=NAME:.metadata.name,ROLLOUT:.spec.rollout

AGE is how long ago the commit that last changed the resource was made,
as kubectl writes it (5s, 3m, 2h, 4d, 2y5d): cup asks the server for each
row's latest history entry, so a list of more than 100 rows shows
<unknown> (narrow it with -l or --field-selector). Several types print a
table each, names as plural.group/name. --show-labels adds LABELS, -L a
column per label key; --sort-by sorts by a JSONPath (.spec.rollout,
.metadata.name): numbers numerically and exactly, strings bytewise,
resources without the field first. --field-selector selects by
metadata.name and metadata.namespace (=, ==, !=), on the server.

cup get all prints every type that has resources in the namespace (or
with -A in every namespace), a table each; a type that cannot be listed
is a warning and the rest print.

A resource named (TYPE NAME, TYPE/NAME) whose type is a reconciler's
primary has its status in json and yaml: {"conditions": [...]} beside its
spec, each condition's reconciler, type, status, reason, message,
observedRevision and lastTransitionTime, derived by the server at the
commit read (never committed; cup apply ignores it).

Listing pages through the whole result, --limit resources per request.
With -A, the list is of every namespace, sorted by namespace, then name;
the table has a NAMESPACE column first. A resource cannot be retrieved by
name across all namespaces.

cup get namespaces (ns, namespace) lists the namespaces that hold
resources: NAME and RESOURCES (how many, of every type), or with -o json
or yaml each namespace's count per type. Namespaces are not a resource
type: they are the folders that hold resources.

A list leaves out files that hold nothing readable by the name their path
gives (they do not decode, name another resource, or have a name the API
refuses) and warns of them on stderr, as kubectl prints warnings: the first
20, and how many more. --problems prints every such file instead, with
what is wrong with it.

--watch (-w) prints the resources, then each change as it is committed,
until interrupted: a row per change (a deleted resource's row too, with
the table's columns but RESOURCE VERSION in place of AGE), or
with -o json or yaml each changed resource (with --output-watch-events, as
{"type": "ADDED|MODIFIED|DELETED", "object": {...}}: JSON one event a line,
YAML documents separated by ---). With a NAME, only that resource's
changes. --watch-only leaves out the resources as they are first. With
--revision, the watch starts at that commit: it prints the resources as
they were there (unless --watch-only), then every change since. A watch
the server closes for falling behind is resumed where it was cut.`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: c.completeTypes,
		Example: `  cup get flags
  cup get fl new-checkout -o yaml
  cup get flag/new-checkout flag/dark-mode -n staging
  cup get flags -l 'team in (payments,web)' -o wide
  cup get flags -A
  cup get flags -o wide --show-labels -L team
  cup get flags --sort-by .spec.rollout
  cup get flags -o jsonpath='{range .items[*]}{.metadata.name}{"\t"}{.spec.rollout}{"\n"}{end}'
  cup get flags -o custom-columns=NAME:.metadata.name,ROLLOUT:.spec.rollout
  cup get flags -A --field-selector metadata.name=new-checkout,metadata.namespace!=staging
  cup get all -n staging
  cup get namespaces
  cup get flags --problems
  cup get flags -w
  cup get flag new-checkout -w -o json --output-watch-events`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if isNamespaces(args[0]) {
				if selector != "" || fieldSelector != "" || problems || wf.requested() {
					return errors.New("namespaces: -l, --field-selector, --problems and --watch are for resources")
				}
				return c.getNamespaces(cmd.Context(), args[1:], revision, output)
			}
			if allNamespaces && (len(args) > 1 || strings.Contains(args[0], "/")) {
				return errors.New("a resource cannot be retrieved by name across all namespaces")
			}
			if problems && (len(args) > 1 || strings.Contains(args[0], "/") || selector != "" || fieldSelector != "") {
				return errors.New("--problems lists the problems of a whole type: give TYPE alone, without names, -l or --field-selector")
			}
			ctx := cmd.Context()
			if wf.requested() {
				if _, ok, _ := jsonpathTemplate(output); ok || strings.HasPrefix(output, "custom-columns=") || tf.sortBy != "" {
					return errors.New("--watch prints -o table, wide, json, yaml or name, without --sort-by")
				}
				return c.watch(ctx, &wf, watchQuery{args: args, selector: selector, fieldSelector: fieldSelector, revision: revision, output: output,
					problems: problems, allNamespaces: allNamespaces, table: tf})
			}
			conn, err := c.connect()
			if err != nil {
				return err
			}
			namespace := conn.namespace // of a list; "" for every namespace
			if allNamespaces {
				namespace = ""
			}
			po := printOptions{output: output, all: allNamespaces, revision: revision, table: tf}
			if isAll(args[0]) && len(args) == 1 {
				return c.getAll(ctx, namespace, selector, fieldSelector, limit, po)
			}
			var items []item
			switch {
			case strings.Contains(args[0], "/"):
				if selector != "" || fieldSelector != "" {
					return errors.New("-l and --field-selector cannot be used with named resources")
				}
				po.single = len(args) == 1
				for _, a := range args {
					typ, name, ok := strings.Cut(a, "/")
					if !ok || name == "" {
						return fmt.Errorf("%q: write TYPE/NAME for every argument, or TYPE NAME...", a)
					}
					t, err := c.resolveType(ctx, typ)
					if err != nil {
						return err
					}
					res, err := c.get(ctx, t, conn.namespace, name, revision)
					if err != nil {
						return err
					}
					items = append(items, item{t: t, r: res.GetResource(), status: res.GetStatus()})
				}
			default:
				t, err := c.resolveType(ctx, args[0])
				if err != nil {
					return err
				}
				if len(args) > 1 {
					if selector != "" || fieldSelector != "" {
						return errors.New("-l and --field-selector cannot be used with named resources")
					}
					po.single = len(args) == 2
					for _, name := range args[1:] {
						res, err := c.get(ctx, t, conn.namespace, name, revision)
						if err != nil {
							return err
						}
						items = append(items, item{t: t, r: res.GetResource(), status: res.GetStatus()})
					}
					break
				}
				req := &cupv1alpha1.ListRequest{
					Group: t.group(), Version: t.version, Plural: t.plural(), Namespace: namespace,
					Revision: revision, LabelSelector: selector, FieldSelector: fieldSelector, PageSize: limit, Problems: problems,
					WithChanges: showsAge(output),
				}
				if problems {
					return c.printProblems(ctx, conn.resources, req)
				}
				if items, err = c.listItems(ctx, t, req, args[0]); err != nil {
					return err
				}
				if len(items) == 0 && isTable(output) {
					_, err := fmt.Fprintln(c.stderr, noResources(namespace))
					return err
				}
			}
			return c.printItems(ctx, items, po)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&selector, "selector", "l", "", "a Kubernetes label selector (team=payments, 'tier in (web,api)', !beta)")
	f.StringVar(&revision, "revision", "", "read at a branch, tag or commit (default: the server's branch)")
	f.BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list the resources of every namespace, with a NAMESPACE column")
	f.StringVarP(&output, "output", "o", "table", "table, wide, json, yaml, name, jsonpath=TEMPLATE, jsonpath-file=FILE or custom-columns=HEADER:JSONPATH,...")
	f.StringVar(&fieldSelector, "field-selector", "", "a Kubernetes field selector on metadata.name and metadata.namespace (metadata.name=x,metadata.namespace!=y)")
	f.BoolVar(&tf.showLabels, "show-labels", false, "a LABELS column (key=value, sorted)")
	f.StringSliceVarP(&tf.labelCols, "label-columns", "L", nil, "a column for each label key given (-L team,tier)")
	f.StringVar(&tf.sortBy, "sort-by", "", "sort by a JSONPath (.spec.rollout, .metadata.name): numbers numerically, strings in byte order")
	f.Int32Var(&limit, "limit", 0, "resources per request when listing (0: the server's default); every page is printed")
	f.BoolVar(&problems, "problems", false, "print every file the list leaves out (PATH and REASON) instead of the resources")
	wf.add(f)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "wide", "json", "yaml", "name", "jsonpath=", "jsonpath-file=", "custom-columns="}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (c *cli) getResource(ctx context.Context, t typeRef, namespace, name, revision string) (*cupv1alpha1.Resource, error) {
	res, err := c.get(ctx, t, namespace, name, revision)
	if err != nil {
		return nil, err
	}
	return res.GetResource(), nil
}

// get reads a resource, with its status when a reconciler has its type as
// its primary.
func (c *cli) get(ctx context.Context, t typeRef, namespace, name, revision string) (*cupv1alpha1.GetResponse, error) {
	conn, err := c.connect()
	if err != nil {
		return nil, err
	}
	res, err := conn.resources.Get(ctx, connect.NewRequest(&cupv1alpha1.GetRequest{
		Group: t.group(), Version: t.version, Plural: t.plural(), Namespace: namespace, Name: name, Revision: revision,
	}))
	if err != nil {
		return nil, err
	}
	return res.Msg, nil
}

// objectWithStatus is resourceObject with the resource's status, when it
// has one, at the top level ({"conditions": [...]}), as Kubernetes
// places it. cup apply ignores it: status is derived, never written.
func objectWithStatus(r *cupv1alpha1.Resource, st *cupv1alpha1.ResourceStatus) (map[string]any, error) {
	m, err := resourceObject(r)
	if err != nil || st == nil {
		return m, err
	}
	sm, err := resourceObject(st)
	if err != nil {
		return nil, err
	}
	if _, ok := sm["conditions"]; !ok {
		sm["conditions"] = []any{}
	}
	m["status"] = sm
	return m, nil
}

func formatLabels(labels map[string]string) string {
	if len(labels) == 0 {
		return "<none>"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}

// warningText is a ListWarning as one line.
func warningText(w *cupv1alpha1.ListWarning) string {
	if w.GetPath() == "" {
		return w.GetReason()
	}
	return w.GetPath() + ": " + w.GetReason()
}

// printProblems prints every file a listing leaves out, as a table.
func (c *cli) printProblems(ctx context.Context, rs cupv1alpha1connect.ResourceServiceClient, req *cupv1alpha1.ListRequest) error {
	res, err := rs.List(ctx, connect.NewRequest(req))
	if err != nil {
		return err
	}
	ws := res.Msg.GetWarnings()
	if len(ws) == 0 {
		msg := "No problems found."
		if ns := req.GetNamespace(); ns != "" {
			msg = "No problems found in namespace " + ns + "."
		}
		_, err := fmt.Fprintln(c.stderr, msg)
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "PATH\tREASON")
	for _, w := range ws {
		fmt.Fprintf(tw, "%s\t%s\n", w.GetPath(), w.GetReason())
	}
	return tw.Flush()
}

// item is a resource cup get prints.
type item struct {
	t typeRef
	r *cupv1alpha1.Resource
	// status is what a Get answered of a reconciler's primary; nil
	// otherwise, and for listed resources.
	status *cupv1alpha1.ResourceStatus
	// changed is the time of the commit that last changed the resource,
	// as a list with_changes answers it; "" when unknown.
	changed string
}

// checkOutput refuses an -o cup get does not print.
func checkOutput(output string) error {
	switch output {
	case "table", "wide", "json", "yaml", "name":
		return nil
	}
	for _, p := range []string{"jsonpath=", "jsonpath-file=", "custom-columns="} {
		if strings.HasPrefix(output, p) {
			return nil
		}
	}
	return fmt.Errorf("-o: %q is not one of table, wide, json, yaml, name, jsonpath=TEMPLATE, jsonpath-file=FILE, custom-columns=SPEC", output)
}

// showsAge reports whether output prints the AGE column.
func showsAge(output string) bool { return output == "table" || output == "wide" }

// isTable reports whether output prints a table.
func isTable(output string) bool {
	return output == "table" || output == "wide" || strings.HasPrefix(output, "custom-columns=")
}

// listItems lists every page of req, printing the listing's warnings on
// stderr; typ is the TYPE the user wrote, for the hint to --problems.
func (c *cli) listItems(ctx context.Context, t typeRef, req *cupv1alpha1.ListRequest, typ string) ([]item, error) {
	conn, err := c.connect()
	if err != nil {
		return nil, err
	}
	var items []item
	err = eachPage(ctx, conn, req, func(res *cupv1alpha1.ListResponse) {
		for _, w := range res.GetWarnings() {
			fmt.Fprintf(c.stderr, "Warning: %s\n", warningText(w))
		}
		if n := res.GetMoreWarnings(); n > 0 {
			scope := "-n " + req.GetNamespace()
			if req.GetNamespace() == "" {
				scope = "-A"
			}
			fmt.Fprintf(c.stderr, "Warning: %d more files left out of the list; see them all with: cup get %s --problems %s\n",
				n, typ, scope)
		}
		changes := res.GetChanges()
		for i, r := range res.GetItems() {
			it := item{t: t, r: r}
			if i < len(changes) {
				it.changed = changes[i].GetTime()
			}
			items = append(items, it)
		}
	})
	return items, err
}

// eachPage lists every page of req (all of one commit: the page tokens pin
// it), handing each response to page in order.
func eachPage(ctx context.Context, conn *connection, req *cupv1alpha1.ListRequest, page func(*cupv1alpha1.ListResponse)) error {
	for {
		res, err := conn.resources.List(ctx, connect.NewRequest(req))
		if err != nil {
			return err
		}
		page(res.Msg)
		if res.Msg.GetNextPageToken() == "" {
			return nil
		}
		req.PageToken = res.Msg.GetNextPageToken()
	}
}

// printOptions are how cup get prints what it read.
type printOptions struct {
	output   string
	all      bool // across namespaces
	single   bool // one resource named: json, yaml and jsonpath print it alone
	qualify  bool // names as plural.group/name, even for one type
	revision string
	table    tableFlags
}

// printItems prints items as o says: a table per type (in the order the
// types come first), with AGE, or the documents.
func (c *cli) printItems(ctx context.Context, items []item, o printOptions) error {
	if o.table.sortBy != "" {
		if err := sortItems(items, o.table.sortBy); err != nil {
			return err
		}
	}
	if o.output == "name" {
		for _, it := range items {
			fmt.Fprintf(c.stdout, "%s/%s\n", it.t.qualified(), it.r.GetMetadata().GetName())
		}
		return nil
	}
	if !isTable(o.output) {
		var v any
		if o.single {
			m, err := objectWithStatus(items[0].r, items[0].status)
			if err != nil {
				return err
			}
			v = m
		} else {
			list := []any{}
			for _, it := range items {
				m, err := objectWithStatus(it.r, it.status)
				if err != nil {
					return err
				}
				list = append(list, m)
			}
			v = map[string]any{"apiVersion": "v1", "kind": "List", "items": list}
		}
		if tmpl, ok, err := jsonpathTemplate(o.output); ok {
			if err != nil {
				return err
			}
			return c.printJSONPath(tmpl, v)
		}
		return encode(c.stdout, v, o.output)
	}
	var ages []string
	if showsAge(o.output) {
		var err error
		if ages, err = c.ages(ctx, items, o.revision); err != nil {
			return err
		}
	}
	// A table per type, as kubectl prints several types.
	var order []*cupv1alpha1.ResourceDefinition
	byType := map[*cupv1alpha1.ResourceDefinition][]int{}
	for i, it := range items {
		if _, ok := byType[it.t.def]; !ok {
			order = append(order, it.t.def)
		}
		byType[it.t.def] = append(byType[it.t.def], i)
	}
	qualify := o.qualify || len(order) > 1
	for n, def := range order {
		idx := byType[def]
		spec, err := c.newTableSpec(items[idx[0]].t, o.output, o.all, o.table, ages != nil)
		if err != nil {
			return err
		}
		rows := [][]string{spec.header()}
		for _, i := range idx {
			it := items[i]
			name := it.r.GetMetadata().GetName()
			if qualify {
				name = it.t.qualified() + "/" + name
			}
			age := ""
			if ages != nil {
				age = ages[i]
			}
			row, err := spec.row(it.r, name, age)
			if err != nil {
				return err
			}
			rows = append(rows, row)
		}
		if n > 0 {
			fmt.Fprintln(c.stdout)
		}
		if err := (&rowPrinter{w: c.stdout}).print(rows...); err != nil {
			return err
		}
	}
	return nil
}
