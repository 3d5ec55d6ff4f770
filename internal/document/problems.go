package document

import (
	"fmt"
	"slices"
	"strings"
)

// SortProblems returns a sorted copy of ps without repetitions: sorted
// stably by cmp, and without any problem equal to an earlier one that cmp
// ranks level with it. It returns nil for no problems.
func SortProblems[P comparable](ps []P, cmp func(a, b P) int) []P {
	if len(ps) == 0 {
		return nil
	}
	out := slices.Clone(ps)
	slices.SortStableFunc(out, cmp)
	dedup := out[:1]
	for _, p := range out[1:] {
		if !containsLevel(dedup, p, cmp) {
			dedup = append(dedup, p)
		}
	}
	return dedup
}

// containsLevel reports whether the sorted ps end with problems that cmp
// ranks level with p, one of which is p.
func containsLevel[P comparable](ps []P, p P, cmp func(a, b P) int) bool {
	for i := len(ps) - 1; i >= 0 && cmp(ps[i], p) == 0; i-- {
		if ps[i] == p {
			return true
		}
	}
	return false
}

// ErrorText returns the text of an error that lists problems and wraps the
// sentinel invalid: "<invalid>: <problem>" for one problem, otherwise
// "<invalid>: N problems:" followed by each problem on a line of its own,
// indented by a tab.
func ErrorText[P fmt.Stringer](invalid error, ps []P) string {
	if len(ps) == 1 {
		return invalid.Error() + ": " + ps[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problems:", invalid, len(ps))
	for _, p := range ps {
		b.WriteString("\n\t")
		b.WriteString(p.String())
	}
	return b.String()
}
