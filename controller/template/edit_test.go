package template_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aymanbagabas/go-udiff"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/template"
)

// setSpec sets the spec field at path (keys, or indexes in arrays, as
// strings) to v, or removes it for a nil v. The spec is re-encoded with its
// keys sorted, so every edit also reorders the request's spec.
func setSpec(t *testing.T, r *controller.Resource, v any, path ...string) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(r.Spec))
	dec.UseNumber()
	var spec any
	if err := dec.Decode(&spec); err != nil {
		t.Fatalf("decoding spec: %v", err)
	}
	cur := spec
	for i, k := range path {
		last := i == len(path)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if v == nil {
					delete(c, k)
				} else {
					c[k] = v
				}
			}
			cur = c[k]
		case []any:
			var n int
			if err := json.Unmarshal([]byte(k), &n); err != nil {
				t.Fatalf("index %q: %v", k, err)
			}
			if last {
				c[n] = v
			}
			cur = c[n]
		default:
			t.Fatalf("no %v in spec", path[:i+1])
		}
	}
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	r.Spec = data
}

// jsonValue decodes s, keeping numbers exact.
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
	return v
}

// TestPutEditsInPlace edits hand-written files through Put, one change at a
// time, and compares the files and their diffs with golden files in
// testdata/edit. Run go test -update to rewrite them.
func TestPutEditsInPlace(t *testing.T) {
	t.Parallel()
	jsonSpec := template.Spec{
		ListTemplate:     `{{ .Namespace }}/*.json`,
		ResourceTemplate: `{{ .Namespace }}/{{ .Name }}.json`,
	}
	yamlSpec := template.Spec{
		ListTemplate:     `{{ .Namespace }}/*.yaml`,
		ResourceTemplate: `{{ .Namespace }}/{{ .Name }}.yaml`,
	}
	tests := []struct {
		name  string
		input string // in testdata/edit
		edit  func(t *testing.T, r *controller.Resource)
	}{
		{"nested-value", "flag.yaml", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, "DE", "rollout", "match", "country")
		}},
		{"scalar-keeps-comment", "flag.yaml", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, true, "enabled")
		}},
		{"add-label", "flag.yaml", func(t *testing.T, r *controller.Resource) {
			r.Metadata.Labels["stage"] = "beta"
		}},
		{"remove-annotation", "flag.yaml", func(t *testing.T, r *controller.Resource) {
			delete(r.Metadata.Annotations, "cup.dev/deprecated")
		}},
		{"remove-commented-annotation", "flag.yaml", func(t *testing.T, r *controller.Resource) {
			delete(r.Metadata.Annotations, "cup.dev/owner")
		}},
		{"list-element", "flag.yaml", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, json.Number("30"), "variants", "1", "weight")
		}},
		{"flow-list", "flag.yaml", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, []any{"beta", "internal", "staff"}, "rollout", "segments")
		}},
		{"list-grows", "flag.yaml", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, jsonValue(t, `[{"key": "on", "weight": 50}, {"key": "off", "weight": 25}, {"key": "beta", "weight": 25}]`), "variants")
		}},
		{"spec-key-order", "flag.yaml", func(t *testing.T, r *controller.Resource) {
			// The request lists spec keys in reverse; the file keeps its order.
			r.Spec = json.RawMessage(`{
				"folded": "A folded paragraph.\n",
				"yes": "yes",
				"override": {"timeout": "30s"},
				"defaults": {"timeout": "30s"},
				"rollout": {"big": 1, "fallback": null, "match": {"country": "NL"}, "segments": ["beta", "internal"]},
				"variants": [{"weight": 75.5, "key": "on"}, {"weight": 24.5, "key": "off"}],
				"description": "Roll out the new login page.\nSecond line with \"quotes\".\n",
				"enabled": true
			}`)
		}},
		{"exact-numbers", "flag.yaml", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, json.Number("9007199254740993"), "rollout", "big")
			setSpec(t, r, json.Number("12345678901234567890"), "huge")
		}},
		{"new-nested-key", "flag.yaml", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, jsonValue(t, `{"start": "2026-01-01", "days": ["mon", "tue"], "note": "on\nhold", "empty": {}}`), "schedule")
		}},
		{"block-scalar", "flag.yaml", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, "Roll out the new login page.\nThird line.\n", "description")
		}},
		{"alias", "flag.yaml", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, jsonValue(t, `{"timeout": "60s"}`), "override")
		}},
		{"remove-spec-key", "flag.yaml", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, nil, "variants")
		}},
		{"yaml-1.1-strings", "flag.yaml", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, "no", "yes")
			setSpec(t, r, "on", "rollout", "fallback")
		}},
		{"json-value", "flag.json", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, true, "enabled")
		}},
		{"json-add-remove", "flag.json", func(t *testing.T, r *controller.Resource) {
			r.Metadata.Labels["stage"] = "beta"
			delete(r.Metadata.Annotations, "cup.dev/deprecated")
			setSpec(t, r, json.Number("12345678901234567890"), "huge")
		}},
		{"json-tabs", "tabs.json", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, "DE", "country")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec, ext := yamlSpec, filepath.Ext(tt.input)
			if ext == ".json" {
				spec = jsonSpec
			}
			input, err := os.ReadFile(filepath.Join("testdata", "edit", tt.input))
			if err != nil {
				t.Fatal(err)
			}
			p := "default/new-login" + ext
			mem := newMemFS(t, map[string]string{p: string(input)})
			c := newController(t, spec)
			get := func() *controller.Resource {
				t.Helper()
				r, err := c.Get(t.Context(), &controller.GetRequest{FS: mem, Type: flagType, Namespace: "default", Name: "new-login"})
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
				return r
			}
			r := get()
			tt.edit(t, r)
			put(t, c, mem, r)
			got := mem.Files()[p]
			diff := udiff.Unified(tt.input, tt.name+ext, string(input), string(got))

			golden := filepath.Join("testdata", "edit", tt.name+ext)
			if *update {
				for name, data := range map[string]string{golden: string(got), golden + ".diff": diff} {
					if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Put wrote\n%s\nwant (%s)\n%s\ndiff from the input:\n%s", got, golden, want, diff)
			}
			if wantDiff, err := os.ReadFile(golden + ".diff"); err != nil || string(wantDiff) != diff {
				t.Errorf("diff from the input:\n%s\nwant (%s.diff)\n%s", diff, golden, wantDiff)
			}

			// The file reads back as the resource written, and writing it
			// again changes no byte.
			back := get()
			if !sameResource(t, back, r) {
				t.Errorf("Get after Put = %+v %s, want %+v %s", back.Metadata, back.Spec, r.Metadata, r.Spec)
			}
			put(t, c, mem, back)
			if again := mem.Files()[p]; !bytes.Equal(again, got) {
				t.Errorf("writing the resource again changed the file:\n%s", udiff.Unified("first", "second", string(got), string(again)))
			}
		})
	}
}

// sameResource reports whether a and b are equal, specs compared as JSON
// values with exact numbers.
func sameResource(t *testing.T, a, b *controller.Resource) bool {
	t.Helper()
	sa, _ := json.Marshal(jsonValue(t, string(a.Spec)))
	sb, _ := json.Marshal(jsonValue(t, string(b.Spec)))
	return equalMeta(a, b) && bytes.Equal(sa, sb)
}

// TestPutEditsOddFiles edits YAML files whose layout the in-place edit must
// cope with, or give up on for the full encoding: either way the file must
// read back as the resource written, and writing it again must change no
// byte. Each file holds a "# keep" comment, which survives an edit in place
// only.
func TestPutEditsOddFiles(t *testing.T) {
	t.Parallel()
	const head = "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata:\n  name: new-login\n"
	tests := []struct {
		name    string
		file    string
		edit    func(t *testing.T, r *controller.Resource)
		inPlace bool
	}{
		{"no namespace, no newline at the end", head + "spec:\n  a: 1 # keep", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, "x", "b")
		}, true},
		{"document markers", "%YAML 1.1\n---\n" + head + "spec: # keep\n  a: 1\n...\n", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, "x", "b")
		}, true},
		{"CRLF", strings.ReplaceAll(head+"spec:\n  a: 1 # keep\n  b: 2\n", "\n", "\r\n"), func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, json.Number("3"), "a")
		}, true},
		{"CRLF, new keys", strings.ReplaceAll(head+"spec:\n  a: 1 # keep\n", "\n", "\r\n"), func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, jsonValue(t, `{"c": [1, 2], "d": "x\ny"}`), "b")
		}, true},
		{"indented text in a four-space file", head + "spec:\n    a:\n        b: 1 # keep\n", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, "  two spaces\nthen none\n", "a", "b")
			setSpec(t, r, []any{"  in a list\nof lines"}, "c")
		}, true},
		{"remove the last key, with its foot comment", head + "spec:\n  a: 1 # keep\n  b:\n    c: 2\n    # about b\n", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, nil, "b")
			setSpec(t, r, "x", "d")
		}, true},
		{"unicode before a value", head + "spec:\n  ünïcödé: 1 # keep\n", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, "é", "ünïcödé")
		}, true},
		{"multi-line plain scalar", head + "spec:\n  a: one\n    two # keep\n  b: 1\n", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, "three", "a")
		}, true},
		{"sequence of sequences", head + "spec: # keep\n  a:\n  - - 1\n    - 2\n  - - 3\n", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, json.Number("4"), "a", "1", "0")
		}, true},
		{"tagged scalar", head + "spec: # keep\n  a: !!str 1\n", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, "2", "a")
		}, true},
		{"empty spec", head + "spec: {} # keep\n", func(t *testing.T, r *controller.Resource) {
			r.Spec = json.RawMessage(`{"a": {"b": [1, "x, y"]}}`)
		}, true},
		{"remove all labels", head + "  labels:\n    a: b\n    c: d\nspec: # keep\n  a: 1\n", func(t *testing.T, r *controller.Resource) {
			r.Metadata.Labels = nil
		}, true},
		{"edit beside a merge key", head + "spec:\n  base: &base {a: 1}\n  m:\n    <<: *base\n    b: 2\n  c: 3 # keep\n", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, json.Number("4"), "c")
		}, true},
		{"edit under a merge key", head + "spec:\n  base: &base {a: 1}\n  m:\n    <<: *base\n    b: 2 # keep\n", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, json.Number("4"), "m", "b")
		}, false},
		{"anchored value changed under its alias", head + "spec:\n  a: &x 1 # keep\n  b: *x\n", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, json.Number("2"), "a")
		}, false},
		{"keys YAML 1.1 reads as a boolean or number", head + "spec:\n  yes: 1 # keep\n  0x10: a\n  \"yes\": 3\n", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, json.Number("2"), "true")
			setSpec(t, r, "b", "16")
		}, true},
		{"flow mapping at the top", "{apiVersion: flags.cup.dev/v1alpha1, kind: Flag, metadata: {name: new-login}, spec: {a: 1}} # keep\n", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, json.Number("2"), "a")
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			const p = "default/new-login.yaml"
			mem := newMemFS(t, map[string]string{p: tt.file})
			c := newController(t, template.Spec{ListTemplate: `{{ .Namespace }}/*.yaml`, ResourceTemplate: `{{ .Namespace }}/{{ .Name }}.yaml`})
			get := func() *controller.Resource {
				t.Helper()
				r, err := c.Get(t.Context(), &controller.GetRequest{FS: mem, Type: flagType, Namespace: "default", Name: "new-login"})
				if err != nil {
					t.Fatalf("Get: %v\n%s", err, mem.Files()[p])
				}
				return r
			}
			r := get()
			tt.edit(t, r)
			put(t, c, mem, r)
			got := mem.Files()[p]
			if back := get(); !sameResource(t, back, r) {
				t.Errorf("Get after Put = %+v %s, want %+v %s", back.Metadata, back.Spec, r.Metadata, r.Spec)
			}
			if strings.Contains(tt.file, "\r\n") && bytes.Contains(bytes.ReplaceAll(got, []byte("\r\n"), nil), []byte("\n")) {
				t.Errorf("a file with CRLF line breaks got LF ones:\n%q", got)
			}
			if bytes.Contains(got, []byte("# about b")) {
				t.Errorf("the comment of a removed key stayed:\n%s", got)
			}
			if kept := bytes.Contains(got, []byte("# keep")); kept != tt.inPlace {
				t.Errorf("edited in place = %v, want %v:\n%s", kept, tt.inPlace, got)
			}
			put(t, c, mem, get())
			if again := mem.Files()[p]; !bytes.Equal(again, got) {
				t.Errorf("writing the resource again changed the file:\n%s", udiff.Unified("first", "second", string(got), string(again)))
			}
		})
	}
}

// TestPutEditsConverge edits a YAML file that cup wrote: the edit in place
// gives the bytes a fresh encoding of the resource would, so files cup
// writes look the same however they came about.
func TestPutEditsConverge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(t *testing.T, r *controller.Resource)
	}{
		{"add label", func(t *testing.T, r *controller.Resource) { r.Metadata.Labels["stage"] = "beta" }},
		{"add first label", func(t *testing.T, r *controller.Resource) { r.Metadata.Labels["a"] = "b" }},
		{"remove annotation", func(t *testing.T, r *controller.Resource) { delete(r.Metadata.Annotations, "note") }},
		{"nested value", func(t *testing.T, r *controller.Resource) { setSpec(t, r, "DE", "rollout", "match", "country") }},
		{"list element", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, json.Number("30"), "variants", "1", "weight")
		}},
		{"list grows", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, []any{"beta", "internal", "staff"}, "rollout", "segments")
		}},
		{"new spec keys", func(t *testing.T, r *controller.Resource) {
			setSpec(t, r, jsonValue(t, `{"z": 1, "a": ["x"]}`), "kappa")
			setSpec(t, r, json.Number("9007199254740993"), "zzz")
		}},
		{"multi-line string", func(t *testing.T, r *controller.Resource) { setSpec(t, r, "one\ntwo", "description") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			const p = "default/flags.cup.dev-v1alpha1-Flag-new-login.yaml"
			mem := newMemFS(t, nil)
			c := newController(t, yamlSpec)
			put(t, c, mem, goldenResource())
			r, err := c.Get(t.Context(), &controller.GetRequest{FS: mem, Type: flagType, Namespace: "default", Name: "new-login"})
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(t, r)
			// Not by falling back to the fresh encoding: the edit itself.
			got, err := template.PatchYAML(mem.Files()[p], r)
			if err != nil {
				t.Fatalf("PatchYAML: %v", err)
			}
			fresh := newMemFS(t, nil)
			put(t, c, fresh, r)
			if want := fresh.Files()[p]; !bytes.Equal(got, want) {
				t.Errorf("edit in place differs from a fresh encoding:\n%s", udiff.Unified("fresh", "edited", string(want), string(got)))
			}
		})
	}
}
