package server_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/gitrepo"
)

// The original Cup's Flipt controller (ext/controllers/flipt.io in
// flipt-io/cup) keeps flags in Flipt's features.yml and reports a missing
// flag with exit code 1 and "flag <ns>/<name>: not found", not with exit
// code 2. testdata/fliptlike behaves as it does; testdata/flipt/golden holds
// the features.yml the original's own module wrote, run as the original
// server ran it, after each write of the sequence below. cupd must serve
// every verb through such a module and commit what it wrote unchanged.

// fliptConfig is configuration in the original Cup's format.
var fliptConfig = map[string]string{
	"flags.json": `{"apiVersion": "cup.flipt.io/v1alpha1", "kind": "ResourceDefinition",
 "metadata": {"name": "flags.flipt.io"},
 "names": {"kind": "Flag", "singular": "flag", "plural": "flags"},
 "spec": {"group": "flipt.io", "versions": {"v1alpha1": {"type": "object",
   "properties": {"type": {"enum": ["", "VARIANT_FLAG_TYPE", "BOOLEAN_FLAG_TYPE"]}, "enabled": {"type": "boolean"}},
   "additionalProperties": true}}}}`,
	"flipt.json": `{"apiVersion": "cup.flipt.io/v1alpha1", "kind": "Controller", "metadata": {"name": "flipt"},
 "spec": {"type": "wasm", "spec": {"path": "flipt.wasm"}}}`,
	"binding.json": `{"apiVersion": "cup.flipt.io/v1alpha1", "kind": "Binding", "metadata": {"name": "flipt"},
 "spec": {"controller": "flipt", "resources": ["flipt.io/v1alpha1/flags"]}}`,
}

func newFliptFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	if err := os.Mkdir(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range fliptConfig {
		if err := os.WriteFile(filepath.Join(cfg, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wasmFile, err := filepath.Abs(filepath.Join(cfg, "flipt.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-o", wasmFile, "./testdata/fliptlike")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building testdata/fliptlike: %v\n%s", err, out)
	}
	seed, err := os.ReadFile("testdata/flipt/features.yml")
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repo.git")
	if _, err := gitrepo.Init(repo, "main", map[string][]byte{"features.yml": seed}, "seed"); err != nil {
		t.Fatal(err)
	}
	return newAppFixture(t, func(o *app.Options) {
		o.Repository, o.ConfigDir, o.WriteMode = repo, cfg, "direct"
	})
}

func TestOriginalFliptController(t *testing.T) {
	t.Parallel()
	f := newFliptFixture(t)
	base := "/apis/flipt.io/v1alpha1/namespaces/default/flags"
	features := func() []byte {
		t.Helper()
		files, err := f.repo.Files("main")
		if err != nil {
			t.Fatal(err)
		}
		return files["features.yml"]
	}
	golden := func(name string) {
		t.Helper()
		want, err := os.ReadFile(filepath.Join("testdata/flipt/golden", name))
		if err != nil {
			t.Fatal(err)
		}
		if got := features(); string(got) != string(want) {
			t.Fatalf("features.yml is not what the original controller wrote (%s):\n%s", name, got)
		}
	}

	if r := f.do(t, "GET", base+"/new-checkout", ""); r.status != 200 ||
		r.json(t)["spec"].(map[string]any)["description"] != "The new checkout flow." {
		t.Fatalf("GET = %d %s", r.status, r.body)
	}
	if r := f.do(t, "GET", base+"/nope", ""); r.status != 404 {
		t.Fatalf("GET of a missing flag = %d %s", r.status, r.body)
	}
	if r := f.do(t, "GET", base, ""); r.status != 200 || fliptNames(t, r) != "dark-mode,new-checkout" {
		t.Fatalf("LIST = %d %s", r.status, r.body)
	}

	create := `{"apiVersion": "flipt.io/v1alpha1", "kind": "Flag", "metadata": {"namespace": "default", "name": "promo-banner"},
 "spec": {"type": "BOOLEAN_FLAG_TYPE", "description": "Promo banner.", "enabled": true}}`
	if r := f.do(t, "PUT", base+"/promo-banner", create); r.status != 202 {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	golden("1-create.yml")
	if r := f.do(t, "GET", base+"/promo-banner", ""); r.status != 200 {
		t.Fatalf("GET of the created flag = %d %s", r.status, r.body)
	}
	if r := f.do(t, "PUT", base+"/promo-banner", create); r.status != 204 {
		t.Fatalf("the same create again = %d %s, want 204 (unchanged)", r.status, r.body)
	}
	golden("1-create.yml")

	update := `{"apiVersion": "flipt.io/v1alpha1", "kind": "Flag", "metadata": {"namespace": "default", "name": "new-checkout"},
 "spec": {"type": "VARIANT_FLAG_TYPE", "description": "The new checkout flow, for everyone.", "enabled": true,
  "variants": [{"key": "blue", "name": "blue", "attachment": {"color": "blue", "weight": 3}}],
  "rules": [{"segment_key": "beta-testers", "rank": 1, "distributions": [{"variant_key": "blue", "rollout": 100}]}]}}`
	if r := f.do(t, "PUT", base+"/new-checkout", update); r.status != 202 {
		t.Fatalf("update = %d %s", r.status, r.body)
	}
	golden("2-update.yml")

	if r := f.do(t, "DELETE", base+"/dark-mode", ""); r.status != 202 {
		t.Fatalf("DELETE = %d %s", r.status, r.body)
	}
	golden("3-delete.yml")
	if r := f.do(t, "DELETE", base+"/dark-mode", ""); r.status != 404 {
		t.Fatalf("DELETE of a deleted flag = %d %s", r.status, r.body)
	}
	if r := f.do(t, "GET", base, ""); r.status != 200 || fliptNames(t, r) != "new-checkout,promo-banner" {
		t.Fatalf("LIST after the writes = %d %s", r.status, r.body)
	}
	golden("3-delete.yml")
}

func fliptNames(t *testing.T, r restResponse) string {
	t.Helper()
	var out []string
	items, _ := r.json(t)["items"].([]any)
	for _, it := range items {
		out = append(out, it.(map[string]any)["metadata"].(map[string]any)["name"].(string))
	}
	return strings.Join(out, ",")
}
