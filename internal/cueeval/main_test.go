package cueeval_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
	"sigs.k8s.io/yaml"

	"github.com/cup-dev/cup/internal/cueeval"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// envCrash makes a worker started by the tests panic before it evaluates,
// for TestWorkerCrash.
const envCrash = "CUEEVAL_TEST_CRASH"

func TestMain(m *testing.M) {
	if os.Getenv(envCrash) != "" && os.Getenv("CUP_CUEEVAL_WORKER") != "" {
		panic("a worker crashing on purpose")
	}
	cueeval.Worker()
	goleak.VerifyTestMain(m)
}

// golden compares got with testdata/name, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", p, got, want)
	}
}

// layer reads the ConfigLayer at path in testdata/repo as the reconciler
// does: the resource's YAML turned into JSON by sigs.k8s.io/yaml, and the
// file itself for positions.
func layer(t testing.TB, path string) cueeval.Layer {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "repo", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return parseLayer(t, path, data)
}

// parseLayer reads the ConfigLayer in data, the file at path.
func parseLayer(t testing.TB, path string, data []byte) cueeval.Layer {
	t.Helper()
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var r struct {
		Kind     string
		Metadata struct{ Name, Namespace string }
		Spec     struct {
			Values json.RawMessage
			CUE    *string
		}
	}
	if err := json.Unmarshal(j, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	l := cueeval.Layer{Ref: r.Kind + " " + r.Metadata.Namespace + "/" + r.Metadata.Name, Path: path, File: data}
	if r.Spec.CUE != nil {
		l.Field, l.CUE = "spec.cue", *r.Spec.CUE
	} else {
		l.Field, l.Values = "spec.values", r.Spec.Values
	}
	return l
}

// layers reads the ConfigLayers at paths.
func layers(t testing.TB, paths ...string) []cueeval.Layer {
	t.Helper()
	out := make([]cueeval.Layer, len(paths))
	for i, p := range paths {
		out[i] = layer(t, p)
	}
	return out
}

// schema reads the schema at path in testdata/repo.
func schema(t testing.TB, path string) cueeval.Options {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "repo", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return cueeval.Options{Schema: string(data), SchemaPath: path}
}
