package main

import (
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
