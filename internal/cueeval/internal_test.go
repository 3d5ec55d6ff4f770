package cueeval

import (
	"encoding/json"
	"strings"
	"testing"

	"cuelang.org/go/cue/parser"
)

func TestPlaceString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file, content string
		want                placement
		ok                  bool
	}{
		{"block", "spec:\n  cue: |\n    a: 1\n    b: 2\n", "a: 1\nb: 2\n", placement{3, 5, 4}, true},
		{"block without final newline", "spec:\n  cue: |-\n      a: 1\n\n      b: {\n      \tc: 2\n      }", "a: 1\n\nb: {\n\tc: 2\n}", placement{3, 7, 6}, true},
		{"block with a comment", "spec:\n  cue: | # the layer\n    a: 1\n", "a: 1\n", placement{3, 5, 4}, true},
		{"block with CRLF", "spec:\r\n  cue: |\r\n    a: 1\r\n", "a: 1\n", placement{3, 5, 4}, true},
		{"block, other content", "spec:\n  cue: |\n    a: 1\n", "a: 2\n", placement{}, false},
		{"folded block", "spec:\n  cue: >\n    a: 1\n", "a: 1\n", placement{}, false},
		{"plain", "spec:\n  cue: a\n", "a", placement{2, 8, 0}, true},
		{"single-quoted", "spec:\n  cue: 'a: 1'\n", "a: 1", placement{2, 9, 0}, true},
		{"double-quoted", "spec: {cue: \"a: 1\"}\n", "a: 1", placement{1, 14, 0}, true},
		{"double-quoted after a wide rune", "é: 1\nspec: {x: é, cue: \"a: 1\"}\n", "a: 1", placement{2, 21, 0}, true},
		{"escaped", "spec:\n  cue: \"a: \\\"x\\\"\"\n", `a: "x"`, placement{}, false},
		{"escaped quote", "spec:\n  cue: 'it''s'\n", "it's", placement{}, false},
		{"on two lines", "spec:\n  cue: \"a: 1\n    b: 2\"\n", "a: 1 b: 2", placement{}, false},
		{"no such field", "spec:\n  values: {}\n", "", placement{}, false},
		{"not YAML", "spec: [\n", "", placement{}, false},
		{"JSON", `{"spec": {"cue": "a: 1"}}`, "a: 1", placement{1, 19, 0}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := placeString([]byte(tc.file), "spec.cue", tc.content)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("placeString = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
			if !ok {
				return
			}
			// The padded content must sit where the file has it, line by line.
			padded := strings.Split(got.pad(tc.content), "\n")
			lines := strings.Split(strings.ReplaceAll(tc.file, "\r\n", "\n"), "\n")
			for i, l := range padded {
				off := got.indentOf(i)
				if strings.TrimSpace(l) != "" && (len(lines[i]) < off || !strings.HasPrefix(lines[i][off:], l[off:])) {
					t.Errorf("padded line %d %q is not where the file has it: %q", i+1, l, lines[i])
				}
			}
		})
	}
}

// indentOf returns how many bytes pad put before line i (from 0) of the
// content.
func (p placement) indentOf(i int) int {
	switch {
	case i < p.line-1:
		return 0
	case i == p.line-1:
		return p.col - 1
	}
	return p.indent
}

func TestPad(t *testing.T) {
	t.Parallel()
	got := placement{line: 3, col: 5, indent: 4}.pad("a: 1\n\nb: \"\"\"\n\tx\n\t\"\"\"\n")
	want := "\n\n    a: 1\n\n    b: \"\"\"\n    \tx\n    \t\"\"\"\n"
	if got != want {
		t.Errorf("pad = %q, want %q", got, want)
	}
}

func TestShallow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src   string
		depth int // the deepest nesting shallow counts
	}{
		{"a: 1", 0},
		{"a: {b: [1, (2)]}", 3},
		{`a: "\(b) and \({c: 1}.c)"`, 2},
		{`a: "no ( { [ in strings", b: #"raw \( { "#`, 0},
		{"// { [ (\na: 1", 0},
		{`a: """` + "\n\t\\(x[0])\n\t" + `"""`, 2},
		{`a: f(g(h(1)))`, 3},
		{"a: }}} {", 1},
		{"@attr(x={)\na: 1", 0},
	} {
		if !shallow([]byte(tc.src), tc.depth) || (tc.depth > 0 && shallow([]byte(tc.src), tc.depth-1)) {
			t.Errorf("%q: shallow disagrees with a depth of %d", tc.src, tc.depth)
		}
		// shallow never counts more levels than within does on the AST.
		if f, err := parser.ParseFile("x.cue", tc.src); err == nil && tc.depth > 0 && within(f, tc.depth-1) {
			t.Errorf("%q: within counts fewer levels than shallow's %d", tc.src, tc.depth)
		}
	}
}

func TestRebase(t *testing.T) {
	t.Parallel()
	file := []byte("spec:\n  values:\n    a: [1, -2, x]\n    b: {c: yes, d: null}\n    e: 1.50\n")
	x := fileField("f.yaml", file, "spec.values")
	if x == nil {
		t.Fatal("fileField found no spec.values")
	}
	for _, tc := range []struct {
		values string
		ok     bool
	}{
		{`{"a":[1,-2,"x"],"b":{"c":"yes","d":null},"e":1.50}`, true},
		{`{"e":1.5,"b":{"d":null,"c":true},"a":[7,-2,"y"]}`, true},
		{`{"a":[1,-2],"b":{"c":true,"d":null},"e":1.5}`, false},
		{`{"a":[1,-2,"x"],"b":{"c":true},"e":1.5}`, false},
		{`{"a":[1,-2,"x"],"b":{"c":true,"d":null},"e":{}}`, false},
		{`{"a":[1,-2,"x"],"b":{"c":true,"d":null},"f":1.5}`, false},
	} {
		var v any
		dec := json.NewDecoder(strings.NewReader(tc.values))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if _, ok := rebase(x, v); ok != tc.ok {
			t.Errorf("rebase onto %s: %v, want %v", tc.values, ok, tc.ok)
		}
	}
}

func TestCanonicalJSON(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"b": 1, "a": [1.0, 1E+400, -0.000]}`: `{"a":[1.0,1E+400,-0.000],"b":1}`,
		`"<&>\u00e9"`:                          `"<&>é"`,
		`{"z": {"y": null, "x": true}}`:        `{"z":{"x":true,"y":null}}`,
	} {
		got, err := canonicalJSON([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("canonicalJSON(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := canonicalJSON([]byte(`{} {}`)); err == nil {
		t.Error("canonicalJSON of two values succeeded")
	}
}

func TestFlowDepth(t *testing.T) {
	t.Parallel()
	if got := flowDepth([]byte("a: [{b: [1]}, []]\nc: {}")); got != 3 {
		t.Errorf("flowDepth = %d, want 3", got)
	}
}

// TestWorkerNotCalled checks that Eval refuses to start the executable
// again in a program that did not call Worker. It changes a package
// variable, so it is not parallel.
func TestWorkerNotCalled(t *testing.T) {
	workerReady.Store(false)
	defer workerReady.Store(true)
	if _, err := Eval(t.Context(), nil, Options{}); err == nil || !strings.Contains(err.Error(), "Worker was not called") {
		t.Errorf("Eval = %v, want an error saying Worker was not called", err)
	}
}
