package config_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/config"
)

// summary renders a Set one resource per line, for comparison in tests.
func summary(s *config.Set) string {
	var b strings.Builder
	for _, d := range s.Definitions {
		fmt.Fprintf(&b, "definition %s group=%s kind=%s singular=%s plural=%s short=%v at %s:",
			d.Name, d.Group, d.Names.Kind, d.Names.Singular, d.Names.Plural, d.Names.ShortNames, d.Location)
		for _, v := range d.Versions {
			fmt.Fprintf(&b, " %s(%s)", v.Name, v.Target)
		}
		b.WriteString("\n")
	}
	for _, c := range s.Controllers {
		fmt.Fprintf(&b, "controller %s type=%s spec=%s at %s\n", c.Name, c.Type, c.Spec, c.Location)
	}
	for _, bd := range s.Bindings {
		refs := make([]string, len(bd.Resources))
		for i, r := range bd.Resources {
			refs[i] = r.Group + "/" + r.Version + "/" + r.Plural
		}
		fmt.Fprintf(&b, "binding %s controller=%s resources=%v at %s\n", bd.Name, bd.Controller, refs, bd.Location)
	}
	return b.String()
}

// problems returns the problems of an *config.Error, failing the test for
// any other error.
func problems(t *testing.T, err error) []string {
	t.Helper()
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v (%T), want *config.Error", err, err)
	}
	if !errors.Is(err, config.ErrInvalid) {
		t.Errorf("errors.Is(err, ErrInvalid) = false")
	}
	out := make([]string, len(ce.Problems))
	for i, p := range ce.Problems {
		if p.File == "" || !strings.HasPrefix(p.String(), p.File) {
			t.Errorf("problem %q does not start with its file %q", p, p.File)
		}
		out[i] = p.String()
	}
	return out
}

func diffLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

func TestLoadValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dir  string
		want string
	}{
		{
			// The original Cup's files, unchanged: apiVersion cup.flipt.io,
			// top-level names, bare schemas, kind Binding, a JSON array.
			dir: "testdata/original",
			want: `definition flags.flipt.io group=flipt.io kind=Flag singular=flag plural=flags short=[] at definitions/flags.json: v1alpha1(spec)
definition resources.test.cup.flipt.io group=test.cup.flipt.io kind=Resource singular=resource plural=resources short=[] at definitions/resources.json: v1alpha1(resource)
controller flipt type=wasm spec={"path":"flipt.wasm"} at controllers.json (document 3)
controller template type=template spec= at controllers.json (document 1)
controller x type=template spec={"directory_template":"{{ .Namespace }}/*.json","path_template":"{{ .Namespace }}/{{ .Name }}.json"} at controllers.json (document 2)
binding flipt controller=flipt resources=[flipt.io/v1alpha1/flags] at bindings/flipt.json
binding template controller=template resources=[test.cup.flipt.io/v1alpha1/resources] at bindings/template.json
`,
		},
		{
			// cup.dev files: multi-document YAML, spec.names, {schema,
			// schemaTarget} versions, nested directories; hidden files,
			// hidden directories and other extensions skipped.
			dir: "testdata/yaml",
			want: `definition flags.flags.cup.dev group=flags.cup.dev kind=Flag singular=flag plural=flags short=[fl ff] at definitions.yaml (document 1): v1alpha1(spec) v1beta1(spec)
definition segments.flags.cup.dev group=flags.cup.dev kind=Segment singular=segment plural=segments short=[] at definitions.yaml (document 2): v1alpha1(resource)
controller files type=template spec={"encoding":"yaml","list_template":"{{ .Namespace }}/*.yaml","resource_template":"{{ .Namespace }}/{{ .Name }}.yaml"} at controllers.yml (document 1)
controller segments type=wasm spec={"memoryLimitPages":256,"path":"segments.wasm"} at nested/wasm.yaml
binding flags controller=files resources=[flags.cup.dev/v1alpha1/flags flags.cup.dev/v1beta1/flags] at bindings.yaml (document 1)
binding segments controller=segments resources=[flags.cup.dev/v1alpha1/segments] at bindings.yaml (document 2)
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			t.Parallel()
			s, err := config.Load(os.DirFS(tt.dir), ".")
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := summary(s); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestLoadInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dir  string
		want []string
	}{
		{
			dir: "header",
			want: []string{
				`resources.yaml (document 1): unknown apiVersion "cup.dev/v1beta1" (want cup.dev/v1alpha1 or cup.flipt.io/v1alpha1)`,
				`resources.yaml (document 2): unknown kind "CustomResourceDefinition" (want ResourceDefinition, Controller, APIBinding or Reconciler)`,
				`resources.yaml (document 3): kind is required (ResourceDefinition, Controller, APIBinding or Reconciler)`,
				`resources.yaml (document 4): apiVersion is required (cup.dev/v1alpha1)`,
				`resources.yaml (document 6): apiVersion: expected string, got array`,
			},
		},
		{
			dir: "names",
			want: []string{
				`bad.yaml (document 1): ResourceDefinition "flags.flipt.io": spec.group "Flipt_IO" must be a DNS subdomain (lowercase letters, digits, '-' and '.', e.g. flags.example.com)`,
				`bad.yaml (document 1): ResourceDefinition "flags.flipt.io": spec.names.kind "flag" must be UpperCamelCase (letters and digits, starting with an upper-case letter)`,
				`bad.yaml (document 1): ResourceDefinition "flags.flipt.io": spec.names.plural "Flags" must be a lowercase DNS label (a-z, 0-9 and '-', at most 63 characters)`,
				`bad.yaml (document 1): ResourceDefinition "flags.flipt.io": spec.names.shortNames[1] "f" is listed twice`,
				`bad.yaml (document 1): ResourceDefinition "flags.flipt.io": spec.names.shortNames[2] "F" must be a lowercase DNS label (a-z, 0-9 and '-', at most 63 characters)`,
				`bad.yaml (document 1): ResourceDefinition "flags.flipt.io": spec.names.singular "the_flag" must be a lowercase DNS label (a-z, 0-9 and '-', at most 63 characters)`,
				`bad.yaml (document 1): ResourceDefinition "flags.flipt.io": spec.versions: version "V1" must be a lowercase DNS label (a-z, 0-9 and '-', at most 63 characters), e.g. v1alpha1`,
				`bad.yaml (document 2): ResourceDefinition "both.flipt.io": names are given both at the top level and in spec.names; keep one`,
				`bad.yaml (document 3): ResourceDefinition "no names": metadata.name "no names" must not contain spaces or control characters`,
				`bad.yaml (document 3): ResourceDefinition "no names": spec.group is required`,
				`bad.yaml (document 3): ResourceDefinition "no names": spec.names is required (or names, at the top level)`,
				`bad.yaml (document 3): ResourceDefinition "no names": spec.versions must define at least one version`,
			},
		},
		{
			dir: "duplicates",
			want: []string{
				`b.json (document 1): ResourceDefinition "flags2.flipt.io": group "flipt.io" and kind "Flag" are already defined by ResourceDefinition "flags.flipt.io" in a.yaml (document 1)`,
				`b.json (document 1): ResourceDefinition "flags2.flipt.io": group "flipt.io" and plural "flags" are already defined by ResourceDefinition "flags.flipt.io" in a.yaml (document 1)`,
				`b.json (document 2): ResourceDefinition "flags.flipt.io": duplicate name, also defined in a.yaml (document 1)`,
				`b.json (document 3): Controller "files": duplicate name, also defined in a.yaml (document 2)`,
				`b.json (document 4): APIBinding "flags": duplicate name, also defined in a.yaml (document 3)`,
				`b.json (document 4): APIBinding "flags": spec.resources[0]: flipt.io/v1/flags is already bound by APIBinding "flags" in a.yaml (document 3)`,
			},
		},
		{
			dir: "schemas",
			want: []string{
				`legacy.json: ResourceDefinition "olds.example.com": spec.versions.v1: invalid JSON Schema: /required: expected array, but got string`,
				`legacy.json: ResourceDefinition "olds.example.com": spec.versions.v2: a JSON Schema is required`,
				`schemas.yaml: ResourceDefinition "things.example.com": spec.versions.v1.schema: invalid JSON Schema: /type: expected array, but got number; /type: value must be one of "array", "boolean", "integer", "null", "number", "object", "string"`,
				`schemas.yaml: ResourceDefinition "things.example.com": spec.versions.v2.schema: invalid JSON Schema: https://example.com/owner.json: external references are not allowed; $ref may only point inside the same schema ("#...")`,
				`schemas.yaml: ResourceDefinition "things.example.com": spec.versions.v3.schema: invalid JSON Schema: /pattern: '(?=lookahead)' is not valid 'regex'`,
				`schemas.yaml: ResourceDefinition "things.example.com": spec.versions.v4: unknown fields "properties", "type": with apiVersion cup.dev/v1alpha1 a version is {schema, schemaTarget, additionalPrinterColumns}; move the JSON Schema under schema`,
				`schemas.yaml: ResourceDefinition "things.example.com": spec.versions.v5.schemaTarget "whole" is not one of spec, resource`,
				`schemas.yaml: ResourceDefinition "things.example.com": spec.versions.v6.schema: a JSON Schema is required`,
				`schemas.yaml: ResourceDefinition "things.example.com": spec.versions.v7.schema: a JSON Schema must be an object or a boolean, got array`,
				`schemas.yaml: ResourceDefinition "things.example.com": spec.versions.v8.schema: invalid JSON Schema: #/$defs/missing not found`,
			},
		},
		{
			dir: "bindings",
			want: []string{
				`config.yaml (document 3): APIBinding "first": spec.resources[1]: flipt.io/v1/flags is already bound earlier in the same binding`,
				`config.yaml (document 4): APIBinding "second": spec.controller: unknown Controller "fliles"`,
				`config.yaml (document 4): APIBinding "second": spec.resources[0]: "flipt.io/flags" is not <group>/<version>/<plural>`,
				`config.yaml (document 4): APIBinding "second": spec.resources[1]: flipt.io/v1/flags is already bound by APIBinding "first" in config.yaml (document 3)`,
				`config.yaml (document 4): APIBinding "second": spec.resources[2]: ResourceDefinition "flags.flipt.io" has no version "v2" (it has v1)`,
				`config.yaml (document 4): APIBinding "second": spec.resources[3]: "Flipt.io/v1/flags": group "Flipt.io" is not a DNS subdomain`,
				`config.yaml (document 4): APIBinding "second": spec.resources[4]: no ResourceDefinition has group "flipt.io" and plural "flgs"`,
				`config.yaml (document 5): APIBinding "empty": spec.controller is required (the name of a Controller)`,
				`config.yaml (document 5): APIBinding "empty": spec.resources must list at least one resource as <group>/<version>/<plural>`,
			},
		},
		{
			dir: "fields",
			want: []string{
				`dupkeys.json: duplicate key "spec.spec.path"`,
				`dupkeys.json: duplicate key "spec.type"`,
				`typos.yaml (document 1): ResourceDefinition "flags.flipt.io": unknown field "metadata.namespace"`,
				`typos.yaml (document 1): ResourceDefinition "flags.flipt.io": unknown field "spec.names.plurals"`,
				`typos.yaml (document 1): ResourceDefinition "flags.flipt.io": unknown field "spec.names.shortnames" (did you mean "shortNames"?)`,
				`typos.yaml (document 1): ResourceDefinition "flags.flipt.io": unknown field "spec.version"`,
				`typos.yaml (document 2): APIBinding: metadata.name: expected string, got number`,
				`typos.yaml (document 2): APIBinding: spec.controller: expected string, got object`,
				`typos.yaml (document 2): APIBinding: spec.resources: expected array, got string`,
				`typos.yaml (document 3): Controller "files": metadata.labels.team: expected string, got array`,
				`typos.yaml (document 3): Controller "files": metadata.labels.tier: expected string, got number`,
				`typos.yaml (document 3): Controller "files": unknown field "specs"`,
			},
		},
		{
			dir: "syntax",
			want: []string{
				`bad.json: invalid JSON: invalid character '}' looking for beginning of object key string (line 4, column 32)`,
				`bad.yaml (document 2): invalid YAML: line 10: mapping values are not allowed in this context`,
				`bad.yaml (document 3): invalid YAML: unmarshal errors: line 14: key "kind" already set in map`,
				`empty.json: empty file; a JSON file holds a resource or an array of resources`,
				`scalars.json (document 2): expected a resource (an object), got string`,
				`scalars.json (document 3): expected a resource (an object), got number`,
				`trailing.json: invalid JSON: unexpected data after the JSON value (line 2, column 1)`,
			},
		},
		{
			dir: "controllers",
			want: []string{
				`controllers.yaml (document 1): Controller "lambda": spec.type "lambda" is not one of template, wasm`,
				`controllers.yaml (document 2): Controller "stringly": spec.spec: expected object, got string`,
				`controllers.yaml (document 3): Controller "untyped": spec.type is required (template or wasm)`,
				`controllers.yaml (document 4): Controller "two words": metadata.name "two words" must not contain spaces or control characters`,
			},
		},
		{
			// A binding referring to resources that failed to load reports
			// nothing more: the cause is reported already.
			dir: "cascade",
			want: []string{
				`config.yaml (document 1): ResourceDefinition "flags.flipt.io": spec.versions.v1.schema: invalid JSON Schema: /type: expected array, but got string; /type: value must be one of "array", "boolean", "integer", "null", "number", "object", "string"`,
				`config.yaml (document 2): Controller "files": spec.type "templat" is not one of template, wasm`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			t.Parallel()
			s, err := config.Load(os.DirFS("testdata/invalid/"+tt.dir), ".")
			if err == nil {
				t.Fatalf("Load succeeded, want an error; got\n%s", summary(s))
			}
			diffLines(t, problems(t, err), tt.want)
		})
	}
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()
	controller := func(name, typ string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("apiVersion: cup.dev/v1alpha1\nkind: Controller\nmetadata: {name: " + name + "}\nspec: {type: " + typ + "}\n")}
	}
	tests := []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{
			name: "one problem",
			fsys: fstest.MapFS{"a.yaml": controller("a", "lambda")},
			want: `invalid configuration: a.yaml: Controller "a": spec.type "lambda" is not one of template, wasm`,
		},
		{
			name: "problems sorted by file",
			fsys: fstest.MapFS{
				"b.yaml":     controller("b", "lambda"),
				"a.yaml":     controller("a", "lambda"),
				"sub/c.yaml": controller("c", ""),
			},
			want: `invalid configuration: 3 problems:
	a.yaml: Controller "a": spec.type "lambda" is not one of template, wasm
	b.yaml: Controller "b": spec.type "lambda" is not one of template, wasm
	sub/c.yaml: Controller "c": spec.type is required (template or wasm)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := config.Load(tt.fsys, ".")
			if err == nil || err.Error() != tt.want {
				t.Errorf("error:\n%v\nwant:\n%s", err, tt.want)
			}
		})
	}
}

const (
	flagsDef = `apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: flags.flipt.io}
spec:
  group: flipt.io
  names: {kind: Flag, singular: flag, plural: flags}
  versions: {v1: {schema: {type: object}}}
`
	filesController = `apiVersion: cup.dev/v1alpha1
kind: Controller
metadata: {name: files}
spec: {type: template}
`
	flagsBinding = `apiVersion: cup.dev/v1alpha1
kind: APIBinding
metadata: {name: flags}
spec: {controller: files, resources: [flipt.io/v1/flags]}
`
)

func TestLoadFS(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		dir     string
		want    string // summary, when Load succeeds
		wantErr string // error text, when it fails
		is      error  // errors.Is target, when it fails
	}{
		{
			name: "a .cup directory in a repository tree",
			fsys: fstest.MapFS{
				".cup/flags.yaml":        file(flagsDef + "---\n" + flagsBinding),
				".cup/controllers/a.yml": file(filesController),
				".cup/.old/broken.yaml":  file("{"),
				".cup/.#flags.yaml":      file("{"),
				"flags/default/a.yaml":   file("not: config"),
				"README.md":              file("hello"),
			},
			dir: ".cup",
			want: `definition flags.flipt.io group=flipt.io kind=Flag singular=flag plural=flags short=[] at .cup/flags.yaml (document 1): v1(spec)
controller files type=template spec= at .cup/controllers/a.yml
binding flags controller=files resources=[flipt.io/v1/flags] at .cup/flags.yaml (document 2)
`,
		},
		{
			name: "no configuration files",
			fsys: fstest.MapFS{"config/README.md": file("hello")},
			dir:  "config",
			want: "",
		},
		{
			name: "YAML documents: inline content after ---, CRLF, empty documents",
			fsys: fstest.MapFS{
				"all.yaml": file("# comment\r\n--- " + `{"apiVersion": "cup.dev/v1alpha1", "kind": "Controller", "metadata": {"name": "inline"}, "spec": {"type": "wasm"}}` +
					"\r\n---\r\n# nothing\r\n---\r\n" + strings.ReplaceAll(filesController, "\n", "\r\n") + "...\r\n"),
			},
			dir: ".",
			want: `controller files type=template spec= at all.yaml (document 3)
controller inline type=wasm spec= at all.yaml (document 1)
`,
		},
		{
			name: "a JSON array of one resource is a single document",
			fsys: fstest.MapFS{"c.json": file(`[{"apiVersion": "cup.dev/v1alpha1", "kind": "Controller", "metadata": {"name": "c"}, "spec": {"type": "wasm", "spec": null}}]`)},
			dir:  ".",
			want: "controller c type=wasm spec= at c.json\n",
		},
		{
			name:    "a YAML error's line counts from the top of the file",
			fsys:    fstest.MapFS{"c.yaml": file(filesController + "---\n" + strings.Replace(filesController, "files", "other", 1) + "---\nkind: [\n")},
			dir:     ".",
			wantErr: `invalid configuration: c.yaml (document 3): invalid YAML: line 11: did not find expected node content`,
			is:      config.ErrInvalid,
		},
		{
			name:    "missing directory",
			fsys:    fstest.MapFS{},
			dir:     ".cup",
			wantErr: "config: reading .cup: open .cup: file does not exist",
			is:      fs.ErrNotExist,
		},
		{
			name:    "invalid directory",
			fsys:    fstest.MapFS{},
			dir:     "../etc",
			wantErr: `config: invalid directory "../etc": want a slash-separated path relative to the file system's root`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := config.Load(tt.fsys, tt.dir)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %s", err, tt.wantErr)
				}
				if tt.is != nil && !errors.Is(err, tt.is) {
					t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := summary(s); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestParseAndMerge(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	// The server's configuration directory holds the controllers; the
	// repository's .cup/ holds definitions and bindings.
	server := fstest.MapFS{"controllers.yaml": file(filesController)}
	repo := fstest.MapFS{".cup/flags.yaml": file(flagsDef + "---\n" + flagsBinding)}

	base, err := config.Parse(server, ".")
	if err != nil {
		t.Fatalf("Parse(server): %v", err)
	}
	// On its own, the repository's configuration is incomplete...
	_, err = config.Load(repo, ".cup")
	diffLines(t, problems(t, err), []string{`.cup/flags.yaml (document 2): APIBinding "flags": spec.controller: unknown Controller "files"`})
	// ...but it parses.
	part, err := config.Parse(repo, ".cup")
	if err != nil {
		t.Fatalf("Parse(repo): %v", err)
	}

	tests := []struct {
		name  string
		a, b  *config.Set
		want  string
		wantP []string
	}{
		{
			name: "complementary sets",
			a:    base,
			b:    part,
			want: `definition flags.flipt.io group=flipt.io kind=Flag singular=flag plural=flags short=[] at .cup/flags.yaml (document 1): v1(spec)
controller files type=template spec= at controllers.yaml
binding flags controller=files resources=[flipt.io/v1/flags] at .cup/flags.yaml (document 2)
`,
		},
		{
			name: "nil other",
			a:    base,
			want: "controller files type=template spec= at controllers.yaml\n",
		},
		{
			name: "incomplete union",
			a:    part,
			b:    &config.Set{},
			wantP: []string{
				`.cup/flags.yaml (document 2): APIBinding "flags": spec.controller: unknown Controller "files"`,
			},
		},
		{
			name: "a name in both",
			a:    mustParse(t, fstest.MapFS{"a.yaml": file(filesController + "---\n" + flagsDef + "---\n" + flagsBinding)}),
			b:    mustParse(t, fstest.MapFS{"b/c.yaml": file(filesController + "---\n" + flagsDef + "---\n" + flagsBinding)}),
			wantP: []string{
				`b/c.yaml (document 1): Controller "files": duplicate name, also defined in a.yaml (document 1)`,
				`b/c.yaml (document 2): ResourceDefinition "flags.flipt.io": duplicate name, also defined in a.yaml (document 2)`,
				`b/c.yaml (document 3): APIBinding "flags": duplicate name, also defined in a.yaml (document 3)`,
				`b/c.yaml (document 3): APIBinding "flags": spec.resources[0]: flipt.io/v1/flags is already bound by APIBinding "flags" in a.yaml (document 3)`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := summary(tt.a)
			s, err := tt.a.Merge(tt.b)
			if summary(tt.a) != before {
				t.Errorf("Merge modified its receiver")
			}
			if tt.wantP != nil {
				diffLines(t, problems(t, err), tt.wantP)
				return
			}
			if err != nil {
				t.Fatalf("Merge: %v", err)
			}
			if got := summary(s); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func mustParse(t *testing.T, fsys fs.FS) *config.Set {
	t.Helper()
	s, err := config.Parse(fsys, ".")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

func TestSetLookups(t *testing.T) {
	t.Parallel()
	s, err := config.Load(os.DirFS("testdata/yaml"), ".")
	if err != nil {
		t.Fatal(err)
	}
	ref := controller.Type{Group: "flags.cup.dev", Version: "v1beta1", Plural: "flags"}
	tests := []struct {
		name string
		got  func() (string, bool)
		want string
		ok   bool
	}{
		{"definition", func() (string, bool) { d, ok := s.Definition("flags.cup.dev", "segments"); return name(d), ok }, "segments.flags.cup.dev", true},
		{"definition missing", func() (string, bool) { d, ok := s.Definition("flipt.io", "segments"); return name(d), ok }, "", false},
		{"controller", func() (string, bool) { c, ok := s.Controller("segments"); return name(c), ok }, "segments", true},
		{"controller missing", func() (string, bool) { c, ok := s.Controller("x"); return name(c), ok }, "", false},
		{"binding", func() (string, bool) { b, ok := s.BindingFor(ref); return name(b), ok }, "flags", true},
		{"binding missing", func() (string, bool) {
			b, ok := s.BindingFor(controller.Type{Group: "flags.cup.dev", Version: "v1beta1", Plural: "segments"})
			return name(b), ok
		}, "", false},
		{"version", func() (string, bool) {
			d, _ := s.Definition("flags.cup.dev", "flags")
			v, ok := d.Version("v1beta1")
			return name(v), ok
		}, "v1beta1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := tt.got()
			if got != tt.want || ok != tt.ok {
				t.Errorf("got %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// name returns the Name of a resource, or "" for a nil one.
func name(v any) string {
	switch v := v.(type) {
	case *config.Definition:
		if v != nil {
			return v.Name
		}
	case *config.Controller:
		if v != nil {
			return v.Name
		}
	case *config.Binding:
		if v != nil {
			return v.Name
		}
	case *config.Version:
		if v != nil {
			return v.Name
		}
	}
	return ""
}

// TestLoadSkipsOtherFiles checks that files which are not configuration (no
// document with cup's apiVersion or, without an apiVersion, a configuration
// kind) are skipped and listed, rather than failing the load.
func TestLoadSkipsOtherFiles(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	fsys := fstest.MapFS{
		"config/controllers.yml":     file(filesController),
		"config/docker-compose.yml":  file("services:\n  cupd:\n    image: cup\n"),
		"config/deployment.yaml":     file("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: cupd}\n"),
		"config/features.yml":        file("namespace: default\nflags:\n- key: new-login\n  enabled: true\n"),
		"config/list.yaml":           file("- one\n- two\n"),
		"config/package.json":        file(`{"name": "ui", "version": "1.0.0"}`),
		"config/mixed.yaml":          file("services: {}\n---\n" + strings.Replace(filesController, "files", "other", 1)),
		"config/legacy-binding.json": file(`{"apiVersion": "cup.flipt.io/v1alpha1", "kind": "Binding", "metadata": {"name": "b"}, "spec": {"controller": "files", "resources": ["flipt.io/v1/flags"]}}`),
	}
	s, err := config.Parse(fsys, "config")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []string{"config/deployment.yaml", "config/docker-compose.yml", "config/features.yml", "config/list.yaml", "config/package.json"}
	if !slices.Equal(s.Skipped, want) {
		t.Errorf("Skipped = %q, want %q", s.Skipped, want)
	}
	if len(s.Controllers) != 2 || len(s.Bindings) != 1 {
		t.Errorf("loaded %s", summary(s))
	}
	// A configuration document with a mistake is still a problem.
	_, err = config.Parse(fstest.MapFS{"c.yaml": file("kind: Controller\nmetadata: {name: d}\n")}, ".")
	if err == nil || !strings.Contains(err.Error(), "apiVersion is required") {
		t.Errorf("Parse of a Controller without apiVersion = %v", err)
	}
}
