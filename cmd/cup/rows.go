package main

import (
	"io"
	"strings"
	"unicode/utf8"
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

// noResources is what an empty list says on stderr, as kubectl says it;
// namespace is "" for a list across namespaces.
func noResources(namespace string) string {
	if namespace == "" {
		return "No resources found."
	}
	return "No resources found in namespace " + namespace + "."
}
