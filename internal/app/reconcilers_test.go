package app_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/gitrepo"
)

// serveDemo runs cupd's app on its embedded demo, reconcilers included,
// until the test ends, and returns a REST call against it: the status and
// the decoded JSON answer.
func serveDemo(t *testing.T) func(method, path, body string) (int, map[string]any) {
	t.Helper()
	a, err := app.Open(t.Context(), app.Options{Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	ts := httptest.NewServer(a.Handler())
	t.Cleanup(ts.Close)
	do := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return res.StatusCode, m
	}
	return do
}

// TestDemoFlagBundles: the demo's reconciler (its WASM module built from
// examples/reconcilers/flagbundle) finds the committed bundles converged
// and writes nothing at start; a flag changed through the API shows in
// its namespace's bundle in the commit after it.
func TestDemoFlagBundles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the demo's WASM modules; skipped with -short")
	}
	do := serveDemo(t)
	const bundle = "/apis/flags.cup.dev/v1alpha1/namespaces/staging/flagbundles/staging"
	_, first := do("GET", bundle, "")
	start := first["metadata"].(map[string]any)["resourceVersion"]

	if code, body := do("PUT", "/apis/flags.cup.dev/v1alpha1/namespaces/staging/flags/dark-mode",
		`{"spec": {"description": "Dark colour scheme for the dashboard.", "enabled": true, "rollout": 37}}`); code/100 != 2 {
		t.Fatalf("PUT = %d %v", code, body)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, m := do("GET", bundle, "")
		spec, _ := m["spec"].(map[string]any)
		flags, _ := spec["flags"].(map[string]any)
		dm, _ := flags["dark-mode"].(map[string]any)
		if dm["rollout"] == float64(37) {
			if m["metadata"].(map[string]any)["resourceVersion"] == start {
				t.Fatal("the bundle changed without a new resourceVersion")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the staging bundle still holds %v 15 s after the flag changed", dm)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Converged at start: the bundle's history is the demo's commit and
	// the reconciler's one after the flag's.
	_, h := do("GET", bundle+"/history", "")
	entries := h["entries"].([]any)
	if len(entries) != 2 || !strings.HasPrefix(entries[0].(map[string]any)["subject"].(string), "Reconcile flag-bundles") {
		t.Fatalf("history of the bundle: %v", h)
	}
}

// TestReconcilerWriteModeMustMatchCupd: a reconciler asking for proposals
// on a cupd that commits on the branch is refused at start, naming the
// file and what to change, before its module is compiled.
func TestReconcilerWriteModeMustMatchCupd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string][]byte{
		".cup/types.yaml": []byte(`apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: things.example.com}
spec:
  group: example.com
  names: {kind: Thing, singular: thing, plural: things}
  versions: {v1: {schema: {type: object}}}
---
apiVersion: cup.dev/v1alpha1
kind: Controller
metadata: {name: things}
spec: {type: template, spec: {list_template: "things/{{ .Namespace }}/*.json", resource_template: "things/{{ .Namespace }}/{{ .Name }}.json"}}
---
apiVersion: cup.dev/v1alpha1
kind: APIBinding
metadata: {name: things}
spec: {controller: things, resources: [example.com/v1/things]}
`),
		".cup/reconciler.yaml": []byte(`apiVersion: cup.dev/v1alpha1
kind: Reconciler
metadata: {name: copies}
spec:
  for: example.com/v1/things
  outputs: [{resource: example.com/v1/things, ownership: shared}]
  transform: {wasm: {path: copies.wasm}}
  write: {mode: proposal}
`),
		".cup/copies.wasm": []byte("not compiled before the check"),
	}
	repo := filepath.Join(dir, "repo.git")
	if _, err := gitrepo.Init(repo, "main", files, "seed"); err != nil {
		t.Fatal(err)
	}
	_, err := app.Open(t.Context(), app.Options{Repository: repo, Logger: slog.New(slog.DiscardHandler)})
	const want = `.cup/reconciler.yaml: reconciler "copies": spec.write.mode is proposal, but cupd commits on the branch: run it with --write-mode proposal (or branch), or set spec.write.mode: direct`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open = %v, want an error saying %q", err, want)
	}
}

// TestDemoServiceConfigs: the demo's layered configuration, as the README
// walks through it. A changed environment layer makes a new ServiceConfig,
// the Service is switched to it in the same commit, and the old one is
// marked orphaned; a layer that conflicts leaves the Service on its config
// and says why, with both files and positions.
func TestDemoServiceConfigs(t *testing.T) {
	do := serveDemo(t)
	const (
		service = "/apis/apps.cup.dev/v1alpha1/namespaces/staging/services/api"
		configs = "/apis/config.cup.dev/v1alpha1/namespaces/staging/serviceconfigs/"
		layers  = "/apis/config.cup.dev/v1alpha1/namespaces/staging/configlayers/"
	)
	config := func() string {
		_, m := do("GET", service, "")
		s, _ := m["spec"].(map[string]any)["config"].(string)
		return s
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 15 s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	first := config()
	if code, _ := do("GET", configs+first, ""); code != 200 || !strings.HasPrefix(first, "api-") {
		t.Fatalf("the demo's staging api runs with %q (%d); want its committed ServiceConfig", first, code)
	}

	if code, body := do("PUT", layers+"environment", `{"metadata": {"labels": {"layer": "shared"}}, "spec": {"priority": 10,
		"values": {"env": {"ENVIRONMENT": "staging", "REGION": "eu-central-1", "LOG_LEVEL": "warn"}}}}`); code/100 != 2 {
		t.Fatalf("PUT the environment layer = %d %v", code, body)
	}
	eventually("the service switched to a new config", func() bool { return config() != first })
	second := config()
	_, cfg := do("GET", configs+second, "")
	if env := cfg["spec"].(map[string]any)["data"].(map[string]any)["env"].(map[string]any); env["LOG_LEVEL"] != "warn" || env["LOG_FORMAT"] != "json" {
		t.Fatalf("the new config's env: %v", env)
	}
	_, old := do("GET", configs+first, "")
	if ann, _ := old["metadata"].(map[string]any)["annotations"].(map[string]any); ann["cup.dev/orphaned"] == nil {
		t.Fatalf("the old config is not marked orphaned: %v", old["metadata"])
	}

	// The service's own layer disagrees with its environment's.
	if code, body := do("PUT", layers+"api", `{"spec": {"target": "api", "priority": 20, "values": {"image": "registry.example/api:1.5.0-rc.1",
		"replicas": 1, "resources": {"cpu": "500m", "memory": "512Mi"}, "env": {"LOG_LEVEL": "error"}}}}`); code/100 != 2 {
		t.Fatalf("PUT the api layer = %d %v", code, body)
	}
	var msg string
	eventually("an InvalidConfiguration condition", func() bool {
		_, st := do("GET", service+"/status", "")
		conds, _ := st["conditions"].([]any)
		for _, c := range conds {
			if m := c.(map[string]any); m["type"] == "InvalidConfiguration" && m["status"] == "True" {
				msg, _ = m["message"].(string)
				return true
			}
		}
		return false
	})
	for _, want := range []string{"env.LOG_LEVEL: conflicting values \"warn\" and \"error\"", "configlayers/staging/api.yaml:", "configlayers/staging/environment.yaml:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the condition %q does not say %q", msg, want)
		}
	}
	if got := config(); got != second {
		t.Fatalf("a conflict switched the service from %s to %s", second, got)
	}
}
