package cueeval_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/cueeval"
)

const (
	base      = "configlayers/default/base.yaml"
	env       = "configlayers/default/env.yaml"
	web       = "configlayers/default/web.yaml"
	webScaled = "configlayers/default/web-scaled.yaml"
	webCUE    = "configlayers/default/web-cue.yaml"
	svcSchema = ".cup/schemas/serviceconfig.cue"
)

// TestGolden compares results and errors of layers in testdata/repo with
// testdata/*.golden.
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		layers []string
		schema string
	}{
		// An org base (CUE with defaults), an environment and a service.
		{name: "merge", layers: []string{base, env, web}, schema: svcSchema},
		// Two plain-data layers setting replicas apart.
		{name: "conflict", layers: []string{env, webScaled}},
		// The same with the base, whose default for replicas is one more
		// disjunct that fails.
		{name: "conflict-default", layers: []string{base, env, webScaled}},
		// No layer sets the port, nor the image's name and tag, that the
		// schema requires.
		{name: "incomplete", layers: []string{base, env}, schema: svcSchema},
		// A CUE layer setting replicas apart from a plain-data layer.
		{name: "cue-conflict", layers: []string{env, webCUE}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var o cueeval.Options
			if tc.schema != "" {
				o = schema(t, tc.schema)
			}
			res, err := cueeval.Eval(t.Context(), layers(t, tc.layers...), o)
			var got string
			if ce := (*cueeval.Error)(nil); errors.As(err, &ce) {
				got = ce.Error() + "\n"
			} else if err != nil {
				t.Fatal(err)
			} else {
				got = string(res.JSON) + "\n"
			}
			golden(t, tc.name+".golden", got)
		})
	}
}

// TestConflictPositions checks a conflict's problem field by field: both
// layers' positions, in their YAML files.
func TestConflictPositions(t *testing.T) {
	t.Parallel()
	_, err := cueeval.Eval(t.Context(), layers(t, env, webScaled), cueeval.Options{})
	var ce *cueeval.Error
	if !errors.As(err, &ce) {
		t.Fatalf("Eval: %v, want an *Error", err)
	}
	want := cueeval.Problem{
		Message: "replicas: conflicting values 2 and 3",
		Path:    "replicas",
		Positions: []cueeval.Position{
			{Ref: "ConfigLayer default/env", File: env, Line: 9, Column: 15},
			{Ref: "ConfigLayer default/web-scaled", File: webScaled, Line: 9, Column: 15},
		},
	}
	if len(ce.Problems) != 1 || !equalProblem(ce.Problems[0], want) {
		t.Errorf("problems:\n%#v\nwant\n%#v", ce.Problems, want)
	}
}

func equalProblem(a, b cueeval.Problem) bool {
	if a.Message != b.Message || a.Path != b.Path || len(a.Positions) != len(b.Positions) {
		return false
	}
	for i := range a.Positions {
		if a.Positions[i] != b.Positions[i] {
			return false
		}
	}
	return true
}

// TestOrder checks that the layers' order changes neither the result nor
// the errors, byte for byte.
func TestOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		layers []string
	}{
		{"result", []string{base, env, web}},
		{"error", []string{base, env, webScaled, webCUE}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := schema(t, svcSchema)
			ls := layers(t, tc.layers...)
			first := evalString(t, ls, o)
			r := rand.New(rand.NewPCG(1, 2))
			for range 3 {
				r.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
				if got := evalString(t, ls, o); got != first {
					t.Errorf("in another order:\n%s\nwant\n%s", got, first)
				}
			}
		})
	}
}

// evalString returns the result of Eval, or the message of its *Error.
func evalString(t *testing.T, ls []cueeval.Layer, o cueeval.Options) string {
	t.Helper()
	res, err := cueeval.Eval(t.Context(), ls, o)
	if ce := (*cueeval.Error)(nil); errors.As(err, &ce) {
		return ce.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(res.JSON)
}

// TestResults checks results and problems of small layers given inline.
func TestResults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		layers []cueeval.Layer
		schema string
		o      cueeval.Options
		want   string // the JSON, or the *Error's message
	}{{
		name: "exact numbers",
		layers: []cueeval.Layer{{Ref: "a", Path: "a.yaml",
			Values: []byte(`{"big":123456789012345678901234567890,"f":0.1000000000000000055511151231257827,"e":1e400,"neg":-7,"one":1.0}`)}},
		want: `{"big":123456789012345678901234567890,"e":1E+400,"f":0.1000000000000000055511151231257827,"neg":-7,"one":1.0}`,
	}, {
		name: "sorted keys, no HTML escaping",
		layers: []cueeval.Layer{
			{Ref: "a", Path: "a.yaml", Values: []byte(`{"z":{"b":1,"a":"<&>"},"a":[3,1]}`)},
			{Ref: "b", Path: "b.cue", CUE: `z: c: "é"`},
		},
		want: `{"a":[3,1],"z":{"a":"<&>","b":1,"c":"é"}}`,
	}, {
		name: "reference across layers",
		layers: []cueeval.Layer{
			{Ref: "a", Path: "a.cue", CUE: "tag: string\nimage: \"web:\\(tag)\"\n"},
			{Ref: "b", Path: "b.yaml", Values: []byte(`{"tag":"1.2"}`)},
		},
		want: `{"image":"web:1.2","tag":"1.2"}`,
	}, {
		name:   "defaults",
		layers: []cueeval.Layer{{Ref: "a", Path: "a.cue", CUE: `import "strings"` + "\nn: *1 | int\ns: strings.ToUpper(\"x\")"}},
		want:   `{"n":1,"s":"X"}`,
	}, {
		name:   "no layers",
		layers: nil,
		want:   `{}`,
	}, {
		name:   "relative positions",
		layers: []cueeval.Layer{{Ref: "a", Path: "a.yaml", Values: []byte(`{"n": 1}`)}, {Ref: "b", Path: "b.yaml", Field: "spec.cue", CUE: "\n  n: 2"}},
		want:   `n: conflicting values 2 and 1 (a at a.yaml[spec.values]:1:7, b at b.yaml[spec.cue]:2:6)`,
	}, {
		name: "stale file",
		// The file's data has the same shape but another value: what is
		// evaluated is Values, placed in the file.
		layers: []cueeval.Layer{
			{Ref: "a", Path: "a.yaml", File: []byte("spec:\n  values:\n    n: 1\n"), Values: []byte(`{"n":3}`)},
			{Ref: "b", Path: "b.yaml", Values: []byte(`{"n":2}`)},
		},
		want: `n: conflicting values 2 and 3 (a at a.yaml:3:8, b at b.yaml[spec.values]:1:6)`,
	}, {
		name: "files over the source bound",
		layers: []cueeval.Layer{
			{Ref: "a", Path: "a.yaml", File: []byte("spec:\n  values:\n    n: 3\n" + strings.Repeat("#", 100)), Values: []byte(`{"n":3}`)},
			{Ref: "b", Path: "b.yaml", Values: []byte(`{"n":2}`)},
		},
		o:    cueeval.Options{MaxSourceBytes: 100},
		want: `n: conflicting values 2 and 3 (a at a.yaml[spec.values]:1:6, b at b.yaml[spec.values]:1:6)`,
	}, {
		name: "file of another shape",
		layers: []cueeval.Layer{
			{Ref: "a", Path: "a.yaml", File: []byte("spec:\n  values:\n    m: 1\n"), Values: []byte(`{"n":3}`)},
			{Ref: "b", Path: "b.yaml", Values: []byte(`{"n":2}`)},
		},
		want: `n: conflicting values 2 and 3 (a at a.yaml[spec.values]:1:6, b at b.yaml[spec.values]:1:6)`,
	}, {
		name: "YAML 1.1 reading of the file",
		layers: []cueeval.Layer{
			{Ref: "a", Path: "a.yaml", File: []byte("spec:\n  values:\n    on: yes\n    x: 0.10\n"), Values: []byte(`{"on":true,"x":0.1}`)},
			{Ref: "b", Path: "b.yaml", Values: []byte(`{"on":false}`)},
		},
		want: `on: conflicting values false and true (a at a.yaml:3:9, b at b.yaml[spec.values]:1:7)`,
	}, {
		name: "CUE in a quoted string",
		layers: []cueeval.Layer{
			{Ref: "a", Path: "a.yaml", File: []byte("spec:\n  cue: 'n: 1'\n"), CUE: "n: 1"},
			{Ref: "b", Path: "b.yaml", File: []byte("spec: {cue: \"n: 2\"}\n"), CUE: "n: 2"},
		},
		want: `n: conflicting values 2 and 1 (a at a.yaml:2:12, b at b.yaml:1:17)`,
	}, {
		name: "CUE in a folded string",
		layers: []cueeval.Layer{
			{Ref: "a", Path: "a.yaml", File: []byte("spec:\n  cue: >\n    n: 1\n"), CUE: "n: 1\n"},
			{Ref: "b", Path: "b.yaml", Values: []byte(`{"n":2}`)},
		},
		want: `n: conflicting values 2 and 1 (a at a.yaml[spec.cue]:1:4, b at b.yaml[spec.values]:1:6)`,
	}, {
		name: "multi-line string in a block",
		layers: []cueeval.Layer{
			{Ref: "a", Path: "a.yaml", File: []byte("spec:\n  cue: |\n    s: \"\"\"\n    \tone\n\n    \ttwo\n    \t\"\"\"\n"), CUE: "s: \"\"\"\n\tone\n\n\ttwo\n\t\"\"\"\n"},
		},
		want: `{"s":"one\n\ntwo"}`,
	}, {
		name:   "syntax error",
		layers: []cueeval.Layer{{Ref: "a", Path: "a.yaml", File: []byte("spec:\n  cue: |\n    n: {\n"), CUE: "n: {\n"}},
		want:   `expected '}', found 'EOF' (a at a.yaml:3:10)`,
	}, {
		name:   "closed definition",
		layers: []cueeval.Layer{{Ref: "a", Path: "a.yaml", Values: []byte(`{"n":1,"typo":2}`)}},
		schema: "#C: {n: int}",
		want:   `typo: field not allowed (a at a.yaml[spec.values]:1:9)`,
	}, {
		name:   "plain constraints",
		layers: []cueeval.Layer{{Ref: "a", Path: "a.yaml", Values: []byte(`{"n":1,"other":2}`)}},
		schema: "n: int & >1",
		want:   `n: invalid value 1 (out of bound >1) (a at a.yaml[spec.values]:1:6, schema at <inline>:1:10)`,
	}, {
		name:   "required field",
		layers: []cueeval.Layer{{Ref: "a", Path: "a.yaml", Values: []byte(`{"n":1}`)}},
		schema: "#C: {n: int, port!: int}",
		want:   `port: field is required but not present (schema at <inline>:1:14)`,
	}, {
		name:   "unresolved disjunction",
		layers: []cueeval.Layer{{Ref: "a", Path: "a.cue", CUE: "n: 1 | 2"}},
		want:   `n: incomplete value 1 | 2 (a at a.cue[spec.cue]:1:1)`,
	}, {
		name:   "two schema definitions",
		layers: []cueeval.Layer{{Ref: "a", Path: "a.yaml", Values: []byte(`{"n":1}`)}},
		schema: "#A: {n: string}\n#B: {m: int}",
		want:   "the schema declares the definitions #A, #B and no field, so it constrains nothing: embed the one that applies, e.g. `#A` (schema at <inline>:1:1)",
	}, {
		name:   "schema with an embedded definition",
		layers: []cueeval.Layer{{Ref: "a", Path: "a.yaml", Values: []byte(`{"n":1}`)}},
		schema: "#A: {n: string}\n#B: {m: int}\n#A",
		want:   `n: conflicting values 1 and string (mismatched types int and string) (a at a.yaml[spec.values]:1:6, schema at <inline>:1:9, schema at <inline>:3:1)`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := tc.o
			o.Schema = tc.schema
			if got := evalString(t, tc.layers, o); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestInvalidLayer checks that a layer with both values and CUE is the
// caller's error, not the user's.
func TestInvalidLayer(t *testing.T) {
	t.Parallel()
	_, err := cueeval.Eval(t.Context(), []cueeval.Layer{{Ref: "a", Values: []byte("{}"), CUE: "a: 1"}}, cueeval.Options{})
	if ce := (*cueeval.Error)(nil); err == nil || errors.As(err, &ce) || errors.Is(err, cueeval.ErrLimit) {
		t.Errorf("Eval = %v, want a plain error", err)
	}
}

// TestErrorString checks the format of Error.Error.
func TestErrorString(t *testing.T) {
	t.Parallel()
	e := &cueeval.Error{Problems: []cueeval.Problem{{
		Message: "replicas: conflicting values 3 and 2",
		Path:    "replicas",
		Positions: []cueeval.Position{
			{Ref: "ConfigLayer default/env", File: "configlayers/default/env.yaml", Line: 7, Column: 13},
			{Ref: "ConfigLayer default/web", File: "configlayers/default/web.yaml", Line: 8, Column: 13},
		},
	}, {
		Message:   "port: incomplete value int",
		Path:      "port",
		Positions: []cueeval.Position{{Ref: "ConfigLayer default/x", File: "x.yaml", Field: "spec.cue", Line: 1, Column: 7}},
	}, {
		Message: "n: incomplete value 1 | 2",
		Path:    "n",
	}}}
	want := strings.Join([]string{
		"replicas: conflicting values 3 and 2 (ConfigLayer default/env at configlayers/default/env.yaml:7:13, ConfigLayer default/web at configlayers/default/web.yaml:8:13)",
		"port: incomplete value int (ConfigLayer default/x at x.yaml[spec.cue]:1:7)",
		"n: incomplete value 1 | 2",
	}, "\n")
	if got := e.Error(); got != want {
		t.Errorf("Error() =\n%s\nwant\n%s", got, want)
	}
}

// TestTiming reports how long a tiny evaluation takes, the worker's start
// included.
func TestTiming(t *testing.T) {
	t.Parallel()
	start := time.Now()
	if _, err := cueeval.Eval(t.Context(), []cueeval.Layer{{Ref: "a", CUE: "a: 1"}}, cueeval.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("a tiny evaluation took %v", time.Since(start))
}
