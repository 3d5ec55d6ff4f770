package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// fakeEditor writes a shell script that counts its runs in a file next to
// it and runs body with the file to edit as $1; it returns the count file.
func fakeEditor(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	count := filepath.Join(dir, "runs")
	script := "#!/bin/sh\nset -e\necho run >> '" + count + "'\nn=$(wc -l < '" + count + "')\n" + body + "\n"
	p := filepath.Join(dir, "editor.sh")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("EDITOR", p)
	return count
}

func runs(t *testing.T, count string) int {
	t.Helper()
	b, err := os.ReadFile(count)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func TestEdit(t *testing.T) { // not parallel: it sets $EDITOR
	url := newServer(t)
	t.Run("changes the resource", func(t *testing.T) {
		count := fakeEditor(t, `sed -i 's/rollout: 50/rollout: 60/' "$1"`)
		got := ok(t, url, "edit", "flags", "new-checkout")
		if !regexp.MustCompile(`^flags\.flags\.cup\.dev/new-checkout edited: committed [0-9a-f]{7}\n$`).MatchString(got) {
			t.Fatalf("got %q", got)
		}
		if y := ok(t, url, "get", "flag/new-checkout", "-o", "yaml"); !strings.Contains(y, "rollout: 60") {
			t.Fatalf("got %s", y)
		}
		if runs(t, count) != 1 {
			t.Fatal("editor ran more than once")
		}
	})
	t.Run("unchanged cancels", func(t *testing.T) {
		fakeEditor(t, `true`)
		if got := ok(t, url, "edit", "fl/dark-mode"); got != "Edit cancelled, no changes made.\n" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("an invalid edit re-opens the editor with the error", func(t *testing.T) {
		dir := t.TempDir()
		seen := filepath.Join(dir, "second-run.yaml")
		count := fakeEditor(t, `if [ "$n" = 1 ]; then sed -i 's/rollout: 0/rollout: 500/' "$1"; else cp "$1" '`+seen+`'; sed -i 's/rollout: 500/rollout: 5/' "$1"; fi`)
		got := ok(t, url, "edit", "flags", "dark-mode")
		if !strings.Contains(got, "edited: committed") {
			t.Fatalf("got %q", got)
		}
		if n := runs(t, count); n != 2 {
			t.Fatalf("editor ran %d times, want 2", n)
		}
		b, err := os.ReadFile(seen)
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^# .*resource\.spec\.rollout: schema violation`).Match(b) {
			t.Fatalf("second run did not show the error:\n%s", b)
		}
		if y := ok(t, url, "get", "flags", "dark-mode", "-o", "yaml"); !strings.Contains(y, "rollout: 5\n") {
			t.Fatalf("got %s", y)
		}
	})
	t.Run("gives up after repeated failures", func(t *testing.T) {
		count := fakeEditor(t, `sed -i 's/rollout: 100/rollout: 101/; s/rollout: 101$/rollout: 102/' "$1"; echo "# run $n" >> "$1"`)
		fails(t, url, "schema violation", "edit", "flags", "search-v2")
		if n := runs(t, count); n != maxEdits {
			t.Fatalf("editor ran %d times, want %d", n, maxEdits)
		}
	})
	t.Run("a concurrent change aborts", func(t *testing.T) {
		curl, err := exec.LookPath("curl")
		if err != nil {
			t.Skip("needs curl to write meanwhile")
		}
		// While the editor runs, someone else changes the resource.
		put := curl + ` -sf -X PUT ` + url + `/apis/flags.cup.dev/v1alpha1/namespaces/staging/flags/new-checkout -d '{"spec": {"enabled": true, "rollout": 3}}' > /dev/null`
		fakeEditor(t, `sed -i 's/rollout: [0-9]*/rollout: 7/' "$1"; `+put)
		fails(t, url, "changed since it was read", "edit", "flags", "new-checkout", "-n", "staging")
	})
	t.Run("errors", func(t *testing.T) {
		fakeEditor(t, `true`)
		fails(t, url, "not found", "edit", "flags", "nope")
		fails(t, url, "name the resource", "edit", "flags")
		fakeEditor(t, `exit 3`)
		fails(t, url, "editor", "edit", "flags", "new-checkout")
	})
}

// TestEditKeepsEveryCharacter: strings holding characters that YAML must
// escape (DEL, C1 controls such as NEL, line and paragraph separators,
// noncharacters) print as YAML and come back from an edit as they were.
func TestEditKeepsEveryCharacter(t *testing.T) { // not parallel: it sets $EDITOR
	url := newServer(t)
	const description = "a\u0085b\u007fc\u009bd\u2028e\u2029f\uffffg"
	in, err := json.Marshal(map[string]any{
		"apiVersion": "flags.cup.dev/v1alpha1", "kind": "Flag",
		"metadata": map[string]any{"name": "controls"},
		"spec":     map[string]any{"enabled": true, "description": description},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := cup(t, url, string(in), "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: exit %d\nstderr: %s", r.code, r.stderr)
	}
	type flag struct {
		Spec struct {
			Enabled     bool   `json:"enabled"`
			Description string `json:"description"`
		} `json:"spec"`
	}
	y := ok(t, url, "get", "flags", "controls", "-o", "yaml")
	var got flag
	if err := yaml.Unmarshal([]byte(y), &got); err != nil {
		t.Fatalf("get -o yaml printed YAML that does not decode: %v\n%s", err, y)
	}
	if got.Spec.Description != description {
		t.Errorf("get -o yaml: description %q, want %q\n%s", got.Spec.Description, description, y)
	}

	fakeEditor(t, `sed -i 's/enabled: true/enabled: false/' "$1"`)
	if out := ok(t, url, "edit", "flags", "controls"); !strings.Contains(out, "edited: committed") {
		t.Fatalf("edit: %q", out)
	}
	got = flag{}
	if err := json.Unmarshal([]byte(ok(t, url, "get", "flags", "controls", "-o", "json")), &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Enabled || got.Spec.Description != description {
		t.Errorf("after edit: enabled %v, description %q; want false, %q", got.Spec.Enabled, got.Spec.Description, description)
	}
}
