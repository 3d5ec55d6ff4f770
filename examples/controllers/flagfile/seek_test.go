package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cup-dev/cup/sdk/go/controller/controllertest"
)

// checkSeek compares seek and locate with the outline of a file it splits
// into entries: seek finds each entry where the outline has it, and no
// entry the outline has not, and locate gives the place edit would.
func checkSeek(t *testing.T, text string) {
	t.Helper()
	o, err := outlineOf([]byte(text), segmentsFile)
	if err != nil {
		return
	}
	names := []string{"", "missing", "a"}
	for _, e := range o.entries {
		names = append(names, e.name)
	}
	for _, name := range names {
		e, found, err := seek([]byte(text), segmentsFile, name)
		i, ok := o.find(name)
		switch {
		case err != nil:
			t.Fatalf("seek %q in a file the outline splits: %v\n%s", name, err, text)
		case found != ok:
			t.Fatalf("seek %q found %t, the outline %t\n%s", name, found, ok, text)
		case found && e != o.entries[i]:
			t.Fatalf("seek %q: %+v, the outline %+v\n%s", name, e, o.entries[i], text)
		}
		pl, any, err := locate([]byte(text), segmentsFile, name)
		switch want := o.place(name); {
		case err != nil:
			t.Fatalf("locate %q in a file the outline splits: %v\n%s", name, err, text)
		case any != (len(o.entries) > 0):
			t.Fatalf("locate %q: entries %t, the outline has %d\n%s", name, any, len(o.entries), text)
		case any && pl != want:
			t.Fatalf("locate %q: %+v, the outline %+v\n%s", name, pl, want, text)
		}
	}
}

func FuzzSeek(f *testing.F) {
	addFileSeeds(f)
	f.Add("# top\n  # indented\n\na:\n  spec:\n    x: 1\n\n  # inside\n    \n# after\nb: {}\r\n  c: 1\r\n")
	f.Fuzz(func(t *testing.T, text string) {
		checkSeek(t, text)
	})
}

func TestSeek(t *testing.T) {
	t.Parallel()
	for _, s := range fastSeeds {
		checkSeek(t, s)
	}
	checkSeek(t, largeFile(300))
	const file = "# top\n  # indented\n\na:\n  spec:\n    x: 1\n\n  # inside\n    \n# after\nbb: {}\r\n  c: 1\r\nd: # none\n"
	for _, tt := range []struct {
		name, file, seek string
		want             string // the entry's lines, or the error
	}{
		{"the first", file, "a", "a:\n  spec:\n    x: 1\n\n  # inside\n"},
		{"in CRLF", file, "bb", "bb: {}\r\n  c: 1\r\n"},
		{"the last, without fields", file, "d", "d: # none\n"},
		{"missing", file, "b", ""},
		{"a prefix of a name", "ab:\n  spec: {}\n", "a", ""},
		{"twice", "a: {}\nb: {}\na:\n  spec: {}\n", "a", `segments.example.com/prod.yaml:3: malformed: a second entry "a"`},
		{"another twice", "a: {}\nb: {}\nb: {}\n", "a", "a: {}\n"},
		{"an alias in another", "a: {}\nb:\n  spec: {x: *y}\n", "a", "a: {}\n"},
		{"an alias", "a:\n  spec: {x: *y}\n", "a", "not a plain file"},
		{"an anchor", "a:\n  spec: &y {x: 1}\n", "a", "not a plain file"},
		{"content before the first", "  x: 1\na: {}\n", "a", "not a plain file"},
		{"an entry that is not plain", "a: {}\n- b\n", "a", "not a plain file"},
		{"a tab", "a: {}\n\tb: {}\n", "a", "not a plain file"},
	} {
		e, found, err := seek([]byte(tt.file), segmentsFile, tt.seek)
		got := ""
		switch {
		case err != nil:
			got = err.Error()
		case found:
			got = tt.file[e.start:e.end]
		}
		if got != tt.want || found && e.name != tt.seek {
			t.Errorf("%s: seek %q = %q (%+v), want %q", tt.name, tt.seek, got, e, tt.want)
		}
	}
}

// TestCallsBesideAnotherNameTwice: get, put and delete read their entry,
// those beside it and the names of the others, so a name written twice
// fails a list and a call naming it, but not a call naming another.
func TestCallsBesideAnotherNameTwice(t *testing.T) {
	t.Parallel()
	const file = "a:\n  labels: {l: v}\nb: {}\nb: {}\n"
	dir := controllertest.MapDir{segmentsFile: {Data: []byte(file)}}
	if r := call(t, dir, "", "get", "Segment", "prod", "a"); r.Code != 0 || !strings.Contains(r.Stdout, `"labels":{"l":"v"}`) {
		t.Errorf("get a = %+v", r)
	}
	for _, args := range [][]string{{"get", "Segment", "prod", "b"}, {"list", "Segment", "prod"}, {"put", "Segment", "prod", "b"}, {"delete", "Segment", "prod", "b"}} {
		if r := call(t, dir, segment("b", "", ""), args...); r.Code != 1 || !strings.Contains(r.Stderr, `a second entry "b"`) {
			t.Errorf("%s = %+v", args, r)
		}
	}
	if text(dir) != file {
		t.Fatalf("a call that failed changed the file to %q", text(dir))
	}
	if r := call(t, dir, segment("c", "", ""), "put", "Segment", "prod", "c"); r.Code != 0 || text(dir) != file+"c: {}\n" {
		t.Errorf("put c = %+v, the file %q", r, text(dir))
	}
	if r := call(t, dir, "", "delete", "Segment", "prod", "a"); r.Code != 0 || text(dir) != "b: {}\nb: {}\nc: {}\n" {
		t.Errorf("delete a = %+v, the file %q", r, text(dir))
	}
}

// place returns the place of the entry called name, or of the last entry,
// from the outline: what locate must give.
func (o *outline) place(name string) place {
	at, ok := o.find(name)
	if !ok {
		at = len(o.entries) - 1
	}
	pl := place{to: len(o.data), before: at > 0, after: at+1 < len(o.entries), found: ok}
	if pl.before {
		pl.from = o.entries[at-1].end
	}
	if pl.after {
		pl.to = o.entries[at+1].start
	}
	return pl
}

// BenchmarkSeek finds the middle entry of a file of 50,000 entries
// (7.3 MB), for the speed of the scan in bytes a second. In WebAssembly,
// as cupd runs the module:
//
//	GOOS=wasip1 GOARCH=wasm go test -c -o /tmp/flagfile.test.wasm .
//	go run github.com/tetratelabs/wazero/cmd/wazero run /tmp/flagfile.test.wasm -test.run '^$' -test.bench Seek
//
// (the second from the repository's root, whose module requires wazero).
func BenchmarkSeek(b *testing.B) {
	const n = 50000
	data := []byte(largeFile(n))
	name := fmt.Sprintf("seg-%05d", n/2)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, found, err := seek(data, segmentsFile, name); !found || err != nil {
			b.Fatal(found, err)
		}
	}
}
