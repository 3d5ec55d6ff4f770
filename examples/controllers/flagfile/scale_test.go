package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/sdk/go/controller/controllertest"
)

// largeFile returns a mapping of n entries of about 250 bytes.
func largeFile(n int) string {
	var b strings.Builder
	b.WriteString("# Many segments.\n\n")
	for i := range n {
		fmt.Fprintf(&b, "# Segment %[1]d.\nseg-%05[1]d:\n  labels:\n    team: team-%[2]d\n  spec:\n    rules:\n      - attribute: plan\n        values: [pro, team]\n    sample: 0.%[1]d\n\n", i, i%7)
	}
	return b.String()
}

// TestLargeFile serves a file of 10,000 entries: list, get, get of a
// missing name, put (an edit and a new entry) and delete, each rewriting
// only the lines of its entry.
func TestLargeFile(t *testing.T) {
	t.Parallel()
	const n = 10000
	original := largeFile(n)
	dir := controllertest.MapDir{segmentsFile: {Data: []byte(original)}}

	list := call(t, dir, "", "list", "Segment", "prod", "team=team-3")
	var rs []json.RawMessage
	if err := json.Unmarshal([]byte(list.Stdout), &rs); list.Code != 0 || err != nil || len(rs) != (n+3)/7 {
		t.Fatalf("list = code %d, %d resources (%v), stderr %q", list.Code, len(rs), err, list.Stderr)
	}
	get := call(t, dir, "", "get", "Segment", "prod", "seg-09421")
	if get.Code != 0 || !strings.Contains(get.Stdout, `"sample":0.9421`) {
		t.Errorf("get = %+v", get)
	}
	if r := call(t, dir, "", "get", "Segment", "prod", "seg-10000"); r.Code != 2 || !strings.Contains(r.Stderr, "not found") {
		t.Errorf("get of a missing name = %+v", r)
	}

	if r := call(t, dir, segment("seg-00042", `"labels":{"team":"growth"}`, `{"rules":[]}`), "put", "Segment", "prod", "seg-00042"); r.Code != 0 {
		t.Fatalf("put = %+v", r)
	}
	want := strings.Replace(original, "seg-00042:\n  labels:\n    team: team-0\n  spec:\n    rules:\n      - attribute: plan\n        values: [pro, team]\n    sample: 0.42\n",
		"seg-00042:\n  labels:\n    team: growth\n  spec:\n    rules: []\n", 1)
	if got := text(dir); got != want {
		t.Errorf("put changed other lines")
	}
	if r := call(t, dir, "", "delete", "Segment", "prod", "seg-05000"); r.Code != 0 {
		t.Fatalf("delete = %+v", r)
	}
	want = strings.Replace(want, "# Segment 5000.\nseg-05000:\n  labels:\n    team: team-2\n  spec:\n    rules:\n      - attribute: plan\n        values: [pro, team]\n    sample: 0.5000\n\n", "", 1)
	if got := text(dir); got != want {
		t.Errorf("delete changed other lines")
	}
	if r := call(t, dir, segment("zz", "", ""), "put", "Segment", "prod", "zz"); r.Code != 0 || text(dir) != strings.TrimSuffix(want, "\n")+"zz: {}\n\n" {
		t.Errorf("put of a new entry = %+v; the file ends %q", r, text(dir)[len(text(dir))-60:])
	}
	if r := call(t, dir, "", "delete", "Segment", "prod", "seg-05000"); r.Code != 2 {
		t.Errorf("delete of a missing name = %+v", r)
	}
}

// TestNotPlain reads files that cannot be split into entries by their
// lines as wholes, with the same results.
func TestNotPlain(t *testing.T) {
	t.Parallel()
	for _, file := range []string{
		"a: &x\n  spec: {v: 1}\nb: *x\n",    // an alias
		"\"a\":\n  spec: {v: 1}\nb: {}\n",   // a quoted name
		"a: {spec: {v: 1}}\nb: {}\n",        // an entry in flow style
		"---\na:\n  spec: {v: 1}\nb: {}\n",  // a document marker
		"? a\n: spec: {v: 1}\nb: {}\n",      // a complex key
		"a:\n  spec:\n    v: 1\n\tb: {}\n",  // a tab
		"  a:\n    spec: {v: 1}\n  b: {}\n", // indented entries
	} {
		_, err := outlineOf([]byte(file), segmentsFile)
		if err != errNotPlain {
			t.Errorf("outlineOf(%q) = %v, want errNotPlain", file, err)
		}
		dir := controllertest.MapDir{segmentsFile: {Data: []byte(file)}}
		if r := call(t, dir, "", "get", "Segment", "prod", "a"); r.Code != 0 && !strings.Contains(file, "\t") {
			t.Errorf("get of %q = %+v", file, r)
		}
	}
}

// TestWindowEndsInsideAName lists a plain file whose first window of
// windowBytes ends three bytes into the line of an entry's name: the
// windows still split into entries, and every entry is listed once.
func TestWindowEndsInsideAName(t *testing.T) {
	t.Parallel()
	entries := largeFile(8000)[len("# Many segments.\n\n"):]
	// The last name line that begins far enough before the window's end.
	at := strings.LastIndex(entries[:windowBytes-100], "\nseg-") + 1
	pad := windowBytes - 3 - at // the header's length, comment line and all
	text := "#" + strings.Repeat("x", pad-2) + "\n" + entries
	if line := text[windowBytes-3 : windowBytes+8]; !strings.HasPrefix(line, "seg-") {
		t.Fatalf("the window ends in %q, not three bytes into a name", line)
	}
	fsys := fstest.MapFS{"f.yaml": {Data: []byte(text)}}
	n := 0
	err := eachWindow(fsys, "f.yaml", func(o *outline) error {
		n += len(o.entries)
		return nil
	})
	if err != nil || n != 8000 {
		t.Fatalf("eachWindow: %d entries, %v; want 8000 and no error", n, err)
	}
}

// TestListTurnsNotPlain lists a file larger than a window whose entries
// are plain until one in its last window has an alias: the list fails
// saying so, rather than list some entries twice or parse it whole.
func TestListTurnsNotPlain(t *testing.T) {
	t.Parallel()
	text := largeFile(16000) + "base: &b\n  spec: {v: 1}\nother: *b\n"
	if len(text) < 2*windowBytes {
		t.Fatalf("the file is %d bytes, want more than two windows", len(text))
	}
	dir := controllertest.MapDir{segmentsFile: {Data: []byte(text)}}
	r := call(t, dir, "", "list", "Segment", "prod")
	if r.Code == 0 || !strings.Contains(r.Stderr, "malformed: after") || !strings.Contains(r.Stderr, "write it plainly throughout") {
		t.Errorf("list = code %d, stderr %q; want an error saying the file turns from plain entries", r.Code, r.Stderr)
	}
}
