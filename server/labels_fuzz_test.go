package server

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

// FuzzLabelSet checks the server's packed labelSet against apimachinery's
// labels.Set: for any label map and any selector that parses, matching
// through either gives the same answer, and Lookup, Has and Get agree for
// every key the map or the selector names.
//
// The label map is given as lines of key=value (split at the first '='), so
// that the corpus stays readable; keys and values may be any bytes but a
// newline, and keys no '='.
func FuzzLabelSet(f *testing.F) {
	for _, s := range []struct{ selector, labels string }{
		{"", ""},
		{"team=web", "team=web\nenv=prod"},
		{"team in (payments,web)", "team=payments"},
		{"team notin (payments,web),!legacy", "team=ops\nlegacy="},
		{"env!=prod,tier", "tier=\nenv=staging"},
		{"!tier", ""},
		{"x>3,y<10", "x=4\ny=9"},
		{"x>3", "x=three"},
		{"a==b", "a=b"},
		{"a=", "a="},
		{"example.com/owner=team-a", "example.com/owner=team-a\n" + strings.Repeat("k", 200) + "=" + strings.Repeat("v", 200)},
		{"k", "k\x80\x01=\x00\nk=v"},
	} {
		f.Add(s.selector, s.labels)
	}
	f.Fuzz(func(t *testing.T, selector, text string) {
		m := map[string]string{}
		for line := range strings.SplitSeq(text, "\n") {
			if line == "" {
				continue
			}
			k, v, _ := strings.Cut(line, "=")
			m[k] = v
		}
		ls := newLabelSet(m)
		keys := slices.Collect(maps.Keys(m))
		sel, err := labels.Parse(selector)
		if err == nil {
			reqs, _ := sel.Requirements()
			for _, r := range reqs {
				keys = append(keys, r.Key())
			}
			if got, want := sel.Matches(ls), sel.Matches(labels.Set(m)); got != want {
				t.Fatalf("selector %q on %q: labelSet matches = %v, labels.Set matches = %v", selector, m, got, want)
			}
		}
		keys = append(keys, "", "missing", text)
		for _, k := range keys {
			want, wantOK := m[k]
			if v, ok := ls.Lookup(k); v != want || ok != wantOK || ls.Has(k) != wantOK || ls.Get(k) != want {
				t.Fatalf("labels %q: Lookup(%q) = %q, %v; want %q, %v", m, k, v, ok, want, wantOK)
			}
		}
	})
}
