package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// writeFlags are the flags every write takes.
type writeFlags struct {
	dryRun         bool
	message        string
	proposal       string
	changeSet      string
	idempotencyKey string
}

func (w *writeFlags) add(f *pflag.FlagSet) {
	f.BoolVar(&w.dryRun, "dry-run", false, "say what would change without writing")
	f.StringVar(&w.message, "message", "", "the commit message (default: one naming the resource)")
	f.StringVar(&w.proposal, "proposal", "", "add the write to the change set of the proposal with this id")
	f.StringVar(&w.changeSet, "change-set", "", "add the write to this change set (a branch an earlier write made, cup/...)")
	f.StringVar(&w.idempotencyKey, "idempotency-key", "", "makes the write safe to retry: a repeat with the same key writes nothing (with --atomic=false and several resources, each gets KEY-<n>)")
}

// changeSet resolves --proposal to its branch.
func (c *cli) changeSet(ctx context.Context, w *writeFlags) (string, error) {
	if w.proposal == "" {
		return w.changeSet, nil
	}
	if w.changeSet != "" {
		return "", errors.New("--proposal and --change-set both name a change set: use one")
	}
	conn, err := c.connect()
	if err != nil {
		return "", err
	}
	res, err := conn.proposals.GetProposal(ctx, connect.NewRequest(&cupv1alpha1.GetProposalRequest{Id: w.proposal}))
	if err != nil {
		return "", err
	}
	if res.Msg.GetProposal().GetBranch() == "" {
		return "", fmt.Errorf("proposal %s names no branch", w.proposal)
	}
	return res.Msg.GetProposal().GetBranch(), nil
}

func (w *writeFlags) key(i, n int) string {
	if w.idempotencyKey == "" || n == 1 {
		return w.idempotencyKey
	}
	return fmt.Sprintf("%s-%d", w.idempotencyKey, i+1)
}

// resourceError is a call about one resource that failed: its message names
// the resource (plural.group/name) and says what went wrong as errorMessage
// does, and it wraps the call's error, so that hint finds a Connect error.
type resourceError struct {
	resource string
	err      error
}

func (e *resourceError) Error() string { return e.resource + ": " + errorMessage(e.err) }

func (e *resourceError) Unwrap() error { return e.err }

// target is a resource of -f with its type and namespace resolved.
type target struct {
	t         typeRef
	namespace string
	r         *cupv1alpha1.Resource
}

func (c *cli) targets(ctx context.Context, files []string) ([]target, error) {
	rs, err := c.readResources(files)
	if err != nil {
		return nil, err
	}
	// As kubectl: an explicit -n never silently yields to a file's
	// namespace; refused before anything is sent.
	for _, r := range rs {
		if ns := r.GetMetadata().GetNamespace(); ns != "" && c.namespace != "" && ns != c.namespace {
			return nil, fmt.Errorf("the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation.", ns, c.namespace, ns)
		}
	}
	conn, err := c.connect()
	if err != nil {
		return nil, err
	}
	var out []target
	for _, r := range rs {
		t, err := c.typeOf(ctx, r)
		if err != nil {
			return nil, err
		}
		if r.GetMetadata().GetName() == "" {
			return nil, fmt.Errorf("a %s has no metadata.name", r.GetKind())
		}
		ns := r.GetMetadata().GetNamespace()
		if ns == "" {
			ns = conn.namespace
		}
		out = append(out, target{t: t, namespace: ns, r: r})
	}
	return out, nil
}

func (c *cli) put(ctx context.Context, tg target, w *writeFlags, changeSet, key string, dryRun bool, resourceVersion string) (*cupv1alpha1.PutResponse, error) {
	conn, err := c.connect()
	if err != nil {
		return nil, err
	}
	res, err := conn.resources.Put(ctx, connect.NewRequest(&cupv1alpha1.PutRequest{
		Group: tg.t.group(), Version: tg.t.version, Plural: tg.t.plural(), Namespace: tg.namespace,
		Name: tg.r.GetMetadata().GetName(), Resource: tg.r, ResourceVersion: resourceVersion,
		DryRun: dryRun, Message: w.message, ChangeSet: changeSet, IdempotencyKey: key,
	}))
	if err != nil {
		return nil, err
	}
	return res.Msg, nil
}

// maxBatch is the most items one Apply takes (the proto's limit).
const maxBatch = 10000

// batchItem is one write of a batch: a put of target.r, or a delete of
// the resource it names.
type batchItem struct {
	target
	delete, create, ignoreNotFound bool
	resourceVersion                string
}

func (b *batchItem) name() string { return b.t.qualified() + "/" + b.r.GetMetadata().GetName() }

func (b *batchItem) proto() *cupv1alpha1.ApplyItem {
	name := b.r.GetMetadata().GetName()
	if b.delete {
		return &cupv1alpha1.ApplyItem{Operation: &cupv1alpha1.ApplyItem_Delete{Delete: &cupv1alpha1.ApplyDelete{
			Group: b.t.group(), Version: b.t.version, Plural: b.t.plural(), Namespace: b.namespace, Name: name,
			ResourceVersion: b.resourceVersion, IgnoreNotFound: b.ignoreNotFound,
		}}}
	}
	return &cupv1alpha1.ApplyItem{Operation: &cupv1alpha1.ApplyItem_Put{Put: &cupv1alpha1.ApplyPut{
		Group: b.t.group(), Version: b.t.version, Plural: b.t.plural(), Namespace: b.namespace, Name: name,
		Resource: b.r, ResourceVersion: b.resourceVersion, Create: b.create,
	}}}
}

// apply sends req with items as its items, and names the resource of the
// files in an error the server answers about one of them.
func (c *cli) apply(ctx context.Context, items []batchItem, req *cupv1alpha1.ApplyRequest) (*cupv1alpha1.ApplyResponse, error) {
	conn, err := c.connect()
	if err != nil {
		return nil, err
	}
	req.Items = make([]*cupv1alpha1.ApplyItem, len(items))
	for i := range items {
		req.Items[i] = items[i].proto()
	}
	res, err := conn.resources.Apply(ctx, connect.NewRequest(req))
	if err == nil {
		return res.Msg, nil
	}
	// The server names the item; say which resource of the files it is.
	if m := itemIndex.FindStringSubmatch(errorMessage(err)); m != nil {
		if i, aerr := strconv.Atoi(m[1]); aerr == nil && i < len(items) {
			return nil, &resourceError{resource: items[i].name(), err: err}
		}
	}
	if len(items) == 1 { // whatever failed, it was about this one
		return nil, &resourceError{resource: items[0].name(), err: err}
	}
	if connect.CodeOf(err) == connect.CodeResourceExhausted {
		return nil, fmt.Errorf("%s: a batch of %d resources is too much for the server at once; pass --atomic=false to write them one by one, or split the files", errorMessage(err), len(items))
	}
	return nil, err
}

// itemIndex finds the item an Apply error names ("items[3]...").
var itemIndex = regexp.MustCompile(`^items\[(\d+)\]`)

// applyBatch writes items as one commit with Apply and prints a line per
// resource (created, configured, unchanged or deleted; nothing for a
// missing resource whose delete was to be ignored), then the commit.
func (c *cli) applyBatch(ctx context.Context, items []batchItem, w *writeFlags, changeSet string) error {
	if len(items) > maxBatch {
		return fmt.Errorf("%d resources are more than the %d one batch takes: split them, or pass --atomic=false to write them one by one", len(items), maxBatch)
	}
	res, err := c.apply(ctx, items, &cupv1alpha1.ApplyRequest{
		DryRun: w.dryRun, Message: w.message, ChangeSet: changeSet, IdempotencyKey: w.idempotencyKey,
	})
	if err != nil {
		return err
	}
	result := res.GetResult()
	dry := ""
	if result.GetOutcome() == cupv1alpha1.WriteOutcome_WRITE_OUTCOME_DRY_RUN {
		dry = " (dry run)"
	}
	for i, it := range res.GetItems() {
		if i >= len(items) {
			break
		}
		b := &items[i]
		var word string
		switch {
		case it.GetOutcome() == cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED && b.delete:
			continue // not there, and --ignore-not-found
		case it.GetOutcome() == cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED:
			word = "unchanged"
		case b.delete:
			word = "deleted" + dry
		case b.create || it.GetCreated():
			word = "created" + dry
		default:
			word = "configured" + dry
		}
		fmt.Fprintf(c.stdout, "%s %s\n", b.name(), word)
	}
	if result.GetOutcome() != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED {
		fmt.Fprintln(c.stdout, describeResult(result))
	}
	return nil
}

// putEach writes items one by one, each its own commit, as
// --atomic=false asks: a failure stops there, leaving the earlier
// ones written.
func (c *cli) putEach(ctx context.Context, items []batchItem, w *writeFlags, changeSet string) error {
	conn, err := c.connect()
	if err != nil {
		return err
	}
	for i := range items {
		b := &items[i]
		key := w.key(i, len(items))
		if b.delete {
			res, err := conn.resources.Delete(ctx, connect.NewRequest(&cupv1alpha1.DeleteRequest{
				Group: b.t.group(), Version: b.t.version, Plural: b.t.plural(), Namespace: b.namespace, Name: b.r.GetMetadata().GetName(),
				ResourceVersion: b.resourceVersion, DryRun: w.dryRun, Message: w.message, ChangeSet: changeSet, IdempotencyKey: key,
			}))
			if b.ignoreNotFound && connect.CodeOf(err) == connect.CodeNotFound {
				continue
			}
			if err != nil {
				return &resourceError{resource: b.name(), err: err}
			}
			fmt.Fprintf(c.stdout, "%s deleted: %s\n", b.name(), describeResult(res.Msg.GetResult()))
			continue
		}
		res, err := conn.resources.Put(ctx, connect.NewRequest(&cupv1alpha1.PutRequest{
			Group: b.t.group(), Version: b.t.version, Plural: b.t.plural(), Namespace: b.namespace,
			Name: b.r.GetMetadata().GetName(), Resource: b.r, ResourceVersion: b.resourceVersion, Create: b.create,
			DryRun: w.dryRun, Message: w.message, ChangeSet: changeSet, IdempotencyKey: key,
		}))
		if err != nil {
			return &resourceError{resource: b.name(), err: err}
		}
		fmt.Fprintf(c.stdout, "%s %s\n", b.name(), describeResult(res.Msg.GetResult()))
	}
	return nil
}

// write writes items: in one batch, or with atomic false one by one.
func (c *cli) write(ctx context.Context, items []batchItem, w *writeFlags, atomic bool) error {
	cs, err := c.changeSet(ctx, w)
	if err != nil {
		return err
	}
	if atomic {
		return c.applyBatch(ctx, items, w, cs)
	}
	return c.putEach(ctx, items, w, cs)
}

const atomicHelp = "write everything as one commit, or nothing if any resource fails; false writes each resource as its own commit and stops at the first failure (for batches past 10,000 resources)"

func (c *cli) newApplyCommand() *cobra.Command {
	return c.newPutCommand(false)
}

func (c *cli) newCreateCommand() *cobra.Command {
	return c.newPutCommand(true)
}

// newPutCommand is cup apply, or with create cup create.
func (c *cli) newPutCommand(create bool) *cobra.Command {
	var (
		w      writeFlags
		files  []string
		atomic bool
	)
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "Create or replace resources from files",
		Long: `Create or replace the resources in files: JSON (one resource or an array)
or YAML (documents separated by ---); a directory is read recursively
(.json, .yaml and .yml files); - reads stdin. A resource without
metadata.namespace goes to the namespace of -n; one whose namespace
differs from an -n given is refused, as kubectl does.

Everything is written as one commit (or one proposal): every resource is
validated first, and if any fails nothing is written. --atomic=false
writes each resource as its own commit instead, stopping at the first
failure (with --idempotency-key KEY, each gets KEY-<n>).

A top-level status (what cup get prints of a reconciler's primary) is
ignored: the server derives it and never writes it.

Prints a line per resource: plural.group/name, then configured or
unchanged; then the commit (committed <commit>, proposed <url> or dry
run: N files). With --atomic=false, a line per resource with its own
commit.`,
		Example: `  cup apply -f flags/
  cup apply -f flag.yaml --dry-run
  cup apply -f flag.yaml --proposal 42 --message "Roll out to 60%"
  cup apply -f huge/ --atomic=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			tgs, err := c.targets(ctx, files)
			if err != nil {
				return err
			}
			items := make([]batchItem, len(tgs))
			for i, tg := range tgs {
				items[i] = batchItem{target: tg, create: create}
			}
			return c.write(ctx, items, &w, atomic)
		},
	}
	if create {
		cmd.Use = "create -f FILE|DIR|-"
		cmd.Short = "Create resources from files; fails if any exists"
		cmd.Long = `Create the resources in files (read as cup apply reads them). If any of
them exists, or fails validation, nothing is written (AlreadyExists).
--atomic=false creates them one by one, stopping at the first failure.

Prints a line per resource (plural.group/name created), then the commit.`
		cmd.Example = `  cup create -f flags/
  cup create -f flag.yaml --dry-run`
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "a file, a directory or - for stdin (repeatable)")
	cmd.Flags().BoolVar(&atomic, "atomic", true, atomicHelp)
	w.add(cmd.Flags())
	return cmd
}

func (c *cli) newDeleteCommand() *cobra.Command {
	var (
		w                                  writeFlags
		files                              []string
		selector                           string
		all, allNamespaces, ignoreNotFound bool
		atomic                             bool
	)
	cmd := &cobra.Command{
		Use:   "delete TYPE NAME... | TYPE -l SELECTOR | TYPE --all | -f FILE|DIR|-",
		Short: "Delete resources",
		Long: `Delete resources named on the command line or in files (see cup apply),
or those of a type that a label selector (-l) selects, or all of them
(--all), in the namespace or, with -A, in every namespace.

Everything is deleted in one commit (or one proposal), or nothing if any
delete fails. Resources selected by -l or --all are deleted only as they
were listed: a resource changed meanwhile fails the whole delete.
--atomic=false deletes each resource as its own commit.

Prints a line per resource (plural.group/name deleted), then the commit;
with --ignore-not-found, nothing for a resource that is not there.`,
		Example: `  cup delete flags dark-mode search-v2
  cup delete flags -l team=web
  cup delete flags --all -n staging
  cup delete -f flags/ --ignore-not-found`,
		ValidArgsFunction: c.completeTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			conn, err := c.connect()
			if err != nil {
				return err
			}
			var items []batchItem
			selecting := selector != "" || all
			switch {
			case len(files) > 0 && len(args) > 0:
				return errors.New("name resources either with -f or as TYPE NAME..., not both")
			case len(files) > 0 && (selecting || allNamespaces):
				return errors.New("-l, --all and -A select resources of a TYPE: they cannot be used with -f")
			case len(files) > 0:
				tgs, err := c.targets(ctx, files)
				if err != nil {
					return err
				}
				for _, tg := range tgs {
					items = append(items, batchItem{target: tg, delete: true, ignoreNotFound: ignoreNotFound})
				}
			case len(args) == 0:
				return errors.New("name a TYPE and at least one NAME, a TYPE with -l SELECTOR or --all, or -f FILE")
			case selector != "" && all:
				return errors.New("-l and --all both select resources: use one")
			case len(args) > 1 && (selecting || allNamespaces):
				return errors.New("-l, --all and -A select resources: they cannot be used with named resources")
			case len(args) == 1 && !selecting:
				return fmt.Errorf("name the %s to delete (cup delete %s NAME...), select them with -l SELECTOR, or delete every one with --all", args[0], args[0])
			case selecting:
				t, err := c.resolveType(ctx, args[0])
				if err != nil {
					return err
				}
				namespace := conn.namespace
				if allNamespaces {
					namespace = ""
				}
				if items, err = c.selected(ctx, t, namespace, selector); err != nil {
					return err
				}
				if len(items) == 0 {
					_, err := fmt.Fprintln(c.stderr, noResources(namespace))
					return err
				}
			default:
				t, err := c.resolveType(ctx, args[0])
				if err != nil {
					return err
				}
				for _, name := range args[1:] {
					items = append(items, batchItem{
						target: target{t: t, namespace: conn.namespace, r: &cupv1alpha1.Resource{Metadata: &cupv1alpha1.ObjectMeta{Name: name}}},
						delete: true, ignoreNotFound: ignoreNotFound,
					})
				}
			}
			return c.write(ctx, items, &w, atomic)
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&files, "filename", "f", nil, "a file, a directory or - for stdin (repeatable)")
	f.StringVarP(&selector, "selector", "l", "", "delete the resources of TYPE this label selector selects (team=web, 'tier in (web,api)')")
	f.BoolVar(&all, "all", false, "delete every resource of TYPE in the namespace (with -A, in every namespace)")
	f.BoolVarP(&allNamespaces, "all-namespaces", "A", false, "with -l or --all: select in every namespace")
	f.BoolVar(&ignoreNotFound, "ignore-not-found", false, "a resource that is not there is no error, and prints nothing")
	f.BoolVar(&atomic, "atomic", true, atomicHelp)
	w.add(f)
	return cmd
}

// selected lists the resources of t that selector selects (every one
// when empty) in namespace, or in every namespace when it is empty, as
// deletes that hold each resource's resourceVersion as a precondition.
// The pages of a listing are of one commit.
func (c *cli) selected(ctx context.Context, t typeRef, namespace, selector string) ([]batchItem, error) {
	conn, err := c.connect()
	if err != nil {
		return nil, err
	}
	req := &cupv1alpha1.ListRequest{
		Group: t.group(), Version: t.version, Plural: t.plural(), Namespace: namespace, LabelSelector: selector,
	}
	var items []batchItem
	err = eachPage(ctx, conn, req, func(res *cupv1alpha1.ListResponse) {
		for _, r := range res.GetItems() {
			md := r.GetMetadata()
			items = append(items, batchItem{
				target: target{t: t, namespace: md.GetNamespace(), r: &cupv1alpha1.Resource{Metadata: &cupv1alpha1.ObjectMeta{Name: md.GetName()}}},
				delete: true, resourceVersion: md.GetResourceVersion(),
			})
		}
	})
	return items, err
}

func (c *cli) newDiffCommand() *cobra.Command {
	var (
		files    []string
		proposal string
	)
	cmd := &cobra.Command{
		Use:   "diff -f FILE|DIR|-",
		Short: "Show what applying files would change, as unified diffs",
		Long: `Show what cup apply -f would change in the repository: the server's unified
diff of each file a write would change (a dry run; nothing is written).
Prints nothing when nothing would change.

As kubectl diff, exits 0 when nothing would change, 1 when something would,
and 2 on an error.`,
		Args: func(cmd *cobra.Command, args []string) error {
			return diffError(cobra.NoArgs(cmd, args))
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			differs, err := c.diff(cmd.Context(), files, proposal)
			if err != nil {
				return diffError(err)
			}
			if differs {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return diffError(err) })
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "a file, a directory or - for stdin (repeatable)")
	cmd.Flags().StringVar(&proposal, "proposal", "", "compare with the change set of the proposal with this id")
	return cmd
}

// diff prints the diffs of applying files and says whether any file would
// change.
func (c *cli) diff(ctx context.Context, files []string, proposal string) (bool, error) {
	tgs, err := c.targets(ctx, files)
	if err != nil {
		return false, err
	}
	w := writeFlags{proposal: proposal}
	cs, err := c.changeSet(ctx, &w)
	if err != nil {
		return false, err
	}
	// One dry run of the whole batch, as apply would write it; past a
	// batch's size, one per resource.
	var results []*cupv1alpha1.WriteResult
	if len(tgs) <= maxBatch {
		items := make([]batchItem, len(tgs))
		for i, tg := range tgs {
			items[i] = batchItem{target: tg}
		}
		res, err := c.apply(ctx, items, &cupv1alpha1.ApplyRequest{DryRun: true, ChangeSet: cs})
		if err != nil {
			return false, err
		}
		results = append(results, res.GetResult())
	} else {
		for _, tg := range tgs {
			res, err := c.put(ctx, tg, &w, cs, "", true, "")
			if err != nil {
				return false, &resourceError{resource: tg.t.qualified() + "/" + tg.r.GetMetadata().GetName(), err: err}
			}
			results = append(results, res.GetResult())
		}
	}
	differs := false
	for _, r := range results {
		for _, ch := range r.GetChanges() {
			differs = true
			d := ch.GetDiff()
			if d != "" && d[len(d)-1] != '\n' {
				d += "\n"
			}
			fmt.Fprint(c.stdout, d)
		}
	}
	return differs, nil
}

// diffError makes an error of cup diff exit 2, since 1 says that
// something would change.
func diffError(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: 2, err: err}
}
