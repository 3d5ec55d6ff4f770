package main

import (
	"fmt"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

func (c *cli) newRenderCommand() *cobra.Command {
	var revision, output string
	cmd := &cobra.Command{
		Use:   "render TYPE NAME | TYPE/NAME",
		Short: "Show what the reconcilers make of a resource, without writing",
		Long: `Show, for each reconciler whose primary type is TYPE, what it makes of the
resource at the commit read, and write nothing: the outputs it should have
(for layered configuration, the unified result), the resource as the
reconciler would write it, the changes a write would make, and the
conditions (a conflict names both layers and their positions).

With --revision, render at a branch, tag, commit or change set: what a
proposal would produce before it is merged. Outputs of types you may not
read are left out and counted (hiddenOutputs).`,
		Example: `  cup render service api -n staging
  cup render service/api -n staging --revision cup/5f2c81d0a4 -o json`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: c.completeTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch output {
			case "json", "yaml":
			default:
				return fmt.Errorf("-o: %q is not one of yaml, json", output)
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
			res, err := conn.resources.Render(ctx, connect.NewRequest(&cupv1alpha1.RenderRequest{
				Group: t.group(), Version: t.version, Plural: t.plural(), Namespace: conn.namespace, Name: name, Revision: revision,
			}))
			if err != nil {
				return err
			}
			if len(res.Msg.GetRenderings()) == 0 {
				fmt.Fprintf(c.stderr, "No reconciler has %s as its primary: nothing to render.\n", t.qualified())
			}
			m, err := resourceObject(res.Msg)
			if err != nil {
				return err
			}
			return encode(c.stdout, m, output)
		},
	}
	f := cmd.Flags()
	f.StringVar(&revision, "revision", "", "render at a branch, tag, commit or change set (default: the server's branch)")
	f.StringVarP(&output, "output", "o", "yaml", "yaml or json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"yaml", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
