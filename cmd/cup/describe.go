package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/document"
)

// describeHistory is how many history entries describe prints.
const describeHistory = 5

func (c *cli) newDescribeCommand() *cobra.Command {
	var revision string
	cmd := &cobra.Command{
		Use:   "describe TYPE NAME | TYPE/NAME",
		Short: "Show a resource in detail: metadata, spec, conditions, history and proposals",
		Long: `Show one resource for a person to read, as kubectl describe does:

  metadata    name, namespace, kind, labels, annotations, the commit read
              and the resource version
  Spec        the spec, as YAML
  Conditions  what the reconcilers whose primary the type is derive for it
              at that commit (RECONCILER, TYPE, STATUS, REASON, AGE of the
              commit it was derived at, MESSAGE); left out for other types
  History     the last 5 commits of the served branch that changed it
              (cup history prints them all)
  Proposals   the open proposals that change it (with an SCM)

Text from the repository (labels, messages, subjects) is printed with
control characters escaped, so that it cannot drive the terminal.`,
		Example: `  cup describe bundle staging -n staging
  cup describe flag/new-checkout
  cup describe flags new-checkout --revision cup/5f2c81d0a4`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: c.completeTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, name, err := c.resourceArgs(ctx, args)
			if err != nil {
				return err
			}
			conn, err := c.connect()
			if err != nil {
				return err
			}
			res, err := c.get(ctx, t, conn.namespace, name, revision)
			if err != nil {
				return err
			}
			// History is the served branch's, whatever revision was read;
			// a server that cannot give it still has the rest described.
			entries, _, histErr := c.history(ctx, t, conn.namespace, name, describeHistory, describeHistory)
			return describe(c.stdout, time.Now(), res, entries, histErr)
		},
	}
	cmd.Flags().StringVar(&revision, "revision", "", "read at a branch, tag, commit or change set (default: the server's branch)")
	return cmd
}

// describe prints what cup describe shows of res.
func describe(w io.Writer, now time.Time, res *cupv1alpha1.GetResponse, history []*cupv1alpha1.HistoryEntry, histErr error) error {
	r := res.GetResource()
	md := r.GetMetadata()
	var b strings.Builder
	field := func(k, v string) { fmt.Fprintf(&b, "%-13s %s\n", k+":", v) }
	field("Name", cell(md.GetName()))
	field("Namespace", cell(md.GetNamespace()))
	field("API Version", cell(r.GetApiVersion()))
	field("Kind", cell(r.GetKind()))
	mapField(&b, "Labels", md.GetLabels())
	mapField(&b, "Annotations", md.GetAnnotations())
	field("Commit", res.GetCommit())
	field("Version", md.GetResourceVersion())

	b.WriteString("Spec:\n")
	spec, err := specYAML(r)
	if err != nil {
		return err
	}
	b.WriteString(indent(spec, "  "))

	if st := res.GetStatus(); st != nil {
		rows := [][]string{{"RECONCILER", "TYPE", "STATUS", "REASON", "AGE", "MESSAGE"}}
		for _, c := range st.GetConditions() {
			rows = append(rows, []string{cell(c.GetReconciler()), cell(c.GetType()), cell(c.GetStatus()), cell(orNone(c.GetReason())),
				age(now, c.GetLastTransitionTime()), cell(c.GetMessage())})
		}
		section(&b, "Conditions", rows)
	}

	switch {
	case histErr != nil:
		fmt.Fprintf(&b, "History:      <cannot be read: %s>\n", cell(histErr.Error()))
	default:
		rows := [][]string{{"REVISION", "AGE", "AUTHOR", "REQUESTED-BY", "CHANGE", "SUBJECT"}}
		for _, e := range history {
			rows = append(rows, []string{shortRevision(e.GetCommit()), age(now, e.GetTime()), cell(orNone(e.GetAuthorName())),
				cell(orNone(e.GetRequester())), changeName(e.GetChange()), cell(e.GetSubject())})
		}
		title := fmt.Sprintf("History (the last %d)", describeHistory)
		if len(history) < describeHistory {
			title = "History"
		}
		section(&b, title, rows)
	}

	rows := [][]string{{"ID", "STATE", "BRANCH", "TITLE", "URL"}}
	for _, p := range res.GetProposals() {
		rows = append(rows, []string{cell(p.GetId()), stateName(p.GetState()), cell(p.GetBranch()), cell(p.GetTitle()), cell(p.GetUrl())})
	}
	section(&b, "Proposals", rows)
	_, err = io.WriteString(w, b.String())
	return err
}

// mapField prints labels or annotations, one key=value a line, sorted.
func mapField(b *strings.Builder, name string, m map[string]string) {
	if len(m) == 0 {
		fmt.Fprintf(b, "%-13s <none>\n", name+":")
		return
	}
	for i, k := range slices.Sorted(maps.Keys(m)) {
		label := ""
		if i == 0 {
			label = name + ":"
		}
		fmt.Fprintf(b, "%-13s %s=%s\n", label, cell(k), cell(m[k]))
	}
}

// section prints a table under a title, or <none> when it has no rows
// beyond its header.
func section(b *strings.Builder, title string, rows [][]string) {
	if len(rows) == 1 {
		fmt.Fprintf(b, "%-13s <none>\n", title+":")
		return
	}
	b.WriteString(title + ":\n")
	var t strings.Builder
	p := rowPrinter{w: &t}
	_ = p.print(rows...)
	for line := range strings.Lines(t.String()) {
		b.WriteString("  " + strings.TrimRight(line, " \n") + "\n")
	}
}

// specYAML is the spec of r as YAML, with control characters in its
// strings escaped as YAML escapes them.
func specYAML(r *cupv1alpha1.Resource) (string, error) {
	m, err := resourceObject(r)
	if err != nil {
		return "", err
	}
	spec, ok := m["spec"]
	if !ok || spec == nil {
		return "<none>\n", nil
	}
	j, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	if _, inexact := document.InexactInYAML(j); inexact {
		// A number YAML cannot hold exactly: JSON, as it was.
		return string(j) + "\n", nil
	}
	y, err := document.JSONToYAML(j)
	if err != nil {
		return "", err
	}
	return escapeControls(string(y)), nil
}

// indent puts prefix before every line of s.
func indent(s, prefix string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString(prefix + line)
	}
	return b.String()
}
