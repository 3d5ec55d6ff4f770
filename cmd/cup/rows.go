package main

import (
	"io"
	"strings"
	"unicode/utf8"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// rowPrinter prints table rows as cup's tables are printed (columns three
// spaces apart), remembering the widths of the columns it printed, so that
// rows printed later, one at a time, line up with those before them as far
// as they fit (kubectl's watch tables do the same).
type rowPrinter struct {
	w      io.Writer
	widths []int
}

// print widens the columns to fit rows, then prints them.
func (p *rowPrinter) print(rows ...[]string) error {
	for _, r := range rows {
		for i, cell := range r {
			if i == len(p.widths) {
				p.widths = append(p.widths, 0)
			}
			p.widths[i] = max(p.widths[i], utf8.RuneCountInString(cell))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, cell := range r {
			b.WriteString(cell)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", p.widths[i]-utf8.RuneCountInString(cell)+3))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

// resourceColumns is the header of a table of resources as output (table
// or wide) prints it: with all, across namespaces, NAMESPACE comes first,
// as kubectl puts it, and only there.
func resourceColumns(output string, all bool) []string {
	var cols []string
	if all {
		cols = append(cols, "NAMESPACE")
	}
	cols = append(cols, "NAME", "RESOURCE VERSION")
	if output == "wide" {
		if !all {
			cols = append(cols, "NAMESPACE")
		}
		cols = append(cols, "LABELS")
	}
	return cols
}

// resourceRow is the row of the resource md names, under resourceColumns,
// with name in the NAME column.
func resourceRow(md *cupv1alpha1.ObjectMeta, name, output string, all bool) []string {
	var row []string
	if all {
		row = append(row, md.GetNamespace())
	}
	row = append(row, name, short(md.GetResourceVersion()))
	if output == "wide" {
		if !all {
			row = append(row, md.GetNamespace())
		}
		row = append(row, formatLabels(md.GetLabels()))
	}
	return row
}

// noResources is what an empty list says on stderr, as kubectl says it;
// namespace is "" for a list across namespaces.
func noResources(namespace string) string {
	if namespace == "" {
		return "No resources found."
	}
	return "No resources found in namespace " + namespace + "."
}
