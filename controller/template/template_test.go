package template_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/controllertest"
	"github.com/cup-dev/cup/controller/template"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec template.Spec
		opts []template.Option
	}{
		{name: "JSON defaults"},
		{name: "YAML", spec: template.Spec{
			ListTemplate:     `{{ .Namespace }}/*.yaml`,
			ResourceTemplate: `{{ .Namespace }}/{{ .Group }}-{{ .Version }}-{{ .Kind }}-{{ .Name }}.yaml`,
		}},
		{name: "YAML per type directory", spec: template.Spec{
			ListTemplate:     `{{ .Group }}/{{ .Version }}/{{ .Plural }}/{{ .Namespace }}/*.yml`,
			ResourceTemplate: `{{ .Group }}/{{ .Version }}/{{ .Plural }}/{{ .Namespace }}/{{ .Name }}.yml`,
		}},
		{name: "JSON sharded", spec: template.Spec{
			ListTemplate:     `{{ .Group }}/{{ .Plural }}/{{ .Namespace }}/*/*.json`,
			ResourceTemplate: `{{ .Group }}/{{ .Plural }}/{{ .Namespace }}/{{ shard .Name }}/{{ .Name }}.json`,
		}},
		{name: "JSON without cache", opts: []template.Option{template.WithCacheSize(0)}},
		{name: "JSON tiny cache", opts: []template.Option{template.WithCacheSize(3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			controllertest.Run(t, func(t *testing.T) controller.Controller {
				c, err := template.New(tt.spec, tt.opts...)
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return c
			})
		})
	}
}

func TestParseSpec(t *testing.T) {
	t.Parallel()
	const (
		list = `{{ .Namespace }}/*.yaml`
		res  = `{{ .Namespace }}/{{ .Name }}.yaml`
	)
	tests := []struct {
		name    string
		raw     string
		want    template.Spec
		wantErr string
	}{
		{name: "empty", raw: ``},
		{name: "null", raw: `null`},
		{name: "empty object", raw: ` {} `},
		{name: "original Cup names", raw: `{"directory_template": "` + list + `", "path_template": "` + res + `"}`,
			want: template.Spec{ListTemplate: list, ResourceTemplate: res}},
		{name: "names", raw: `{"list_template": "` + list + `", "resource_template": "` + res + `", "encoding": "yaml"}`,
			want: template.Spec{ListTemplate: list, ResourceTemplate: res, Encoding: template.EncodingYAML}},
		{name: "name and alias agreeing", raw: `{"list_template": "a", "directory_template": "a"}`,
			want: template.Spec{ListTemplate: "a"}},
		{name: "null field", raw: `{"encoding": null}`},
		{name: "conflicting aliases", raw: `{"list_template": "a", "directory_template": "b"}`, wantErr: `"list_template" and its alias "directory_template" conflict`},
		{name: "conflicting resource aliases", raw: `{"path_template": "a", "resource_template": "b"}`, wantErr: `conflict`},
		{name: "duplicate field", raw: `{"encoding": "json", "encoding": "yaml"}`, wantErr: `given twice`},
		{name: "unknown field", raw: `{"namespace_template": "x"}`, wantErr: `unknown field "namespace_template"`},
		{name: "field names are exact", raw: `{"List_Template": "x"}`, wantErr: `unknown field "List_Template"`},
		{name: "not a string", raw: `{"encoding": 1}`, wantErr: `want a string`},
		{name: "unknown encoding", raw: `{"encoding": "toml"}`, wantErr: `unknown encoding "toml"`},
		{name: "not an object", raw: `["x"]`, wantErr: `want a JSON object`},
		{name: "trailing data", raw: `{} {}`, wantErr: `unexpected data`},
		{name: "truncated", raw: `{"encoding": "json"`, wantErr: `template spec`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := template.ParseSpec(json.RawMessage(tt.raw))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSpec(%s) = %+v, %v; want an error containing %q", tt.raw, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSpec(%s): %v", tt.raw, err)
			}
			if got != tt.want {
				t.Errorf("ParseSpec(%s) = %+v, want %+v", tt.raw, got, tt.want)
			}
		})
	}
}

// TestOriginalCupConfig loads a Controller resource written for the original
// Cup, as its documentation shows it, and checks that the controller stores
// resources where the original did.
func TestOriginalCupConfig(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("testdata", "original-cup-controller.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Type string        `json:"type"`
			Spec template.Spec `json:"spec"` // decodes through Spec.UnmarshalJSON
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("decoding the original configuration: %v", err)
	}
	want := template.Spec{ListTemplate: `{{ .Namespace }}/*.json`, ResourceTemplate: template.DefaultResourceTemplate}
	if cfg.Spec.Type != "template" || cfg.Spec.Spec != want {
		t.Fatalf("decoded %+v, want type template and spec %+v", cfg.Spec, want)
	}
	c, err := template.New(cfg.Spec.Spec)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	mem := newMemFS(t, nil)
	put(t, c, mem, newFlag("default", "new-login", `{"enabled":true}`))
	if _, ok := mem.Files()["default/flags.cup.dev-v1alpha1-Flag-new-login.json"]; !ok {
		t.Errorf("files = %v, want default/flags.cup.dev-v1alpha1-Flag-new-login.json as the original Cup wrote it", keys(mem.Files()))
	}
	// The zero Spec means the same.
	zero, err := template.New(template.Spec{})
	if err != nil {
		t.Fatalf("New with the zero Spec: %v", err)
	}
	if _, err := zero.Get(t.Context(), &controller.GetRequest{FS: mem, Type: flagType, Namespace: "default", Name: "new-login"}); err != nil {
		t.Errorf("Get with the zero Spec: %v", err)
	}
	// The default list pattern reads only this type's files, not every
	// JSON file of the namespace directory, as the original's did.
	mem.WriteFile("default/package.json", []byte(`{"name": "not a resource"}`), 0o644)
	mem.WriteFile("default/other.cup.dev-v1-Thing-x.json", []byte(`{"apiVersion": "other.cup.dev/v1", "kind": "Thing", "metadata": {"name": "x"}}`), 0o644)
	got, err := zero.List(t.Context(), &controller.ListRequest{FS: mem, Type: flagType, Namespace: "default"})
	if err != nil || len(got) != 1 || got[0].Metadata.Name != "new-login" {
		t.Errorf("List with the zero Spec = %v, %v, want new-login alone", got, err)
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	const okRes = `{{ .Namespace }}/{{ .Name }}.json`
	const okList = `{{ .Namespace }}/*.json`
	tests := []struct {
		name    string
		spec    template.Spec
		opts    []template.Option
		wantErr string
	}{
		{"parse error", template.Spec{ResourceTemplate: `{{ .Namespace }}/{{ .Name`}, nil, "resource_template"},
		{"resource without name", template.Spec{ResourceTemplate: `{{ .Namespace }}/x.json`}, nil, "must use .Name"},
		{"resource without namespace", template.Spec{ListTemplate: `*.json`, ResourceTemplate: `{{ .Name }}.json`}, nil, "must use .Namespace"},
		{"list without namespace", template.Spec{ListTemplate: `*/*.json`, ResourceTemplate: okRes}, nil, "list_template \"*/*.json\": must use .Namespace"},
		{"list with name", template.Spec{ListTemplate: `{{ .Namespace }}/{{ .Name }}.json`, ResourceTemplate: okRes}, nil, "must not use .Name"},
		{"name only in dead branch", template.Spec{ResourceTemplate: `{{ .Namespace }}/x{{ if false }}{{ .Name }}{{ end }}.json`}, nil, "renders \"default/x.json\" for both"},
		{"namespace without effect", template.Spec{ListTemplate: `{{ with .Namespace }}{{ end }}ns/*.json`, ResourceTemplate: `{{ with .Namespace }}{{ end }}ns/{{ .Name }}.json`}, nil, "for both"},
		{"range", template.Spec{ResourceTemplate: `{{ .Namespace }}/{{ range 1000000000 }}x{{ end }}{{ .Name }}.json`}, nil, "range is not allowed"},
		{"define", template.Spec{ResourceTemplate: `{{ define "x" }}{{ template "x" . }}{{ end }}{{ .Namespace }}/{{ .Name }}.json`}, nil, "define and block are not allowed"},
		{"block", template.Spec{ResourceTemplate: `{{ .Namespace }}/{{ block "b" . }}{{ .Name }}{{ end }}.json`}, nil, "define and block are not allowed"},
		{"unknown field", template.Spec{ResourceTemplate: `{{ .Namespace }}/{{ .Name }}-{{ .Owner }}.json`}, nil, "can't evaluate field Owner"},
		{"unknown function", template.Spec{ResourceTemplate: `{{ .Namespace }}/{{ exec .Name }}.json`}, nil, `function "exec" not defined`},
		{"absolute", template.Spec{ListTemplate: `/{{ .Namespace }}/*.json`, ResourceTemplate: `/` + okRes}, nil, "absolute path"},
		{"parent", template.Spec{ListTemplate: `../{{ .Namespace }}/*.json`, ResourceTemplate: `../` + okRes}, nil, `path element ".."`},
		{"empty element", template.Spec{ResourceTemplate: `{{ .Namespace }}//{{ .Name }}.json`}, nil, "empty path element"},
		{"dot element", template.Spec{ResourceTemplate: `{{ .Namespace }}/./{{ .Name }}.json`}, nil, `path element "."`},
		{"trailing slash", template.Spec{ResourceTemplate: `{{ .Namespace }}/{{ .Name }}/`}, nil, "empty path element"},
		{"git directory", template.Spec{ListTemplate: `.git/{{ .Namespace }}/*.json`, ResourceTemplate: `.git/` + okRes}, nil, "inside .git"},
		{"NUL", template.Spec{ResourceTemplate: "{{ .Namespace }}/{{ .Name }}\x00.json"}, nil, "NUL"},
		{"huge output", template.Spec{ResourceTemplate: `{{ .Namespace }}/{{ printf "%0999999d" 1 }}{{ .Name }}.json`}, nil, "longer than"},
		{"bad glob", template.Spec{ListTemplate: `{{ .Namespace }}/[.json`, ResourceTemplate: okRes}, nil, "syntax error in pattern"},
		{"list misses resources", template.Spec{ResourceTemplate: `{{ .Namespace }}/{{ .Name }}.yaml`}, nil, "List would not find what Put writes"},
		{"list crosses namespaces", template.Spec{ListTemplate: `{{ .Namespace | printf "%.0s" }}*/*.json`, ResourceTemplate: okRes}, nil, "namespaces would not be isolated"},
		{"unknown encoding", template.Spec{Encoding: "xml"}, nil, `unknown encoding "xml"`},
		{"negative cache", template.Spec{ListTemplate: okList, ResourceTemplate: okRes}, []template.Option{template.WithCacheSize(-1)}, "cache size -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := template.New(tt.spec, tt.opts...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New(%+v) = %v, %v; want an error containing %q", tt.spec, c, err, tt.wantErr)
			}
		})
	}
}

func TestNewAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		spec     template.Spec
		want     string // path of default/new-login
		wantYAML bool
	}{
		{"defaults", template.Spec{}, "default/flags.cup.dev-v1alpha1-Flag-new-login.json", false},
		{"functions", template.Spec{
			ListTemplate:     `{{ .Namespace }}/{{ replace .Group "." "_" }}/{{ .Plural }}/*.json`,
			ResourceTemplate: `{{ .Namespace }}/{{ replace .Group "." "_" }}/{{ .Plural }}/{{ .Kind | lower }}-{{ upper .Name }}.json`,
		}, "default/flags_cup_dev/flags/flag-NEW-LOGIN.json", false},
		{"root variable and with", template.Spec{
			ListTemplate:     `{{ with $.Namespace }}{{ . }}{{ end }}/*.json`,
			ResourceTemplate: `{{ with .Namespace }}{{ . }}/{{ $.Name }}{{ end }}.json`,
		}, "default/new-login.json", false},
		{"yaml from extension", template.Spec{
			ListTemplate:     `{{ .Namespace }}/*.yaml`,
			ResourceTemplate: `{{ .Namespace }}/{{ .Name }}.yaml`,
		}, "default/new-login.yaml", true},
		{"yml from extension", template.Spec{
			ListTemplate:     `{{ .Namespace }}/*.yml`,
			ResourceTemplate: `{{ .Namespace }}/{{ .Name }}.yml`,
		}, "default/new-login.yml", true},
		{"explicit encoding wins", template.Spec{
			ListTemplate:     `{{ .Namespace }}/*.txt`,
			ResourceTemplate: `{{ .Namespace }}/{{ .Name }}.txt`,
			Encoding:         template.EncodingYAML,
		}, "default/new-login.txt", true},
		{"explicit json", template.Spec{
			ListTemplate:     `{{ .Namespace }}/*.yaml`,
			ResourceTemplate: `{{ .Namespace }}/{{ .Name }}.yaml`,
			Encoding:         template.EncodingJSON,
		}, "default/new-login.yaml", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := template.New(tt.spec)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			mem := newMemFS(t, nil)
			put(t, c, mem, newFlag("default", "new-login", `{"enabled":true}`))
			files := mem.Files()
			data, ok := files[tt.want]
			if !ok || len(files) != 1 {
				t.Fatalf("files = %v, want [%s]", keys(files), tt.want)
			}
			if isYAML := strings.HasPrefix(string(data), "apiVersion: "); isYAML != tt.wantYAML {
				t.Errorf("file content %q: YAML = %v, want %v", data, isYAML, tt.wantYAML)
			}
			list, err := c.List(t.Context(), &controller.ListRequest{FS: mem, Type: flagType, Namespace: "default"})
			if err != nil || len(list) != 1 {
				t.Errorf("List = %v, %v; want the resource", list, err)
			}
		})
	}
}
