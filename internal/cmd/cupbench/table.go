package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
)

// table holds the figures: a line per measure, a column per binary.
type table struct {
	mu     sync.Mutex
	labels []string // the binaries' columns: "value", or "before" and "after"
	lines  []*line
	notes  []string
	// explained holds what a row measures, said once under the table.
	explained map[string]string
}

// line is one measure of a row.
type line struct {
	row, measure, unit, target string
	cells                      []cell
}

// cell is a binary's figure: nil when it has none, with a note (status
// codes, the spread).
type cell struct {
	v    *float64
	note string
}

func newTable(labels []string) *table {
	return &table{labels: labels, explained: map[string]string{}}
}

// explain says what row measures, once under the table.
func (t *table) explain(row, text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.explained[row] = text
}

func (t *table) line(row, measure, unit, target string) *line {
	for _, l := range t.lines {
		if l.row == row && l.measure == measure {
			return l
		}
	}
	l := &line{row: row, measure: measure, unit: unit, target: target, cells: make([]cell, len(t.labels))}
	t.lines = append(t.lines, l)
	return l
}

// set records binary col's figure v for the measure.
func (t *table) set(row, measure, unit, target string, col int, v float64, note string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.line(row, measure, unit, target).cells[col] = cell{v: &v, note: note}
}

// none records that binary col has no figure for the measure, and why.
func (t *table) none(row, measure, unit, target string, col int, why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.line(row, measure, unit, target).cells[col] = cell{note: why}
}

// get is binary col's figure for the measure, nil when it has none.
func (t *table) get(row, measure string, col int) *float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.lines {
		if l.row == row && l.measure == measure {
			return l.cells[col].v
		}
	}
	return nil
}

// ratio records binary col's ratio of the measures num and den of row.
func (t *table) ratio(row, measure, target string, col int, num, den string) {
	n, d := t.get(row, num, col), t.get(row, den, col)
	if n == nil || d == nil || *d == 0 {
		t.none(row, measure, "×", target, col, "no figures to divide")
		return
	}
	t.set(row, measure, "×", target, col, *n / *d, "")
}

func (t *table) note(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.notes = append(t.notes, s)
}

// print writes the table, with the ratio after/before when there are two
// binaries, then the notes.
func (t *table) print(w io.Writer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"row", "measure", "target"}
	head = append(head, t.labels...)
	if len(t.labels) == 2 {
		head = append(head, "after/before")
	}
	head = append(head, "notes")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	lines := slices.Clone(t.lines)
	slices.SortStableFunc(lines, func(a, b *line) int {
		return slices.Index(allRows, a.row) - slices.Index(allRows, b.row)
	})
	for _, l := range lines {
		cols := []string{l.row, l.measure, or(l.target, "-")}
		var notes []string
		for i, c := range l.cells {
			cols = append(cols, format(c.v, l.unit))
			if c.note != "" {
				if len(t.labels) > 1 {
					notes = append(notes, t.labels[i]+": "+c.note)
				} else {
					notes = append(notes, c.note)
				}
			}
		}
		if len(l.cells) == 2 {
			r := "-"
			if a, b := l.cells[0].v, l.cells[1].v; a != nil && b != nil && *a != 0 {
				r = fmt.Sprintf("%.2f×", *b / *a)
			}
			cols = append(cols, r)
		}
		cols = append(cols, strings.Join(notes, "; "))
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	_ = tw.Flush()
	for _, r := range allRows {
		if e := t.explained[r]; e != "" {
			fmt.Fprintf(w, "%s: %s\n", r, e)
		}
	}
	for _, n := range t.notes {
		fmt.Fprintln(w, "note: "+n)
	}
}

// format formats v in its unit: ms, MiB, /s (a rate) or × (a ratio).
func format(v *float64, unit string) string {
	if v == nil {
		return "n/a"
	}
	switch unit {
	case "ms":
		switch {
		case *v < 1:
			return fmt.Sprintf("%.3f ms", *v)
		case *v < 100:
			return fmt.Sprintf("%.1f ms", *v)
		}
		return fmt.Sprintf("%.0f ms", *v)
	case "MiB":
		return fmt.Sprintf("%.1f MiB", *v)
	case "/s":
		return fmt.Sprintf("%.1f/s", *v)
	case "×":
		return fmt.Sprintf("%.2f×", *v)
	}
	return fmt.Sprintf("%g %s", *v, unit)
}
