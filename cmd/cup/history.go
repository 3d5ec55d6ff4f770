package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

func (c *cli) newHistoryCommand() *cobra.Command {
	var (
		output    string
		limit     int
		chunkSize int32
	)
	cmd := &cobra.Command{
		Use:   "history TYPE NAME | TYPE/NAME",
		Short: "List the commits that changed a resource",
		Long: `List the commits of the served branch that changed a resource, newest
first (following first parents: a merged proposal is its merge commit).

Columns: REVISION (the commit, 12 characters; give it to cup get --revision
or cup revert --to), AGE (of the commit), AUTHOR (the commit's), REQUESTED-BY
(who asked cupd for the change, when the server knew), CHANGE (created,
modified or deleted) and SUBJECT (the commit message's first line).
-o json and yaml print the entries in full.`,
		Example: `  cup history flags new-checkout
  cup history flag/new-checkout --limit 5
  cup history flags new-checkout -o yaml`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: c.completeTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch output {
			case "table", "json", "yaml":
			default:
				return fmt.Errorf("-o: %q is not one of table, json, yaml", output)
			}
			if limit < 0 {
				return errors.New("--limit must not be negative")
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
			entries, commit, err := c.history(ctx, t, conn.namespace, name, limit, chunkSize)
			if err != nil {
				return err
			}
			if output != "table" {
				list := []any{}
				for _, e := range entries {
					m, err := resourceObject(e)
					if err != nil {
						return err
					}
					list = append(list, m)
				}
				return encode(c.stdout, map[string]any{"commit": commit, "entries": list}, output)
			}
			if len(entries) == 0 {
				_, err := fmt.Fprintf(c.stderr, "No history found for %s/%s in namespace %s.\n", t.qualified(), name, conn.namespace)
				return err
			}
			now := time.Now()
			tw := tabwriter.NewWriter(c.stdout, 0, 8, 3, ' ', 0)
			fmt.Fprintln(tw, "REVISION\tAGE\tAUTHOR\tREQUESTED-BY\tCHANGE\tSUBJECT")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", shortRevision(e.GetCommit()), age(now, e.GetTime()),
					cell(orNone(e.GetAuthorName())), cell(orNone(e.GetRequester())), changeName(e.GetChange()), cell(e.GetSubject()))
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVarP(&output, "output", "o", "table", "table, json or yaml")
	f.IntVar(&limit, "limit", 0, "print at most this many entries, the newest (0: all)")
	f.Int32Var(&chunkSize, "chunk-size", 100, "entries per request (0: the server's default); every page is fetched")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// resourceArgs resolves the TYPE NAME or TYPE/NAME of a command about one
// resource.
func (c *cli) resourceArgs(ctx context.Context, args []string) (typeRef, string, error) {
	typ, name := args[0], ""
	if len(args) == 2 {
		name = args[1]
	} else if t, n, ok := strings.Cut(typ, "/"); ok {
		typ, name = t, n
	}
	if name == "" {
		return typeRef{}, "", errors.New("name the resource: TYPE NAME or TYPE/NAME")
	}
	t, err := c.resolveType(ctx, typ)
	return t, name, err
}

// history reads the history of a resource, newest first: every page, or
// the first limit entries; commit is the one it was read from.
func (c *cli) history(ctx context.Context, t typeRef, namespace, name string, limit int, chunkSize int32) (entries []*cupv1alpha1.HistoryEntry, commit string, err error) {
	conn, err := c.connect()
	if err != nil {
		return nil, "", err
	}
	req := &cupv1alpha1.HistoryRequest{
		Group: t.group(), Version: t.version, Plural: t.plural(), Namespace: namespace, Name: name, PageSize: chunkSize,
	}
	for {
		if limit > 0 && (req.PageSize == 0 || int(req.PageSize) > limit-len(entries)) {
			req.PageSize = int32(min(limit-len(entries), 1000))
		}
		res, err := conn.resources.History(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, "", err
		}
		if commit == "" {
			commit = res.Msg.GetCommit()
		}
		entries = append(entries, res.Msg.GetEntries()...)
		if limit > 0 && len(entries) >= limit {
			return entries[:limit], commit, nil
		}
		if res.Msg.GetNextPageToken() == "" {
			return entries, commit, nil
		}
		req.PageToken = res.Msg.GetNextPageToken()
	}
}

// shortRevision is a commit's first 12 characters, as history prints it.
func shortRevision(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// age is how long before now the RFC 3339 time at was, as kubectl prints
// ages (5m, 2d3h); <unknown> when at is not a time.
func age(now time.Time, at string) string {
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

func changeName(c cupv1alpha1.ChangeType) string {
	return strings.ToLower(strings.TrimPrefix(c.String(), "CHANGE_TYPE_"))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
