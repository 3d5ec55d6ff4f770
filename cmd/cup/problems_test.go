package main

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/gitrepo"
)

func TestGetWarnsOfProblems(t *testing.T) {
	t.Parallel()
	a, err := app.Open(t.Context(), app.Options{Logger: slog.New(slog.NewTextHandler(t.Output(), nil)), WASMRuntime: testWASM})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	files := map[string][]byte{"flags/default/My_Res.yaml": []byte("apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata:\n  name: My_Res\n")}
	for i := range 21 {
		files[fmt.Sprintf("flags/default/bad-%02d.yaml", i)] = []byte("kind: Flag\nmetadata:\n  name: x\n")
	}
	if _, err := gitrepo.Commit(a.Repository(), "main", files, "add problems"); err != nil {
		t.Fatal(err)
	}
	url := serve(t, a.Handler())

	r := cup(t, url, "", "get", "flags", "-o", "name")
	if r.code != 0 || r.stdout != "flags.flags.cup.dev/dark-mode\nflags.flags.cup.dev/new-checkout\nflags.flags.cup.dev/search-v2\n" {
		t.Fatalf("cup get flags: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if len(lines) != 21 || !strings.HasPrefix(lines[0], `Warning: flags/default/My_Res.yaml: holds Flag "My_Res", which is not a valid name`) ||
		lines[1] != "Warning: flags/default/bad-00.yaml: decoding resource: missing apiVersion" ||
		lines[20] != "Warning: 2 more files left out of the list; see them all with: cup get flags --problems -n default" {
		t.Errorf("stderr:\n%s", r.stderr)
	}

	out := ok(t, url, "get", "flags", "--problems")
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(lines) != 23 || !strings.HasPrefix(lines[0], "PATH ") ||
		!strings.HasPrefix(lines[22], "flags/default/bad-20.yaml   decoding resource: missing apiVersion") {
		t.Errorf("cup get flags --problems:\n%s", out)
	}
	r = cup(t, url, "", "get", "segments", "--problems")
	if r.code != 0 || r.stdout != "" || r.stderr != "No problems found in namespace default.\n" {
		t.Errorf("cup get segments --problems: %d %q %q", r.code, r.stdout, r.stderr)
	}
	fails(t, url, "give TYPE alone", "get", "flags", "dark-mode", "--problems")
}
