package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// checkFast compares fastEntry with yaml.v3's path on every entry of a plain
// file: where fastEntry reads an entry, yaml.v3 must read the same resource.
// It returns how many entries fastEntry read, of how many.
func checkFast(t *testing.T, text string) (read, entries int) {
	t.Helper()
	o, err := outlineOf([]byte(text), segmentsFile)
	if err != nil {
		return 0, 0
	}
	for i, e := range o.entries {
		r, ok := fastEntry("Segment", "prod", e.name, o.data[e.start:e.end])
		if !ok {
			continue
		}
		read++
		es, err := o.parse(segmentsFile, "Segment", "prod", i, i+1)
		if err != nil {
			t.Fatalf("fastEntry read entry %q of\n%s\nwhich yaml.v3 refuses: %v", e.name, text, err)
		}
		if !reflect.DeepEqual(r, es[0].res) {
			t.Fatalf("entry %q of\n%s\nfastEntry: %+v spec %s\nyaml.v3:   %+v spec %s", e.name, text, r, r.Spec, es[0].res, es[0].res.Spec)
		}
	}
	return read, len(o.entries)
}

// fastSeeds are entries in the forms fastEntry reads, and near them.
var fastSeeds = []string{
	"a:\n  labels:\n    team: growth # who\n    tier: \"1\"\n  annotations:\n    owner: ana@example.com\n  spec:\n    enabled: true\n    weight: -12\n    share: 0.25\n    rules:\n      - attribute: plan\n        values: [pro, team]\n      - attribute: country\n        values: [\"NO\", 'SE']\n    rollout: {percentage: 25, seed: 7} # sticky\n",
	"a: {}\nb:\nc: # none\n",
	"a:\n  spec:\n    list:\n    - x\n    - y\n    empty: []\n    none:\n    n1: ~\n    n2: null\n    deep:\n      - 1\n      -\n        k: v\n      - k: v\n        l: [w]\n",
	"a:\n  spec:\n    null: ~\n    deep:\n      - - 1\n",
	"a:\n  spec:\n    s: yes\n    o: on\n    t: 2001-12-14\n    h: 0x1F\n    u: 1_000\n    e: 1e3\n    big: 123456789012345678901234567890\n    f: .5\n    inf: .inf\n    z: 007\n",
	"a:\n  labels:\n    n:\n    t: ~\n    b: true\n  spec:\n    text: a b: c\n    more: a\n      b\n    url: http://x/y#z\n    colon: 'a: b'\n",
	"a:\n  spec:\n    m: {a: [1, {b: c}], d: \"e\"}\n    q: \"a\\\"b\"\n    s: 'it''s'\n    x: [a, b,]\n    y: [a b, c]\n",
	"a:\n  spec: x\nb:\n  labels: [a]\nc:\n  other: 1\nd:\n  spec:\n    k: 1\n    k: 2\n",
}

func FuzzFastEntry(f *testing.F) {
	addFileSeeds(f)
	f.Add("a:\n  labels:\n    by: Søren\n  spec:\n    k: café \u00a0x\n    l: [Østlandet, \"日本\", ÿ]\n    m: {k: ‰}\n")
	f.Fuzz(func(t *testing.T, text string) {
		checkFast(t, text)
	})
}

// addFileSeeds adds files of entries to a fuzz target's corpus: fastSeeds,
// testdata's files and a few entries of largeFile.
func addFileSeeds(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add(s)
	}
	for _, name := range []string{"mapping", "flow"} {
		data, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Add(largeFile(3))
}

// TestFastEntryReadsCommonEntries checks that fastEntry reads the entries of
// the usual forms, and yaml.v3 the same, and declines what it must leave
// to yaml.v3.
func TestFastEntryReadsCommonEntries(t *testing.T) {
	t.Parallel()
	for i, s := range fastSeeds {
		read, entries := checkFast(t, s)
		t.Logf("seed %d: fastEntry read %d of %d entries", i, read, entries)
	}
	for _, tt := range []struct {
		text          string
		read, entries int
	}{
		{fastSeeds[0], 1, 1},
		{fastSeeds[1], 3, 3},
		{fastSeeds[2], 1, 1},
		{fastSeeds[3], 0, 1}, // a key null, a sequence in a sequence's item
		{fastSeeds[4], 0, 1}, // yes, 2001-12-14, 0x1F and the like are left to yaml.v3
		{fastSeeds[5], 0, 1}, // a continued plain scalar, ": " in one
		{fastSeeds[6], 0, 1}, // escapes, trailing commas
		{fastSeeds[7], 0, 4}, // errors
		{largeFile(100), 100, 100},
		{"a:\n  labels:\n    by: Søren\n  spec:\n    k: café\n    Ø: x\n    l: [Østlandet, \"日本\"]\n", 0, 1}, // a key beyond ASCII
		{"a:\n  labels:\n    by: Søren\n  spec:\n    k: café\n    l: [Østlandet, \"日本\", ÿ]\n", 1, 1},
		{"a:\n  spec:\n    k: a\u2028b\n", 0, 1},   // a line break to yaml.v3
		{"a:\n  spec:\n    k: a\u0085b\n", 0, 1},   // NEL, another
		{"a:\n  spec:\n    k: 🙂\n", 0, 1},          // not printable to yaml.v3
		{"a:\n  spec:\n    k: a\xffb\n", 0, 1},     // not UTF-8
		{"a:\n  spec:\n    k: \"\ufeff\"\n", 0, 1}, // a byte order mark
		{"a:\n  spec:\n" + manyKeys(fastMaxKeys, "    k%d: 1\n"), 1, 1},
		{"a:\n  spec:\n" + manyKeys(fastMaxKeys+1, "    k%d: 1\n"), 0, 1}, // too many keys to compare
		{"a:\n  spec: {" + strings.TrimSuffix(manyKeys(fastMaxKeys+1, "k%d: 1, "), ", ") + "}\n", 0, 1},
	} {
		if read, entries := checkFast(t, tt.text); read != tt.read || entries != tt.entries {
			t.Errorf("fastEntry read %d of %d entries of\n%s\nwant %d of %d", read, entries, tt.text, tt.read, tt.entries)
		}
	}
}

// manyKeys returns n lines or items of format, numbered.
func manyKeys(n int, format string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, format, i)
	}
	return b.String()
}
