package document_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cup-dev/cup/internal/document"
)

func TestSplitYAML(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want []document.YAMLDoc
	}{
		{name: "empty", data: "", want: nil},
		{name: "one document", data: "a: 1\nb: 2\n", want: []document.YAMLDoc{{Data: []byte("a: 1\nb: 2\n"), Line: 1}}},
		{
			name: "a comment before the first ---",
			data: "# policy\n---\na: 1\n",
			want: []document.YAMLDoc{{Data: []byte("\na: 1\n"), Line: 2}},
		},
		{
			name: "inline content, CRLF and empty documents",
			data: "a: 1\r\n--- b: 2\r\n---\n---\r\nc: 3",
			want: []document.YAMLDoc{
				{Data: []byte("a: 1\r\n"), Line: 1},
				{Data: []byte(" b: 2\r\n"), Line: 2},
				{Data: []byte("\n"), Line: 3},
				{Data: []byte("\r\nc: 3"), Line: 4},
			},
		},
		{name: "--- inside a line", data: "a: ---\n---x: 1\n", want: []document.YAMLDoc{{Data: []byte("a: ---\n---x: 1\n"), Line: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := document.SplitYAML([]byte(tt.data)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("SplitYAML(%q) = %+v, want %+v", tt.data, got, tt.want)
			}
		})
	}
}

func TestYAMLDocJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		data       string
		want       string
		wantLine   int
		wantMsg    string
		wantDetail string
	}{
		{name: "object", data: "a: 1\nb: [x, yes]\n", want: `{"a":1,"b":["x",true]}`},
		{name: "empty", data: "# nothing\n"},
		{name: "null", data: "~\n"},
		{
			name: "syntax error", data: "a: 1\n b: 2\n",
			wantLine: 11, wantMsg: "line 11: mapping values are not allowed in this context",
			wantDetail: "mapping values are not allowed in this context",
		},
		{
			name: "duplicate key", data: "a: 1\na: 2\n",
			wantLine: 11, wantMsg: `unmarshal errors: line 11: key "a" already set in map`,
			wantDetail: `key "a" already set in map`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The document starts on line 10 of its file.
			js, err := document.YAMLDoc{Data: []byte(tt.data), Line: 10}.JSON()
			if tt.wantMsg == "" {
				if err != nil || string(js) != tt.want || (tt.want == "" && js != nil) {
					t.Fatalf("JSON() = %q, %v; want %q", js, err, tt.want)
				}
				return
			}
			var ye *document.YAMLError
			if !errors.As(err, &ye) || js != nil {
				t.Fatalf("JSON() = %q, %v (%T); want a *YAMLError", js, err, err)
			}
			if ye.Line != tt.wantLine || ye.Error() != tt.wantMsg || ye.Detail() != tt.wantDetail {
				t.Errorf("error = line %d, %q, detail %q; want line %d, %q, detail %q",
					ye.Line, ye.Error(), ye.Detail(), tt.wantLine, tt.wantMsg, tt.wantDetail)
			}
		})
	}
}

func TestJSONToYAML(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, s string }{
		{name: "plain", s: "plain text, é, 名前"},
		{name: "DEL", s: "a\u007fb"},
		{name: "C1 controls", s: "\u0080\u0084\u0086\u009f"},
		{name: "NEL", s: "line\u0085break"},
		{name: "line and paragraph separators", s: "a\u2028b\u2029c"},
		{name: "noncharacters", s: "\ufffe\uffff"},
		{name: "C0 controls and newlines", s: "\x00\t\r\n\x1b"},
		{name: "all at once", s: "\u007f \u0085 \u2028\n\u009b\uffff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			js, err := json.Marshal(map[string]any{"s": tt.s, "list": []string{tt.s}})
			if err != nil {
				t.Fatal(err)
			}
			y, err := document.JSONToYAML(js)
			if err != nil {
				t.Fatalf("JSONToYAML(%s): %v", js, err)
			}
			back, err := document.YAMLDoc{Data: y, Line: 1}.JSON()
			if err != nil {
				t.Fatalf("reading back %q: %v", y, err)
			}
			var got struct {
				S    string   `json:"s"`
				List []string `json:"list"`
			}
			if err := json.Unmarshal(back, &got); err != nil {
				t.Fatal(err)
			}
			if got.S != tt.s || len(got.List) != 1 || got.List[0] != tt.s {
				t.Errorf("round trip through %q = %q, %q; want %q", y, got.S, got.List, tt.s)
			}
		})
	}
	// Keys are sorted and the YAML ends with a newline, as with
	// sigs.k8s.io/yaml.
	y, err := document.JSONToYAML([]byte(`{"spec": {"b": 1, "a": [true]}, "kind": "K"}`))
	if want := "kind: K\nspec:\n  a:\n  - true\n  b: 1\n"; err != nil || string(y) != want {
		t.Errorf("JSONToYAML = %q, %v; want %q", y, err, want)
	}
}

func TestYAMLLocator(t *testing.T) {
	t.Parallel()
	const data = `# comment
kind: Role
metadata: {name: a}
rules:
- apiGroups: [x]
  verbs:
  - get
  - put
-   resources: [y]
subjects:
  - kind: User
    "name": alice
`
	loc := document.YAMLDoc{Data: []byte(data), Line: 5}.Locator()
	for path, want := range map[string]int{
		"":                   6,
		"kind":               6,
		"metadata.name":      7, // inside a flow mapping: its line
		"rules":              8,
		"rules[0]":           9,
		"rules[0].verbs":     10,
		"rules[0].verbs[1]":  12,
		"rules[1].resources": 13,
		"rules[2]":           8, // no such item: the nearest enclosing field
		"subjects[0].name":   16,
		"missing":            6,
	} {
		if got := loc.Line(path); got != want {
			t.Errorf("Line(%q) = %d, want %d", path, got, want)
		}
	}
}

func TestScanJSON(t *testing.T) {
	t.Parallel()
	data := []byte(`[
  {"a": 1,
   "b": {"c": [true,
               false]}},
  {"a": 1, "a": 2,
   "b": {"c": 1, "c": 2}}
]`)
	loc, dups := document.ScanJSON(data)
	if want := []string{"[1].a", "[1].b.c"}; !slices.Equal(dups, want) {
		t.Errorf("duplicates = %q, want %q", dups, want)
	}
	for _, tt := range []struct {
		loc  *document.JSONLocator
		path string
		want int
	}{
		{loc, "", 1},
		{loc, "[0].b.c[1]", 4},
		{loc, "[1]", 5},
		{loc.Element(0), "b.c[1]", 4},
		{loc.Element(0), "b.missing", 3},
		{loc.Element(1), "b.c", 6},
		{loc.Element(1), "", 5},
	} {
		if got := tt.loc.Line(tt.path); got != tt.want {
			t.Errorf("Line(%q) = %d, want %d", tt.path, got, tt.want)
		}
	}
}

func TestPosition(t *testing.T) {
	t.Parallel()
	data := []byte("ab\ncd\n")
	for _, tt := range []struct {
		offset       int64
		line, column int
	}{{0, 1, 1}, {2, 1, 2}, {3, 2, 1}, {5, 2, 2}, {100, 3, 1}} {
		if line, col := document.Position(data, tt.offset); line != tt.line || col != tt.column {
			t.Errorf("Position(%d) = %d, %d; want %d, %d", tt.offset, line, col, tt.line, tt.column)
		}
	}
}

type meta struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
}

type resource struct {
	Kind     string          `json:"kind"`
	Metadata meta            `json:"metadata"`
	Items    []*meta         `json:"items"`
	Raw      json.RawMessage `json:"raw"`
	Count    int32           `json:"count"`
	Enabled  bool            `json:"enabled"`
	Skipped  string          `json:"-"`
	internal string
}

func TestShapeCheck(t *testing.T) {
	t.Parallel()
	custom := func(path, key string, known []string) string {
		return fmt.Sprintf("%s has no %s (want %s)", path, key, strings.Join(known, ", "))
	}
	tests := []struct {
		name string
		doc  string
		opts []document.ShapeOption
		want []document.ShapeProblem
	}{
		{name: "valid", doc: `{"kind": "K", "metadata": {"name": "n", "labels": {"a": "b"}}, "items": [{"name": "x"}, null], "raw": [1, {"any": "thing"}]}`},
		{name: "integers and booleans", doc: `{"count": 2147483647, "enabled": false}`},
		{
			name: "not integers or booleans",
			doc:  `{"count": 1.5, "enabled": "yes", "items": [{"name": "x"}], "kind": "K", "raw": 1}`,
			want: []document.ShapeProblem{
				{"count", "count: 1.5 is not an integer of 32 bits"},
				{"enabled", "enabled: expected boolean, got string"},
			},
		},
		{name: "integer too large", doc: `{"count": 2147483648}`, want: []document.ShapeProblem{{"count", "count: 2147483648 is not an integer of 32 bits"}}},
		{name: "integer as a string", doc: `{"count": "3"}`, want: []document.ShapeProblem{{"count", "count: expected integer, got string"}}},
		{name: "null anywhere", doc: `{"kind": null, "metadata": null, "items": [null]}`},
		{name: "root", doc: `[]`, want: []document.ShapeProblem{{"", "document: expected object, got array"}}},
		{
			name: "wrong types",
			doc:  `{"kind": 1, "metadata": {"name": true, "labels": {"b": [], "a": 2}}, "items": {}}`,
			want: []document.ShapeProblem{
				{"items", "items: expected array, got object"},
				{"kind", "kind: expected string, got number"},
				{"metadata.labels.a", "metadata.labels.a: expected string, got number"},
				{"metadata.labels.b", "metadata.labels.b: expected string, got array"},
				{"metadata.name", "metadata.name: expected string, got boolean"},
			},
		},
		{
			name: "YAML boolean hint",
			doc:  `{"kind": true, "items": [{"name": false}]}`,
			opts: []document.ShapeOption{document.WithYAMLBooleanHint()},
			want: []document.ShapeProblem{
				{"items[0].name", "items[0].name: expected string, got boolean (in YAML, quote words such as yes, no, on, off, y and n, which are booleans otherwise)"},
				{"kind", "kind: expected string, got boolean (in YAML, quote words such as yes, no, on, off, y and n, which are booleans otherwise)"},
			},
		},
		{
			name: "unknown fields",
			doc:  `{"Kind": "K", "metadata": {"nmae": "n"}, "Skipped": "", "internal": "", "-": ""}`,
			want: []document.ShapeProblem{
				{"-", `unknown field "-"`},
				{"Kind", `unknown field "Kind" (did you mean "kind"?)`},
				{"Skipped", `unknown field "Skipped"`},
				{"internal", `unknown field "internal"`},
				{"metadata.nmae", `unknown field "metadata.nmae"`},
			},
		},
		{
			name: "unknown fields, described",
			doc:  `{"items": [{"nmae": "n"}]}`,
			opts: []document.ShapeOption{document.WithUnknownField(custom)},
			want: []document.ShapeProblem{{"items[0].nmae", "items[0] has no nmae (want name, labels)"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := document.Decode([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			got := document.NewShape(tt.opts...).Check("", v, reflect.TypeFor[resource]())
			if !slices.Equal(got, tt.want) {
				t.Errorf("Check() = %q,\nwant %q", got, tt.want)
			}
		})
	}
}

func TestJSONKind(t *testing.T) {
	t.Parallel()
	v, err := document.Decode([]byte(`[null, true, 1.5, "s", [], {}]`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range v.([]any) {
		got = append(got, document.JSONKind(e))
	}
	if want := []string{"null", "boolean", "number", "string", "array", "object"}; !slices.Equal(got, want) {
		t.Errorf("kinds = %q, want %q", got, want)
	}
}

type problem struct {
	file string
	line int
	msg  string
}

func (p problem) String() string { return fmt.Sprintf("%s:%d: %s", p.file, p.line, p.msg) }

func TestSortProblems(t *testing.T) {
	t.Parallel()
	byFileLine := func(a, b problem) int {
		return strings.Compare(fmt.Sprintf("%s:%09d", a.file, a.line), fmt.Sprintf("%s:%09d", b.file, b.line))
	}
	ps := []problem{{"b", 1, "x"}, {"a", 2, "z"}, {"a", 2, "y"}, {"a", 1, "x"}, {"a", 2, "z"}, {"b", 1, "x"}}
	want := []problem{{"a", 1, "x"}, {"a", 2, "z"}, {"a", 2, "y"}, {"b", 1, "x"}}
	if got := document.SortProblems(ps, byFileLine); !slices.Equal(got, want) {
		t.Errorf("SortProblems = %v, want %v", got, want)
	}
	if ps[0] != (problem{"b", 1, "x"}) {
		t.Error("SortProblems changed its argument")
	}
	if got := document.SortProblems(nil, byFileLine); got != nil {
		t.Errorf("SortProblems(nil) = %v, want nil", got)
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	invalid := errors.New("invalid thing")
	for _, tt := range []struct {
		ps   []problem
		want string
	}{
		{[]problem{{"a", 1, "x"}}, "invalid thing: a:1: x"},
		{[]problem{{"a", 1, "x"}, {"b", 2, "y"}}, "invalid thing: 2 problems:\n\ta:1: x\n\tb:2: y"},
	} {
		if got := document.ErrorText(invalid, tt.ps); got != tt.want {
			t.Errorf("ErrorText = %q, want %q", got, tt.want)
		}
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s                string
		label, subdomain bool
	}{
		{"flags", true, true},
		{"flipt.io", false, true},
		{"a-1", true, true},
		{"", false, false},
		{"-a", false, false},
		{"A", false, false},
		{"a..b", false, false},
		{strings.Repeat("a", 63), true, true},
		{strings.Repeat("a", 64), false, false},
		{strings.Repeat("a.", 126) + "a", false, true},
		{strings.Repeat("a.", 127) + "a", false, false},
	} {
		if got := document.IsDNSLabel(tt.s); got != tt.label {
			t.Errorf("IsDNSLabel(%q) = %v", tt.s, got)
		}
		if got := document.IsDNSSubdomain(tt.s); got != tt.subdomain {
			t.Errorf("IsDNSSubdomain(%q) = %v", tt.s, got)
		}
	}
}
