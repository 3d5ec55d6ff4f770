package main

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

func (c *cli) newRevertCommand() *cobra.Command {
	var (
		w  writeFlags
		to string
	)
	cmd := &cobra.Command{
		Use:   "revert TYPE NAME --to REVISION | TYPE/NAME --to REVISION",
		Short: "Write a resource back as it was at an earlier revision",
		Long: `Write a resource back as it was at REVISION (a commit, as cup history
prints it, or a branch or tag), through the normal write path: a commit, or
a proposal when the server proposes writes. The write happens only if
nobody changed the resource since cup read it. A resource that did not
exist at REVISION is deleted; one that does not exist now is created.

Prints plural.group/name reverted to REVISION, then unchanged, committed
<commit>, proposed <url> or dry run: N files; --dry-run prints the diff of
each file the revert would change first, and writes nothing.`,
		Example: `  cup history flags new-checkout
  cup revert flags new-checkout --to 3f2a9c1b7d4e --dry-run
  cup revert flag/new-checkout --to 3f2a9c1b7d4e --message "Roll back the rollout"`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: c.completeTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return errors.New("--to is required: the revision to go back to (a commit from cup history TYPE NAME, a branch or a tag)")
			}
			ctx := cmd.Context()
			t, name, err := c.resourceArgs(ctx, args)
			if err != nil {
				return err
			}
			conn, err := c.connect()
			if err != nil {
				return err
			}
			res := t.qualified() + "/" + name
			old, commit, err := c.resourceAt(ctx, t, conn.namespace, name, to)
			if err != nil {
				return err
			}
			cur, _, err := c.resourceAt(ctx, t, conn.namespace, name, "")
			if err != nil {
				return err
			}
			rev := shortRevision(commit)
			if old == nil && cur == nil {
				return fmt.Errorf("%s exists neither at %s nor now: there is nothing to revert", res, to)
			}
			cs, err := c.changeSet(ctx, &w)
			if err != nil {
				return err
			}
			rw := w
			if rw.message == "" {
				rw.message = fmt.Sprintf("Revert %s %s/%s to %s\n\n%s %s", t.def.GetNames().GetKind(), conn.namespace, name, rev,
					t.apiVersion(), t.plural())
			}
			var (
				result *cupv1alpha1.WriteResult
				what   string
			)
			switch {
			case old == nil:
				what = " (deleted)"
				var dr *connect.Response[cupv1alpha1.DeleteResponse]
				dr, err = conn.resources.Delete(ctx, connect.NewRequest(&cupv1alpha1.DeleteRequest{
					Group: t.group(), Version: t.version, Plural: t.plural(), Namespace: conn.namespace, Name: name,
					ResourceVersion: cur.GetMetadata().GetResourceVersion(),
					DryRun:          w.dryRun, Message: rw.message, ChangeSet: cs, IdempotencyKey: w.key(0, 1),
				}))
				if err == nil {
					result = dr.Msg.GetResult()
				}
			default:
				r := proto.CloneOf(old)
				if r.Metadata != nil {
					r.Metadata.ResourceVersion = ""
				}
				rv := ""
				if cur == nil {
					what = " (created)"
				} else {
					rv = cur.GetMetadata().GetResourceVersion()
				}
				var pr *cupv1alpha1.PutResponse
				pr, err = c.put(ctx, target{t: t, namespace: conn.namespace, r: r}, &rw, cs, w.key(0, 1), w.dryRun, rv)
				if err == nil {
					result = pr.GetResult()
				}
			}
			if connect.CodeOf(err) == connect.CodeAborted {
				return fmt.Errorf("%s changed since it was read; run cup revert again (%s)", res, errorMessage(err))
			}
			if err != nil {
				return &resourceError{resource: res, err: err}
			}
			if w.dryRun {
				for _, ch := range result.GetChanges() {
					d := ch.GetDiff()
					if d != "" && d[len(d)-1] != '\n' {
						d += "\n"
					}
					fmt.Fprint(c.stdout, d)
				}
			}
			_, err = fmt.Fprintf(c.stdout, "%s reverted to %s%s: %s\n", res, rev, what, describeResult(result))
			return err
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the revision to go back to: a commit (see cup history), a branch or a tag")
	w.add(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("to", c.completeRevisions)
	return cmd
}

// resourceAt reads a resource at revision ("" for the served branch): nil
// when it does not exist there, and the commit revision names. An unknown
// revision is an error that says so.
func (c *cli) resourceAt(ctx context.Context, t typeRef, namespace, name, revision string) (*cupv1alpha1.Resource, string, error) {
	conn, err := c.connect()
	if err != nil {
		return nil, "", err
	}
	res, err := conn.resources.Get(ctx, connect.NewRequest(&cupv1alpha1.GetRequest{
		Group: t.group(), Version: t.version, Plural: t.plural(), Namespace: namespace, Name: name, Revision: revision,
	}))
	if err == nil {
		return res.Msg.GetResource(), res.Msg.GetCommit(), nil
	}
	if connect.CodeOf(err) != connect.CodeNotFound {
		return nil, "", err
	}
	// Not found: the resource, or the revision? A listing at the
	// revision tells, and names its commit.
	list, lerr := conn.resources.List(ctx, connect.NewRequest(&cupv1alpha1.ListRequest{
		Group: t.group(), Version: t.version, Plural: t.plural(), Namespace: namespace, Revision: revision, PageSize: 1,
	}))
	if connect.CodeOf(lerr) == connect.CodeNotFound && revision != "" {
		return nil, "", fmt.Errorf("--to %s does not name a commit, branch or tag of the repository (%s); see cup history for the commits", revision, errorMessage(lerr))
	}
	if lerr != nil {
		return nil, "", lerr
	}
	return nil, list.Msg.GetCommit(), nil
}

// completeRevisions completes --to with the commits that changed the
// resource that TYPE NAME names, newest first, with what they did.
func (c *cli) completeRevisions(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	t, name, err := c.resourceArgs(cmd.Context(), args)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	conn, err := c.connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	entries, _, err := c.history(cmd.Context(), t, conn.namespace, name, 100, 0)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []string
	for _, e := range entries {
		out = append(out, shortRevision(e.GetCommit())+"\t"+changeName(e.GetChange())+": "+e.GetSubject())
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}
