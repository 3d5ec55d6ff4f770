package app_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/gitrepo"
)

func TestModulePaths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, path, want string }{
		{"absolute", "/opt/cup/flipt.wasm", `module path "/opt/cup/flipt.wasm" is absolute: give it relative to the folder of flipt.json`},
		{"outside", "../flipt.wasm", `module path "../flipt.wasm" leaves the configuration's tree`},
		{"missing", "flipt.wasm", "reading module flipt.wasm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			repo := filepath.Join(dir, "repo.git")
			if _, err := gitrepo.Init(repo, "main", map[string][]byte{"README.md": []byte("hi\n")}, "seed"); err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(dir, "config")
			if err := os.Mkdir(cfg, 0o755); err != nil {
				t.Fatal(err)
			}
			ctrl := `{"apiVersion": "cup.flipt.io/v1alpha1", "kind": "Controller", "metadata": {"name": "flipt"},
 "spec": {"type": "wasm", "spec": {"path": "` + tc.path + `"}}}`
			if err := os.WriteFile(filepath.Join(cfg, "flipt.json"), []byte(ctrl), 0o644); err != nil {
				t.Fatal(err)
			}
			a, err := app.Open(t.Context(), app.Options{Repository: repo, ConfigDir: cfg, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
			if err == nil {
				_ = a.Close()
				t.Fatal("Open accepted the controller")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
