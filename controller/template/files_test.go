package template_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/template"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var yamlSpec = template.Spec{
	ListTemplate:     `{{ .Namespace }}/*.yaml`,
	ResourceTemplate: `{{ .Namespace }}/{{ .Group }}-{{ .Version }}-{{ .Kind }}-{{ .Name }}.yaml`,
}

// goldenResource exercises everything the encodings must keep.
func goldenResource() *controller.Resource {
	r := newFlag("default", "new-login", `{
		"enabled": true,
		"description": "Roll out the new login page.\nSecond line with \"quotes\", <html> & ünïcödé.",
		"variants": [{"key": "on", "weight": 75.5}, {"key": "off", "weight": 24.5}],
		"rollout": {"segments": ["beta", "internal"], "match": {"country": "NL"}, "fallback": null},
		"maxInt64": 9223372036854775807,
		"yes": "yes",
		"number-like": "1e3",
		"empty": {}
	}`)
	r.Metadata.Labels = map[string]string{"team": "identity", "tier": "1"}
	r.Metadata.Annotations = map[string]string{"cup.dev/owner": "platform@example.com", "note": ""}
	r.Metadata.ResourceVersion = "never-stored"
	return r
}

func TestGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, golden, path string
		spec               template.Spec
	}{
		{"json", "flag.json", "default/flags.cup.dev-v1alpha1-Flag-new-login.json", template.Spec{}},
		{"yaml", "flag.yaml", "default/flags.cup.dev-v1alpha1-Flag-new-login.yaml", yamlSpec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newController(t, tt.spec)
			mem := newMemFS(t, nil)
			put(t, c, mem, goldenResource())
			got, ok := mem.Files()[tt.path]
			if !ok {
				t.Fatalf("files = %v, want %s", keys(mem.Files()), tt.path)
			}
			golden := filepath.Join("testdata", tt.golden)
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Put wrote\n%s\nwant (%s)\n%s", got, golden, want)
			}
			// The golden file reads back as the resource, and a fresh
			// controller writes it again byte for byte.
			mem2 := newMemFS(t, map[string]string{tt.path: string(want)})
			r, err := newController(t, tt.spec).Get(t.Context(), &controller.GetRequest{FS: mem2, Type: flagType, Namespace: "default", Name: "new-login"})
			if err != nil {
				t.Fatalf("Get of the golden file: %v", err)
			}
			r.Spec = goldenResource().Spec // compare the rest exactly
			if wantR := goldenResource(); r.Metadata.ResourceVersion != "" || !equalMeta(r, wantR) {
				t.Errorf("Get of the golden file = %+v, want %+v without resourceVersion", r.Metadata, wantR.Metadata)
			}
			c2 := newController(t, tt.spec)
			mem3 := newMemFS(t, nil)
			put(t, c2, mem3, goldenResource())
			if again := mem3.Files()[tt.path]; !bytes.Equal(again, want) {
				t.Errorf("a second controller wrote different bytes:\n%s", again)
			}
		})
	}
}

func equalMeta(a, b *controller.Resource) bool {
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind &&
		a.Metadata.Namespace == b.Metadata.Namespace && a.Metadata.Name == b.Metadata.Name &&
		maps.Equal(a.Metadata.Labels, b.Metadata.Labels) && maps.Equal(a.Metadata.Annotations, b.Metadata.Annotations)
}

func TestHostileNames(t *testing.T) {
	t.Parallel()
	specs := map[string]template.Spec{
		"default": {},
		"bare": {
			ListTemplate:     `{{ .Namespace }}/*`,
			ResourceTemplate: `{{ .Namespace }}/{{ .Name }}`,
		},
		"replace": { // turns dashes into directories: the rendered path is what counts
			ListTemplate:     `{{ .Namespace }}/*.json`,
			ResourceTemplate: `{{ .Namespace }}/{{ replace .Name "-" "/" }}.json`,
		},
	}
	tests := []struct {
		spec, namespace, name string
	}{
		{"default", "", "x"},
		{"default", "default", ""},
		{"default", "..", "x"},
		{"default", ".", "x"},
		{"default", "../..", "x"},
		{"default", "a/b", "x"},
		{"default", "default", "../../etc/passwd"},
		{"default", "default", "a\\b"},
		{"default", "x\x00y", "x"},
		{"default", "default", "x\x00"},
		{"default", "default", "line\nbreak"},
		{"default", "*", "x"},
		{"default", "default", "x*"},
		{"default", "default", "[a]"},
		{"default", "default", "q?"},
		{"default", ".git", "x"},
		{"default", ".GIT", "x"},
		{"default", "default", strings.Repeat("n", 300)},
		{"default", "default", "\xff"},
		{"bare", "default", ".."},
		{"bare", "default", "."},
		{"bare", "default", ".git"},
		{"replace", "default", "..-x"},
		{"replace", "default", "a--b"},
		{"replace", "default", "-x"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %q %q", tt.spec, tt.namespace, tt.name), func(t *testing.T) {
			t.Parallel()
			c := newController(t, specs[tt.spec])
			// A tree where escaping would find something.
			mem := newMemFS(t, map[string]string{"etc/passwd": "root", "default/x.json": "{}"})
			before := mem.Files()
			ctx := t.Context()
			_, getErr := c.Get(ctx, &controller.GetRequest{FS: mem, Type: flagType, Namespace: tt.namespace, Name: tt.name})
			putErr := c.Put(ctx, &controller.PutRequest{FS: mem, Type: flagType, Resource: newFlag(tt.namespace, tt.name, `{}`)})
			delErr := c.Delete(ctx, &controller.DeleteRequest{FS: mem, Type: flagType, Namespace: tt.namespace, Name: tt.name})
			for op, err := range map[string]error{"Get": getErr, "Put": putErr, "Delete": delErr} {
				if !errors.Is(err, controller.ErrInvalid) {
					t.Errorf("%s = %v, want an error wrapping ErrInvalid", op, err)
				}
			}
			if tt.namespace != "default" {
				if _, err := c.List(ctx, &controller.ListRequest{FS: mem, Type: flagType, Namespace: tt.namespace}); !errors.Is(err, controller.ErrInvalid) {
					t.Errorf("List = %v, want an error wrapping ErrInvalid", err)
				}
			}
			if after := mem.Files(); !maps.EqualFunc(before, after, bytes.Equal) {
				t.Errorf("the tree changed: %v", keys(after))
			}
		})
	}
}

func TestHostileType(t *testing.T) {
	t.Parallel()
	c := newController(t, template.Spec{})
	mem := newMemFS(t, nil)
	for _, typ := range []controller.Type{
		{Group: "..", Version: "v1", Kind: "Flag"}, // renders "default/..-v1-Flag-x.json", which is fine...
		{Group: "a/b", Version: "v1", Kind: "Flag"},
		{Group: "g", Version: "v1", Kind: "Fl*g"},
		{Group: "g", Version: "", Kind: "Flag"},
		{Group: "g", Version: "v1", Kind: ""},
	} {
		_, err := c.Get(t.Context(), &controller.GetRequest{FS: mem, Type: typ, Namespace: "default", Name: "x"})
		if typ.Group == ".." {
			if !errors.Is(err, controller.ErrNotFound) {
				t.Errorf("Get with type %+v = %v, want ErrNotFound", typ, err)
			}
			continue
		}
		if !errors.Is(err, controller.ErrInvalid) {
			t.Errorf("Get with type %+v = %v, want an error wrapping ErrInvalid", typ, err)
		}
	}
}

const (
	flagJSON    = `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Flag","metadata":{"name":%q},"spec":{}}`
	segmentJSON = `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Segment","metadata":{"name":%q}}`
)

func TestMalformedFiles(t *testing.T) {
	t.Parallel()
	const dir = "default/"
	path := func(name string) string { return dir + "flags.cup.dev-v1alpha1-Flag-" + name + ".json" }
	tests := []struct {
		name, content, wantErr string
	}{
		{"syntax", `{"apiVersion":`, "unexpected EOF"},
		{"empty", ``, "EOF"},
		{"null", `null`, "missing apiVersion"},
		{"unknown field", `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Flag","metadata":{"name":"x"},"status":{}}`, `unknown field "status"`},
		{"unknown metadata field", `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Flag","metadata":{"name":"x","uid":"1"}}`, `unknown field "uid"`},
		{"spec array", `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Flag","metadata":{"name":"x"},"spec":[1]}`, "spec must be a JSON object"},
		{"trailing data", fmt.Sprintf(flagJSON, "x") + `{}`, "unexpected data"},
		{"missing kind", `{"apiVersion":"flags.cup.dev/v1alpha1","metadata":{"name":"x"}}`, "missing kind"},
		{"missing name", `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Flag","metadata":{}}`, "missing metadata.name"},
		{"label not a string", `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Flag","metadata":{"name":"x","labels":{"a":1}}}`, "cannot unmarshal number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newController(t, template.Spec{})
			mem := newMemFS(t, map[string]string{
				path("x"):  tt.content,
				path("ok"): fmt.Sprintf(flagJSON, "ok"),
			})
			_, err := c.Get(t.Context(), &controller.GetRequest{FS: mem, Type: flagType, Namespace: "default", Name: "x"})
			checkMalformed(t, "Get", err, tt.wantErr, path("x"))
			_, err = c.List(t.Context(), &controller.ListRequest{FS: mem, Type: flagType, Namespace: "default"})
			checkMalformed(t, "List", err, tt.wantErr, path("x"))
			// The cached error names the file it is met in.
			_, err = c.List(t.Context(), &controller.ListRequest{FS: mem, Type: flagType, Namespace: "default"})
			checkMalformed(t, "second List", err, tt.wantErr, path("x"))
			// The broken file does not keep others from being read.
			if _, err := c.Get(t.Context(), &controller.GetRequest{FS: mem, Type: flagType, Namespace: "default", Name: "ok"}); err != nil {
				t.Errorf("Get of another file: %v", err)
			}
			// Put repairs it, Delete removes it.
			put(t, c, mem, newFlag("default", "x", `{"fixed":true}`))
			if _, err := c.Get(t.Context(), &controller.GetRequest{FS: mem, Type: flagType, Namespace: "default", Name: "x"}); err != nil {
				t.Errorf("Get after Put over the broken file: %v", err)
			}
			if err := mem.WriteFile(path("x"), []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := c.Delete(t.Context(), &controller.DeleteRequest{FS: mem, Type: flagType, Namespace: "default", Name: "x"}); err != nil {
				t.Errorf("Delete of the broken file: %v", err)
			}
		})
	}
}

func checkMalformed(t *testing.T, op string, err error, want, path string) {
	t.Helper()
	if !errors.Is(err, controller.ErrMalformed) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s = %v; want an error wrapping ErrMalformed naming %s and containing %q", op, err, path, want)
	}
}

func TestMalformedYAML(t *testing.T) {
	t.Parallel()
	const p = "default/flags.cup.dev-v1alpha1-Flag-x.yaml"
	const head = "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata:\n  name: x\n"
	tests := []struct {
		name, content, wantErr string
	}{
		{"syntax", "apiVersion: [", "decoding YAML"},
		{"duplicate key", head + "kind: Segment\n", `key "kind" already set`},
		{"two documents", head + "---\n" + head, "more than one document"},
		{"document after end", head + "...\n" + head, "more than one document"},
		{"spec list", head + "spec:\n- a\n", "spec must be a JSON object"},
		{"unknown field", head + "status: {}\n", `unknown field "status"`},
		{"empty", "", "missing apiVersion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newController(t, yamlSpec)
			mem := newMemFS(t, map[string]string{p: tt.content})
			_, err := c.Get(t.Context(), &controller.GetRequest{FS: mem, Type: flagType, Namespace: "default", Name: "x"})
			checkMalformed(t, "Get", err, tt.wantErr, p)
			_, err = c.List(t.Context(), &controller.ListRequest{FS: mem, Type: flagType, Namespace: "default"})
			checkMalformed(t, "List", err, tt.wantErr, p)
		})
	}
}

func TestHandWrittenYAML(t *testing.T) {
	t.Parallel()
	c := newController(t, yamlSpec)
	mem := newMemFS(t, map[string]string{
		"default/flags.cup.dev-v1alpha1-Flag-x.yaml": `%YAML 1.1
# A comment before the document.
---
apiVersion: flags.cup.dev/v1alpha1
kind: Flag
metadata:
  name: x   # no namespace: the directory says it
  labels: {team: web}
spec:
  enabled: yes      # YAML 1.1: a boolean
  quoted: "yes"
  text: |
    ---
    not a document marker: indented
  count: 3
...
# trailing comment
`,
	})
	r, err := c.Get(t.Context(), &controller.GetRequest{FS: mem, Type: flagType, Namespace: "default", Name: "x"})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	wantSpec := `{"count":3,"enabled":true,"quoted":"yes","text":"---\nnot a document marker: indented\n"}`
	if string(r.Spec) != wantSpec || r.Metadata.Namespace != "default" || r.Metadata.Labels["team"] != "web" {
		t.Errorf("Get = %+v spec %s; want namespace default, label team=web and spec %s", r.Metadata, r.Spec, wantSpec)
	}
}

func TestListSkipsAndReports(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		files     map[string]string
		wantNames []string
		// wantProblems maps each file left out to a substring of its error.
		wantProblems map[string]string
	}{
		{
			name: "other kinds and directories are skipped",
			files: map[string]string{
				"default/a.json":                   fmt.Sprintf(flagJSON, "a"),
				"default/b.json":                   fmt.Sprintf(flagJSON, "b"),
				"default/segment.json":             fmt.Sprintf(segmentJSON, "a"),
				"default/other-group.json":         `{"apiVersion":"other.dev/v1alpha1","kind":"Flag","metadata":{"name":"a"}}`,
				"default/other-version.json":       `{"apiVersion":"flags.cup.dev/v1","kind":"Flag","metadata":{"name":"a"}}`,
				"default/dir.json/inside.json":     fmt.Sprintf(flagJSON, "inside"),
				"default/README.md":                "not a resource",
				"default/sub/c.json":               fmt.Sprintf(flagJSON, "c"),
				"other/d.json":                     fmt.Sprintf(flagJSON, "d"),
				"default/e.json":                   `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Flag","metadata":{"namespace":"default","name":"e"}}`,
				"default/is-a-resource-name.json ": "trailing space: not matched",
			},
			wantNames: []string{"a", "b", "e"},
		},
		{
			name: "the path is the identity",
			files: map[string]string{
				"default/a.json":   fmt.Sprintf(flagJSON, "a"),
				"default/one.json": fmt.Sprintf(flagJSON, "same"),
				"default/two.json": fmt.Sprintf(flagJSON, "same"),
			},
			wantNames: []string{"a"},
			wantProblems: map[string]string{
				"default/one.json": `holds Flag "same", whose file is default/same.json`,
				"default/two.json": `holds Flag "same", whose file is default/same.json`,
			},
		},
		{
			name: "another name among unselected",
			files: map[string]string{
				"default/one.json": `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Flag","metadata":{"name":"same","labels":{"x":"1"}}}`,
			},
			wantProblems: map[string]string{"default/one.json": "whose file is default/same.json"},
		},
		{
			name: "another namespace",
			files: map[string]string{
				"default/a.json": `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Flag","metadata":{"namespace":"prod","name":"a"}}`,
			},
			wantProblems: map[string]string{"default/a.json": `namespace "prod"`},
		},
		{
			name: "files that do not decode",
			files: map[string]string{
				"default/a.json": fmt.Sprintf(flagJSON, "a"),
				"default/m.json": `{`,
				"default/z.json": `[`,
				// What the original Cup writes for a PUT without apiVersion.
				"default/old.json": `{"kind":"Flag","metadata":{"name":"old"},"spec":{}}`,
			},
			wantNames: []string{"a"},
			wantProblems: map[string]string{
				"default/m.json":   "unexpected EOF",
				"default/old.json": "missing apiVersion",
				"default/z.json":   "EOF",
			},
		},
		{
			name: "a name no file can have",
			files: map[string]string{
				"default/x.json": fmt.Sprintf(flagJSON, "a/b"),
			},
			wantProblems: map[string]string{"default/x.json": `"a/b", a name no file can have`},
		},
	}
	spec := template.Spec{ListTemplate: `{{ .Namespace }}/*.json`, ResourceTemplate: `{{ .Namespace }}/{{ .Name }}.json`}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newController(t, spec)
			mem := newMemFS(t, tt.files)
			req := &controller.ListRequest{FS: mem.Snapshot(), Type: flagType, Namespace: "default"}
			if strings.Contains(tt.name, "unselected") {
				req.Selector = selector{"x": "1"}
			}
			got, problems, err := c.ListProblems(t.Context(), req)
			if err != nil {
				t.Fatalf("ListProblems: %v", err)
			}
			var names []string
			for _, r := range got {
				names = append(names, r.Metadata.Name)
				if r.Metadata.Namespace != "default" {
					t.Errorf("%s: namespace %q, want default", r.Metadata.Name, r.Metadata.Namespace)
				}
			}
			if !slices.Equal(names, tt.wantNames) {
				t.Errorf("ListProblems = %v, want %v", names, tt.wantNames)
			}
			if len(problems) != len(tt.wantProblems) {
				t.Errorf("ListProblems reports %d problems, want %d: %v", len(problems), len(tt.wantProblems), problems)
			}
			for i, p := range problems {
				if i > 0 && problems[i-1].Origin >= p.Origin {
					t.Errorf("problems not in path order: %v", problems)
				}
				if want, ok := tt.wantProblems[p.Origin]; !ok {
					t.Errorf("unexpected problem %s: %v", p.Origin, p.Err)
				} else {
					checkMalformed(t, "problem", p.Err, want, p.Origin)
				}
			}

			// List fails on the first problem; ListKeyed's Decode reports each.
			list, err := c.List(t.Context(), req)
			if len(problems) > 0 {
				if err == nil || err.Error() != problems[0].Err.Error() {
					t.Errorf("List = %v, %v; want the first problem, %v", list, err, problems[0].Err)
				}
			} else if err != nil {
				t.Errorf("List: %v", err)
			}
			found, err := c.ListKeyed(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range found {
				_, err := f.Decode()
				if want, ok := tt.wantProblems[f.Origin]; ok {
					checkMalformed(t, "Decode", err, want, f.Origin)
				} else if err != nil {
					t.Errorf("Decode(%s): %v", f.Origin, err)
				}
			}
		})
	}
}

type selector map[string]string

func (s selector) Matches(labels map[string]string) bool {
	for k, v := range s {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestSharedPaths checks a layout where two kinds would share a file: the
// controller refuses to read, replace or remove another kind's resource.
func TestSharedPaths(t *testing.T) {
	t.Parallel()
	c := newController(t, template.Spec{ListTemplate: `{{ .Namespace }}/*.json`, ResourceTemplate: `{{ .Namespace }}/{{ .Name }}.json`})
	mem := newMemFS(t, nil)
	put(t, c, mem, newFlag("default", "x", `{"a":1}`))
	before := mem.Files()
	seg := &controller.Resource{APIVersion: segmentType.APIVersion(), Kind: segmentType.Kind, Metadata: controller.Metadata{Namespace: "default", Name: "x"}}
	ctx := t.Context()
	_, getErr := c.Get(ctx, &controller.GetRequest{FS: mem, Type: segmentType, Namespace: "default", Name: "x"})
	putErr := c.Put(ctx, &controller.PutRequest{FS: mem, Type: segmentType, Resource: seg})
	delErr := c.Delete(ctx, &controller.DeleteRequest{FS: mem, Type: segmentType, Namespace: "default", Name: "x"})
	for op, err := range map[string]error{"Get": getErr, "Put": putErr, "Delete": delErr} {
		if !errors.Is(err, controller.ErrMalformed) || !strings.Contains(err.Error(), "default/x.json holds flags.cup.dev/v1alpha1 Flag") {
			t.Errorf("%s of a Segment where a Flag is = %v, want an error wrapping ErrMalformed naming the file", op, err)
		}
	}
	if !maps.EqualFunc(before, mem.Files(), bytes.Equal) {
		t.Errorf("the tree changed")
	}
	// A file holding a resource under another name is not that resource either.
	if err := mem.WriteFile("default/y.json", fmt.Appendf(nil, flagJSON, "not-y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, &controller.GetRequest{FS: mem, Type: flagType, Namespace: "default", Name: "y"}); !errors.Is(err, controller.ErrMalformed) {
		t.Errorf("Get of a file naming another resource = %v, want ErrMalformed", err)
	}
}

func TestPutKeepsEquivalentFile(t *testing.T) {
	t.Parallel()
	const p = "default/flags.cup.dev-v1alpha1-Flag-x.json"
	handWritten := `{
    "kind": "Flag",
    "apiVersion": "flags.cup.dev/v1alpha1",
    "metadata": {"name": "x", "labels": {"b": "2", "a": "1"}},
    "spec": {"z": 1.0, "a": [true, {"y": null}]}
}
`
	c := newController(t, template.Spec{})
	mem := newMemFS(t, map[string]string{p: handWritten})
	same := newFlag("default", "x", `{"a":[true,{"y":null}],"z":1}`)
	same.Metadata.Labels = map[string]string{"a": "1", "b": "2"}
	put(t, c, mem, same)
	if got := string(mem.Files()[p]); got != handWritten {
		t.Errorf("Put of equal content rewrote the file:\n%s", got)
	}
	changed := same.Clone()
	changed.Spec = []byte(`{"a":[true,{"y":null}],"z":2}`)
	put(t, c, mem, changed)
	if got := string(mem.Files()[p]); got == handWritten || !strings.Contains(got, `"z": 2`) {
		t.Errorf("Put of changed content did not rewrite the file:\n%s", got)
	}
}

func TestPutRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec template.Spec
		typ  controller.Type
		res  *controller.Resource
	}{
		{"nil resource", template.Spec{}, flagType, nil},
		{"other kind", template.Spec{}, segmentType, newFlag("default", "x", "")},
		{"other group", template.Spec{}, controller.Type{Group: "other.dev", Version: "v1alpha1", Kind: "Flag"}, newFlag("default", "x", "")},
		{"no namespace", template.Spec{}, flagType, newFlag("", "x", "")},
		{"no name", template.Spec{}, flagType, newFlag("default", "", "")},
		{"spec array", template.Spec{}, flagType, newFlag("default", "x", `[1]`)},
		{"spec string", template.Spec{}, flagType, newFlag("default", "x", `"s"`)},
		{"spec not JSON", template.Spec{}, flagType, newFlag("default", "x", `{nope}`)},
		{"YAML loses precision", yamlSpec, flagType, newFlag("default", "x", `{"n":123456789012345678901234567890}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newController(t, tt.spec)
			mem := newMemFS(t, nil)
			err := c.Put(t.Context(), &controller.PutRequest{FS: mem, Type: tt.typ, Resource: tt.res})
			if !errors.Is(err, controller.ErrInvalid) {
				t.Errorf("Put = %v, want an error wrapping ErrInvalid", err)
			}
			if files := mem.Files(); len(files) != 0 {
				t.Errorf("Put wrote %v", keys(files))
			}
		})
	}
}

func TestYAMLNumbers(t *testing.T) {
	t.Parallel()
	c := newController(t, yamlSpec)
	mem := newMemFS(t, nil)
	in := newFlag("default", "x", `{"f":1.0,"e":1e3,"big":18446744073709551615,"neg":-0.5,"tiny":1e-7}`)
	put(t, c, mem, in)
	r, err := c.Get(t.Context(), &controller.GetRequest{FS: mem, Type: flagType, Namespace: "default", Name: "x"})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	const want = `{"big":18446744073709551615,"e":1000,"f":1,"neg":-0.5,"tiny":1e-7}`
	if string(r.Spec) != want {
		t.Errorf("spec = %s, want %s", r.Spec, want)
	}
	before := mem.Files()
	put(t, c, mem, in)
	put(t, c, mem, r)
	if !maps.EqualFunc(before, mem.Files(), bytes.Equal) {
		t.Errorf("re-putting equal numbers changed the file")
	}
}

func TestCanceledContext(t *testing.T) {
	t.Parallel()
	c := newController(t, template.Spec{})
	mem := newMemFS(t, nil)
	put(t, c, mem, newFlag("default", "x", ""))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, getErr := c.Get(ctx, &controller.GetRequest{FS: mem, Type: flagType, Namespace: "default", Name: "x"})
	_, listErr := c.List(ctx, &controller.ListRequest{FS: mem, Type: flagType, Namespace: "default"})
	putErr := c.Put(ctx, &controller.PutRequest{FS: mem, Type: flagType, Resource: newFlag("default", "y", "")})
	delErr := c.Delete(ctx, &controller.DeleteRequest{FS: mem, Type: flagType, Namespace: "default", Name: "x"})
	for op, err := range map[string]error{"Get": getErr, "List": listErr, "Put": putErr, "Delete": delErr} {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s = %v, want context.Canceled", op, err)
		}
	}
}

func TestNilRequests(t *testing.T) {
	t.Parallel()
	c := newController(t, template.Spec{})
	ctx := t.Context()
	_, getErr := c.Get(ctx, &controller.GetRequest{Type: flagType, Namespace: "default", Name: "x"})
	_, listErr := c.List(ctx, nil)
	putErr := c.Put(ctx, &controller.PutRequest{Type: flagType, Resource: newFlag("default", "x", "")})
	delErr := c.Delete(ctx, nil)
	for op, err := range map[string]error{"Get": getErr, "List": listErr, "Put": putErr, "Delete": delErr} {
		if !errors.Is(err, controller.ErrInvalid) {
			t.Errorf("%s = %v, want ErrInvalid", op, err)
		}
	}
}

func TestListSymlinks(t *testing.T) {
	t.Parallel()
	c := newController(t, template.Spec{ListTemplate: `{{ .Namespace }}/*.json`, ResourceTemplate: `{{ .Namespace }}/{{ .Name }}.json`})
	fsys := fstest.MapFS{
		"shared/a.json":     {Data: fmt.Appendf(nil, flagJSON, "a")},
		"default/a.json":    {Data: []byte("../shared/a.json"), Mode: fs.ModeSymlink},
		"default/gone.json": {Data: []byte("../shared/missing.json"), Mode: fs.ModeSymlink},
	}
	list, err := c.List(t.Context(), &controller.ListRequest{FS: fsys, Type: flagType, Namespace: "default"})
	if err != nil || len(list) != 1 || list[0].Metadata.Name != "a" {
		t.Errorf("List = %v, %v; want [a] through the symbolic link, skipping the dangling one", list, err)
	}
}

func TestListNamespaceIsAFile(t *testing.T) {
	t.Parallel()
	c := newController(t, template.Spec{})
	mem := newMemFS(t, map[string]string{"default": "a file, not a directory"})
	list, err := c.List(t.Context(), &controller.ListRequest{FS: mem, Type: flagType, Namespace: "default"})
	if err != nil || len(list) != 0 {
		t.Errorf("List = %v, %v; want no resources", list, err)
	}
	if _, err := c.Get(t.Context(), &controller.GetRequest{FS: mem, Type: flagType, Namespace: "default", Name: "x"}); !errors.Is(err, controller.ErrNotFound) {
		t.Errorf("Get = %v, want ErrNotFound", err)
	}
}
