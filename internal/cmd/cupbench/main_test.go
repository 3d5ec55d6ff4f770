package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/cupdproc"
)

// TestFigures runs every row at a tiny size against a freshly built cupd
// and checks that each row has a figure for it.
func TestFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a real cupd")
	}
	dir := t.TempDir()
	bin, err := cupdproc.Build(t.Context(), dir, false, t.Output())
	if err != nil {
		t.Fatal(err)
	}
	o := defaultOptions()
	o.cupd, o.tmp, o.progress = bin, dir, t.Output()
	if o.rows, err = selectRows("all"); err != nil {
		t.Fatal(err)
	}
	o.n, o.small = 50, 20
	o.writers, o.writeFor, o.puts, o.firstGets = 4, 300*time.Millisecond, 3, 10
	o.clients, o.getFor = 4, 300*time.Millisecond
	o.lists, o.starts = 1, 1
	o.flagSizes, o.flagRequests = []int{10}, 1
	o.phaseTimeout = time.Minute
	tab, err := figures(t.Context(), o)
	var out bytes.Buffer
	if tab != nil {
		tab.print(&out)
	}
	t.Logf("table:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range allRows {
		n := 0
		for _, l := range tab.lines {
			if l.row != r {
				continue
			}
			n++
			if l.cells[0].v == nil {
				t.Errorf("%s: %s: no figure (%s)", r, l.measure, l.cells[0].note)
			}
		}
		if n == 0 {
			t.Errorf("no line of the row %s", r)
		}
	}
	for _, l := range tab.lines {
		if l.row == "flagfile" && strings.Contains(l.measure, "missing") && !strings.Contains(l.cells[0].note, "404") {
			t.Errorf("%s: %s, want a 404", l.measure, l.cells[0].note)
		}
	}
}

// TestTableCompare checks the table of two binaries: a column each, their
// ratio, and n/a where one has no figure.
func TestTableCompare(t *testing.T) {
	t.Parallel()
	tab := newTable([]string{"before", "after"})
	tab.set("put", "PUT p50", "ms", "≤ 15 ms", 0, 40, "p99 60 ms")
	tab.set("put", "PUT p50", "ms", "≤ 15 ms", 1, 10, "")
	tab.none("trivial", "throughput, trivial Connect procedure", "/s", "-", 0, "no --bench-trivial")
	tab.set("trivial", "throughput, trivial Connect procedure", "/s", "-", 1, 5000, "")
	tab.set("writes", "writes/s", "/s", "≥ 400/s", 0, 20.8, "")
	tab.set("writes", "writes/s", "/s", "≥ 400/s", 1, 416, "")
	var out bytes.Buffer
	tab.print(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want a header and 3:\n%s", len(lines), out.String())
	}
	for i, want := range [][]string{
		{"row", "before", "after", "after/before", "notes"},
		{"writes", "20.8/s", "416.0/s", "20.00×"},
		{"put", "40.0 ms", "10.0 ms", "0.25×", "before: p99 60 ms"},
		{"trivial", "n/a", "5000.0/s", "-", "before: no --bench-trivial"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
}
