package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

func (c *cli) newProposalsCommand() *cobra.Command {
	var state, output string
	cmd := &cobra.Command{
		Use:     "proposals",
		Aliases: []string{"proposal"},
		Short:   "List the proposals (pull or merge requests) cupd opened",
		Long: `List the proposals cupd opened, newest first: ID, STATE, BRANCH and URL.
Needs a cupd with an SCM configured (--scm).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			conn, err := c.connect()
			if err != nil {
				return err
			}
			req := &cupv1alpha1.ListProposalsRequest{}
			if state != "" {
				v, ok := cupv1alpha1.ProposalState_value["PROPOSAL_STATE_"+strings.ToUpper(state)]
				if !ok {
					return fmt.Errorf("--state: %q is not one of open, merged, closed", state)
				}
				req.State = cupv1alpha1.ProposalState(v)
			}
			res, err := conn.proposals.ListProposals(cmd.Context(), connect.NewRequest(req))
			if err != nil {
				return err
			}
			switch output {
			case "json", "yaml":
				m, err := resourceObject(res.Msg)
				if err != nil {
					return err
				}
				return encode(c.stdout, m, output)
			case "table":
			default:
				return fmt.Errorf("-o: %q is not one of table, json, yaml", output)
			}
			tw := tabwriter.NewWriter(c.stdout, 0, 8, 3, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATE\tBRANCH\tURL")
			for _, p := range res.Msg.GetProposals() {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cell(p.GetId()), stateName(p.GetState()), cell(p.GetBranch()), cell(p.GetUrl()))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "only proposals in this state: open, merged or closed")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, json or yaml")
	getOutput := "yaml"
	get := &cobra.Command{
		Use:   "get ID",
		Short: "Print one proposal",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conn, err := c.connect()
			if err != nil {
				return err
			}
			res, err := conn.proposals.GetProposal(cmd.Context(), connect.NewRequest(&cupv1alpha1.GetProposalRequest{Id: args[0]}))
			if err != nil {
				return err
			}
			if getOutput != "json" && getOutput != "yaml" {
				return fmt.Errorf("-o: %q is not one of json, yaml", getOutput)
			}
			m, err := resourceObject(res.Msg.GetProposal())
			if err != nil {
				return err
			}
			return encode(c.stdout, m, getOutput)
		},
	}
	get.Flags().StringVarP(&getOutput, "output", "o", "yaml", "json or yaml")
	cmd.AddCommand(get)
	refuseUnknownSubcommands(cmd)
	return cmd
}

func stateName(s cupv1alpha1.ProposalState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "PROPOSAL_STATE_"))
}
