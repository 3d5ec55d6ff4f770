package main

import (
	"context"
	"errors"
	"fmt"

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
	f.StringVar(&w.idempotencyKey, "idempotency-key", "", "makes the write safe to retry: a repeat with the same key writes nothing (with several resources, each gets KEY-<n>)")
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

func (c *cli) newApplyCommand() *cobra.Command {
	var (
		w     writeFlags
		files []string
	)
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "Create or replace resources from files",
		Long: `Create or replace the resources in files: JSON (one resource or an array)
or YAML (documents separated by ---); a directory is read recursively
(.json, .yaml and .yml files); - reads stdin. A resource without
metadata.namespace goes to the namespace of -n.

A top-level status (what cup get prints of a reconciler's primary) is
ignored: the server derives it and never writes it.

Prints a line per resource: plural.group/name, then unchanged, committed
<commit>, proposed <url> or dry run: N files.`,
		Example: `  cup apply -f flags/
  cup apply -f flag.yaml --dry-run
  cup apply -f flag.yaml --proposal 42 --message "Roll out to 60%"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			tgs, err := c.targets(ctx, files)
			if err != nil {
				return err
			}
			cs, err := c.changeSet(ctx, &w)
			if err != nil {
				return err
			}
			for i, tg := range tgs {
				res, err := c.put(ctx, tg, &w, cs, w.key(i, len(tgs)), w.dryRun, "")
				if err != nil {
					return &resourceError{resource: tg.t.qualified() + "/" + tg.r.GetMetadata().GetName(), err: err}
				}
				fmt.Fprintf(c.stdout, "%s/%s %s\n", tg.t.qualified(), tg.r.GetMetadata().GetName(), describeResult(res.GetResult()))
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "a file, a directory or - for stdin (repeatable)")
	w.add(cmd.Flags())
	return cmd
}

func (c *cli) newDeleteCommand() *cobra.Command {
	var (
		w     writeFlags
		files []string
	)
	cmd := &cobra.Command{
		Use:   "delete TYPE NAME... | -f FILE|DIR|-",
		Short: "Delete resources",
		Long: `Delete resources named on the command line or in files (see cup apply).

Prints a line per resource: plural.group/name, then committed <commit>,
proposed <url> or dry run: N files.`,
		ValidArgsFunction: c.completeTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			conn, err := c.connect()
			if err != nil {
				return err
			}
			var tgs []target
			switch {
			case len(files) > 0 && len(args) > 0:
				return errors.New("name resources either with -f or as TYPE NAME..., not both")
			case len(files) > 0:
				if tgs, err = c.targets(ctx, files); err != nil {
					return err
				}
			case len(args) < 2:
				return errors.New("name a TYPE and at least one NAME, or -f FILE")
			default:
				t, err := c.resolveType(ctx, args[0])
				if err != nil {
					return err
				}
				for _, name := range args[1:] {
					tgs = append(tgs, target{t: t, namespace: conn.namespace, r: &cupv1alpha1.Resource{Metadata: &cupv1alpha1.ObjectMeta{Name: name}}})
				}
			}
			cs, err := c.changeSet(ctx, &w)
			if err != nil {
				return err
			}
			for i, tg := range tgs {
				name := tg.r.GetMetadata().GetName()
				res, err := conn.resources.Delete(ctx, connect.NewRequest(&cupv1alpha1.DeleteRequest{
					Group: tg.t.group(), Version: tg.t.version, Plural: tg.t.plural(), Namespace: tg.namespace, Name: name,
					DryRun: w.dryRun, Message: w.message, ChangeSet: cs, IdempotencyKey: w.key(i, len(tgs)),
				}))
				if err != nil {
					return &resourceError{resource: tg.t.qualified() + "/" + name, err: err}
				}
				fmt.Fprintf(c.stdout, "%s/%s deleted: %s\n", tg.t.qualified(), name, describeResult(res.Msg.GetResult()))
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "a file, a directory or - for stdin (repeatable)")
	w.add(cmd.Flags())
	return cmd
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
	differs := false
	for _, tg := range tgs {
		res, err := c.put(ctx, tg, &w, cs, "", true, "")
		if err != nil {
			return false, &resourceError{resource: tg.t.qualified() + "/" + tg.r.GetMetadata().GetName(), err: err}
		}
		for _, ch := range res.GetResult().GetChanges() {
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
