package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/sdk/go/controller"
	"github.com/cup-dev/cup/sdk/go/controller/controllertest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// call runs the module's handler as cupd would run the module.
func call(t *testing.T, dir controllertest.MapDir, stdin string, args ...string) controllertest.Result {
	t.Helper()
	var m controller.Mux
	m.Handle(controller.AnyKind, handler{})
	return controllertest.Run(t.Context(), &m, dir, controllertest.Call{Args: args, Env: env(args[1]), Stdin: stdin})
}

// env returns the environment cupd gives a module for kind.
func env(kind string) map[string]string {
	return map[string]string{
		"CUP_API_VERSION": "example.com/v1",
		"CUP_GROUP":       "example.com",
		"CUP_VERSION":     "v1",
		"CUP_KIND":        kind,
		"CUP_PLURAL":      strings.ToLower(kind) + "s",
	}
}

// fixture returns a tree holding testdata/<name>.yaml as the Segments of
// namespace prod.
func fixture(t *testing.T, name string) controllertest.MapDir {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return controllertest.MapDir{segmentsFile: {Data: data}}
}

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it); got:\n%s", p, got)
	}
}

// segment returns the JSON a put of a Segment in prod receives, with more
// fields of metadata (labels, annotations) and a spec, when not empty.
func segment(name, metadata, spec string) string {
	s := `{"apiVersion":"example.com/v1","kind":"Segment","metadata":{"namespace":"prod","name":"` + name + `"`
	if metadata != "" {
		s += "," + metadata
	}
	s += "}"
	if spec != "" {
		s += `,"spec":` + spec
	}
	return s + "}"
}

// step is one call of the module.
type step struct {
	stdin string
	args  []string
}

func put(name, metadata, spec string) step {
	return step{segment(name, metadata, spec), []string{"put", "Segment", "prod", name}}
}

func del(name string) step { return step{"", []string{"delete", "Segment", "prod", name}} }

// TestGolden edits the fixtures and compares the files, and what list reads
// from them, with golden files.
func TestGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		steps []step
	}{
		{"mapping", []step{
			put("beta-testers", `"labels":{"team":"growth","tier":"2"},"annotations":{"owner":"ana@example.com"}`, `{"rules":[{"attribute":"plan","values":["pro","team","enterprise"]},{"attribute":"country","values":["NO","SE"]}],"sample":0.5}`),
			put("internal", `"labels":{"team":"platform"}`, ""),
			del("legacy"),
			put("vip", `"labels":{"team":"sales"}`, `{"rules":[{"attribute":"arr","min":100000}],"note":"yes","on":true}`),
		}},
		{"sequence", []step{
			put("internal", `"annotations":{"owner":"platform@example.com"}`, `{"rules":[]}`),
			put("legacy", `"labels":{"team":"growth"}`, ""),
			del("beta-testers"),
			put("vip", `"labels":{"team":"sales"}`, ""),
		}},
		{"flow", []step{
			put("internal", `"labels":{"team":"platform"}`, `{}`),
			put("vip", `"labels":{"team":"sales"}`, ""),
		}},
		{"new", []step{
			put("beta-testers", `"labels":{"team":"growth"}`, `{"rules":[{"attribute":"plan","values":["pro"]}],"text":"two\nlines\n","when":"2025-01-01","count":"12","null":null}`),
			put("empty", "", ""),
			put("internal", `"annotations":{"note":"#1: staff"}`, `{}`),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := controllertest.MapDir{}
			if tt.name != "new" {
				dir = fixture(t, tt.name)
				list := call(t, dir, "", "list", "Segment", "prod")
				if list.Code != 0 {
					t.Fatalf("list = %+v", list)
				}
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, []byte(list.Stdout), "", "  "); err != nil {
					t.Fatal(err)
				}
				golden(t, tt.name+".list.json", pretty.Bytes())
			}
			for _, s := range tt.steps {
				if r := call(t, dir, s.stdin, s.args...); r.Code != 0 {
					t.Fatalf("%s = %+v", s.args, r)
				}
			}
			golden(t, tt.name+".golden.yaml", dir[segmentsFile].Data)
		})
	}
}

// TestPutKeepsOtherLines changes each entry of the fixtures: every line
// outside the entry's own must stay as it was.
func TestPutKeepsOtherLines(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"mapping", "sequence"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			original := fixtureText(t, name)
			f, err := parse(segmentsFile, "Segment", "prod", []byte(original))
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range f.entries {
				dir := fixture(t, name)
				args := []string{"put", "Segment", "prod", e.res.Metadata.Name}
				stdin := segment(e.res.Metadata.Name, `"labels":{"changed":"true"}`, `{"changed":[1,{"a":"b"}]}`)
				if r := call(t, dir, stdin, args...); r.Code != 0 {
					t.Fatalf("%s = %+v", args, r)
				}
				first, last := f.span(i)
				before, after := original[:f.offset(first)], original[f.offset(last+1):]
				got := text(dir)
				if !strings.HasPrefix(got, before) || !strings.HasSuffix(got, after) || !strings.Contains(got, `changed: "true"`) {
					t.Errorf("after changing %q, the file is\n%s\nwant lines 1-%d and from %d as they were", e.res.Metadata.Name, got, first-1, last+1)
				}
			}
		})
	}
}

func TestGetListDelete(t *testing.T) {
	t.Parallel()
	const beta = `{"apiVersion":"example.com/v1","kind":"Segment","metadata":{"namespace":"prod","name":"beta-testers","labels":{"team":"growth"}},"spec":{"rules":[{"attribute":"plan","values":["pro","team"]}]}}` + "\n"
	invalid := func(msg string) string {
		data, _ := json.Marshal(map[string]string{"code": "invalid_argument", "message": msg})
		return string(data) + "\n"
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
		file   string // segments.example.com/prod.yaml afterwards, when it changes; "-" when removed
	}{
		{name: "get", args: []string{"get", "Segment", "prod", "beta-testers"}, stdout: beta},
		{name: "get from a sequence item with its dash alone", args: []string{"get", "Segment", "prod", "legacy"},
			stdout: `{"apiVersion":"example.com/v1","kind":"Segment","metadata":{"namespace":"prod","name":"legacy"}}` + "\n"},
		{name: "get missing", args: []string{"get", "Segment", "prod", "vip"}, code: 2,
			stderr: `Segment "vip" in namespace "prod" (segments.example.com/prod.yaml): not found` + "\n"},
		{name: "get from a missing file", args: []string{"get", "Segment", "dev", "beta-testers"}, code: 2,
			stderr: `Segment "beta-testers" in namespace "dev" (segments.example.com/dev.yaml): not found` + "\n"},
		{name: "get of another kind", args: []string{"get", "Flag", "prod", "beta-testers"}, code: 2,
			stderr: `Flag "beta-testers" in namespace "prod" (flags.example.com/prod.yaml): not found` + "\n"},
		{name: "list with labels", args: []string{"list", "Segment", "prod", "team=growth"}, stdout: "[" + strings.TrimSpace(beta) + "]\n"},
		{name: "list of a missing file", args: []string{"list", "Segment", "dev"}, stdout: "[]\n"},
		{name: "bad namespace", args: []string{"list", "Segment", "../etc"}, code: 1, stderr: invalid(`namespace "../etc" cannot name a file`)},
		{name: "empty namespace", args: []string{"get", "Segment", "", "x"}, code: 1, stderr: invalid(`namespace "" cannot name a file`)},
		{name: "bad kind", args: []string{"list", "Seg/ment", "prod"}, code: 1,
			stderr: invalid(`type "seg/ments.example.com": flagfile serves kinds, plurals and groups of ASCII letters, digits, dots and dashes only`)},
		{name: "delete missing", args: []string{"delete", "Segment", "prod", "vip"}, code: 2,
			stderr: `Segment "vip" in namespace "prod" (segments.example.com/prod.yaml): not found` + "\n"},
		{name: "delete the first", args: []string{"delete", "Segment", "prod", "beta-testers"},
			file: "# Segments as a list.\n# staff only\n- name: internal # all of us\n  spec:\n    rules: []\n    # rules are filled in by the platform team\n-\n  name: legacy\n"},
		{name: "delete the last", args: []string{"delete", "Segment", "prod", "legacy"},
			file: strings.Split(fixtureText(t, "sequence"), "-\n  name: legacy")[0]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t, "sequence")
			original := string(dir[segmentsFile].Data)
			r := call(t, dir, "", tt.args...)
			if r.Code != tt.code || r.Stdout != tt.stdout || r.Stderr != tt.stderr {
				t.Errorf("%q = %+v\nwant code %d, stdout %q, stderr %q", tt.args, r, tt.code, tt.stdout, tt.stderr)
			}
			want := cmpOr(tt.file, original)
			if got := text(dir); got != want {
				t.Errorf("after %q the file is\n%s\nwant\n%s", tt.args, got, want)
			}
		})
	}
}

func fixtureText(t *testing.T, name string) string {
	return string(fixture(t, name)[segmentsFile].Data)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// text returns segments.example.com/prod.yaml of dir, or "-" when there is none.
func text(dir controllertest.MapDir) string {
	if f := dir[segmentsFile]; f != nil {
		return string(f.Data)
	}
	return "-"
}

func TestDeleteAll(t *testing.T) {
	t.Parallel()
	dir := fixture(t, "mapping")
	for _, name := range []string{"internal", "beta-testers", "enterprise"} {
		if r := call(t, dir, "", "delete", "Segment", "prod", name); r.Code != 0 {
			t.Fatalf("delete %s = %+v", name, r)
		}
	}
	want := "# Segments of the production namespace.\n# Reviewed by the growth team; keep entries sorted by age.\n\n# Keep until the 2025 migration is done.\nlegacy: {}\n\n# end of segments\n"
	if got := text(dir); got != want {
		t.Errorf("after deleting all but legacy, the file is\n%s\nwant\n%s", got, want)
	}
	if r := call(t, dir, "", "delete", "Segment", "prod", "legacy"); r.Code != 0 || text(dir) != "-" {
		t.Errorf("delete of the last entry = %+v, file %q; want the file removed", r, text(dir))
	}
}

func TestPutNoChange(t *testing.T) {
	t.Parallel()
	dir := fixture(t, "mapping")
	list := call(t, dir, "", "list", "Segment", "prod")
	var rs []json.RawMessage
	if err := json.Unmarshal([]byte(list.Stdout), &rs); err != nil {
		t.Fatalf("list = %+v: %v", list, err)
	}
	for _, r := range rs {
		var name struct{ Metadata struct{ Name string } }
		_ = json.Unmarshal(r, &name)
		f := dir[segmentsFile]
		if res := call(t, dir, string(r), "put", "Segment", "prod", name.Metadata.Name); res.Code != 0 {
			t.Fatalf("put %s = %+v", r, res)
		}
		if dir[segmentsFile] != f {
			t.Errorf("put of %s as it is wrote the file", name.Metadata.Name)
		}
	}
}

func TestMalformed(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, file, stderr string }{
		{"not YAML", "a: [1\n", "segments.example.com/prod.yaml: malformed: line 1: did not find expected ',' or ']'"},
		{"a scalar", "hello\n", `segments.example.com/prod.yaml:1: malformed: the str "hello"; want a mapping or a sequence of entries`},
		{"two documents", "a: {}\n---\nb: {}\n", "segments.example.com/prod.yaml:2: malformed: a second YAML document; want one"},
		{"an entry that is a list", "a: [1]\n", `segments.example.com/prod.yaml:1: malformed: entry "a" is a sequence; want a mapping of labels, annotations and spec`},
		{"an unknown field", "a:\n  lables: {}\n", `segments.example.com/prod.yaml:2: malformed: entry "a" has the unknown field "lables"; want labels, annotations or spec`},
		{"a duplicate field", "a:\n  spec: {}\n  spec: {}\n", `segments.example.com/prod.yaml:3: malformed: entry "a" has two fields "spec"`},
		{"a duplicate entry", "a: {}\nb: {}\na: {}\n", `segments.example.com/prod.yaml:3: malformed: a second entry "a"`},
		{"a duplicate item", "- name: a\n- name: a\n", `segments.example.com/prod.yaml:2: malformed: a second entry "a"`},
		{"an item without a name", "- spec: {}\n", `segments.example.com/prod.yaml:1: malformed: an entry without a name`},
		{"an item with a list for a name", "- name: [a]\n", `segments.example.com/prod.yaml:1: malformed: an entry name that is not a string`},
		{"an item that is a string", "- a\n", `segments.example.com/prod.yaml:1: malformed: an entry that is the str "a"; want a mapping of name, labels, annotations and spec`},
		{"an unknown item field", "- name: a\n  kind: X\n", `segments.example.com/prod.yaml:2: malformed: entry "a" has the unknown field "kind"; want name, labels, annotations or spec`},
		{"labels that are a list", "a:\n  labels: [x]\n", `segments.example.com/prod.yaml:2: malformed: entry "a": labels: a sequence; want a mapping of strings`},
		{"a label that is a mapping", "a:\n  labels:\n    x: {}\n", `segments.example.com/prod.yaml:3: malformed: entry "a": labels: key "x" holds a mapping; want a string`},
		{"a spec that is a string", "a:\n  spec: on\n", `segments.example.com/prod.yaml:2: malformed: entry "a": spec: the str "on"; want a mapping`},
		{"a spec with NaN", "a:\n  spec:\n    x: .nan\n", `segments.example.com/prod.yaml:3: malformed: entry "a": spec: .nan is not a JSON number`},
		{"a spec with a duplicate key", "a:\n  spec:\n    x: 1\n    x: 2\n", `segments.example.com/prod.yaml:4: malformed: entry "a": spec: key "x" twice`},
		{"a null name", "~: {}\n", `segments.example.com/prod.yaml:1: malformed: an entry name that is not a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, args := range [][]string{
				{"get", "Segment", "prod", "a"},
				{"list", "Segment", "prod"},
				{"delete", "Segment", "prod", "a"},
				{"put", "Segment", "prod", "a"},
			} {
				dir := controllertest.MapDir{segmentsFile: {Data: []byte(tt.file)}}
				r := call(t, dir, segment("a", "", ""), args...)
				if r.Code != 1 || r.Stderr != tt.stderr+"\n" {
					t.Errorf("%s of %q = %+v\nwant stderr %q", args[0], tt.file, r, tt.stderr)
				}
				if got := text(dir); got != tt.file {
					t.Errorf("%s of %q changed the file to %q", args[0], tt.file, got)
				}
			}
		})
	}
}

// TestIndented edits a file whose entries are indented and nested four
// spaces deep.
func TestIndented(t *testing.T) {
	t.Parallel()
	const file = "---\n  a:\n      spec:\n          x: 1\n  b: {}\n"
	dir := controllertest.MapDir{segmentsFile: &fstest.MapFile{Data: []byte(file)}}
	for _, s := range []step{put("a", `"labels":{"l":"v"}`, `{"x":2}`), put("c", `"labels":{"l":"v"}`, "")} {
		if r := call(t, dir, s.stdin, s.args...); r.Code != 0 {
			t.Fatalf("%s = %+v", s.args, r)
		}
	}
	want := "---\n  a:\n      labels:\n          l: v\n      spec:\n          x: 2\n  b: {}\n  c:\n      labels:\n          l: v\n"
	if got := text(dir); got != want {
		t.Errorf("file is\n%s\nwant\n%s", got, want)
	}
}

func TestPutEdges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		put        step
		want       string // the file afterwards
		stderr     string // or the error
	}{
		{name: "into a comment", file: "# nothing yet\n", put: put("a", "", ""), want: "# nothing yet\na: {}\n"},
		{name: "into a null", file: "--- # nothing yet\n", put: put("a", `"labels":{"x":"y"}`, ""),
			want: "# nothing yet\n\na:\n  labels:\n    x: \"y\"\n"},
		{name: "into an empty mapping", file: "{}\n", put: put("a", "", ""), want: "a: {}\n"},
		{name: "into an empty sequence", file: "[]\n", put: put("a", "", ""), want: "- name: a\n"},
		{name: "after a last line without a line break", file: "b: {}", put: put("a", "", ""), want: "b: {}\na: {}\n"},
		{name: "replacing a last line without a line break", file: "a: {}\nb: {}", put: put("b", `"labels":{"x":"1"}`, ""),
			want: "a: {}\nb:\n  labels:\n    x: \"1\"\n"},
		{name: "over a null entry", file: "a: # to do\nb: {}\n", put: put("a", "", `{"x":1}`), want: "a: # to do\n  spec:\n    x: 1\nb: {}\n"},
		{name: "names to quote", file: "", put: put("yes", "", `{"<<":"merge","1":2}`), want: "\"yes\":\n  spec:\n    \"<<\": merge\n    \"1\": 2\n"},
		{name: "a spec in flow style", file: "a:\n  spec: {x: 1, y: [1, 2]} # short\n", put: put("a", "", `{"x":1,"y":[1,3],"z":true}`),
			want: "a:\n  spec: {x: 1, y: [1, 3], z: true} # short\n"},
		{name: "keys in the order of the request", file: "a:\n  spec:\n    x: 1 # one\n    y: 2\n", put: put("a", "", `{"y":2,"x":1,"w":0}`),
			want: "a:\n  spec:\n    y: 2\n    x: 1 # one\n    w: 0\n"},
		{name: "labels in the file's order", file: "a:\n  labels:\n    z: \"1\"\n    b: \"2\"\n", put: put("a", `"labels":{"a":"0","b":"2","z":"3"}`, ""),
			want: "a:\n  labels:\n    z: \"3\"\n    b: \"2\"\n    a: \"0\"\n"},
		{name: "a number as written", file: "", put: put("a", "", `{"big":12345678901234567890,"f":1.50,"e":1E3}`),
			want: "a:\n  spec:\n    big: 12345678901234567890\n    f: 1.50\n    e: 1E3\n"},
		{name: "an anchor others use", file: "a: &base\n  spec: {x: 1}\nb: *base\n", put: put("a", "", `{"x":2}`),
			stderr: `cannot rewrite segments.example.com/prod.yaml without changing what it holds: entry 2 is "b", not as written`},
		{name: "an alias", file: "a: &base\n  spec: {x: 1}\nb: *base\n", put: put("b", "", `{"x":2}`),
			want: "a: &base\n  spec: {x: 1}\nb:\n  spec:\n    x: 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := controllertest.MapDir{}
			if tt.file != "" {
				dir[segmentsFile] = &fstest.MapFile{Data: []byte(tt.file)}
			}
			r := call(t, dir, tt.put.stdin, tt.put.args...)
			switch {
			case tt.stderr != "" && (r.Code != 1 || r.Stderr != tt.stderr+"\n"):
				t.Errorf("put = %+v, want stderr %q", r, tt.stderr)
			case tt.stderr == "" && r.Code != 0:
				t.Errorf("put = %+v", r)
			case tt.stderr == "" && text(dir) != tt.want:
				t.Errorf("file is\n%s\nwant\n%s", text(dir), tt.want)
			}
			if tt.stderr == "" {
				get := call(t, dir, "", "get", "Segment", "prod", tt.put.args[3])
				var want, got controller.Resource
				_ = json.Unmarshal([]byte(tt.put.stdin), &want)
				if err := json.Unmarshal([]byte(get.Stdout), &got); err != nil || !same(&got, &want) {
					t.Errorf("get after put = %+v, want %s", get, tt.put.stdin)
				}
			}
		})
	}
}

// segmentsFile is where the Segments of namespace prod are kept.
const segmentsFile = "segments.example.com/prod.yaml"
