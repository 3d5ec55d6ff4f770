package app_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/gitrepo"
)

// TestWASMReuseBytes: the App's WASM runtime keeps module output for reuse
// within WASMReuseBytes (its gauge is served), and keeps none below zero
// (cupd --wasm-reuse-bytes 0).
func TestWASMReuseBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bytes int64
		want  bool
	}{{0, true}, {1 << 20, true}, {-1, false}} {
		repo := filepath.Join(t.TempDir(), "repo.git")
		if _, err := gitrepo.Init(repo, "main", map[string][]byte{".cup/types.yaml": []byte(thingsConfig)}, "seed"); err != nil {
			t.Fatal(err)
		}
		a, err := app.Open(t.Context(), app.Options{Repository: repo, WASMReuseBytes: tc.bytes, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(rec.Body.String(), "cup_wasm_reuse_bytes "); rec.Code != http.StatusOK || got != tc.want {
			t.Errorf("WASMReuseBytes %d: /metrics %d, cup_wasm_reuse_bytes served %v, want %v", tc.bytes, rec.Code, got, tc.want)
		}
	}
}

// thingsConfig serves example.com/v1 Things, one JSON file each.
const thingsConfig = `apiVersion: cup.dev/v1alpha1
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
`
