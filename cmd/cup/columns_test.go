package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sortingFlags are flags in namespace sorting whose rollouts sort
// differently as text and as numbers, and whose weights differ only past
// what a float64 holds (12345678901234567890 and ...889 are the same
// float64).
const sortingFlags = `apiVersion: flags.cup.dev/v1alpha1
kind: Flag
metadata: {name: big-1, namespace: sorting, labels: {team: web, cup.dev/tier: gold}}
spec: {enabled: true, rollout: 5, variants: [{key: a, weight: 12345678901234567890}]}
---
apiVersion: flags.cup.dev/v1alpha1
kind: Flag
metadata: {name: big-2, namespace: sorting, labels: {team: api}}
spec: {enabled: false, rollout: 100, variants: [{key: a, weight: 12345678901234567889}]}
---
apiVersion: flags.cup.dev/v1alpha1
kind: Flag
metadata: {name: small, namespace: sorting}
spec: {enabled: true, rollout: 50, variants: [{key: a, weight: 9}]}
---
apiVersion: flags.cup.dev/v1alpha1
kind: Flag
metadata: {name: small, namespace: watched}
spec: {enabled: true}
---
apiVersion: flags.cup.dev/v1alpha1
kind: Flag
metadata: {name: plain, namespace: sorting}
spec: {enabled: false}
`

// recent matches the AGE of a resource changed within the last minutes.
const recent = `([0-9]+s|[0-9]+m([0-9]+s)?)`

func TestGetColumns(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	if r := cup(t, url, sortingFlags, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	t.Run("printer columns and a plausible AGE", func(t *testing.T) {
		t.Parallel()
		got := ok(t, url, "get", "flags", "-n", "sorting")
		// Made a moment ago: seconds, or minutes on a slow machine.
		want := regexp.MustCompile(`^NAME    ENABLED   ROLLOUT   AGE *
big-1   true      5         ` + recent + ` *
big-2   false     100       ` + recent + ` *
plain   false     <none>    ` + recent + ` *
small   true      50        ` + recent + ` *
$`)
		if !want.MatchString(got) {
			t.Fatalf("got:\n%s", got)
		}
	})
	t.Run("wide adds the columns of higher priority", func(t *testing.T) {
		t.Parallel()
		got := okAt(t, demoNow, url, "get", "services", "-o", "wide")
		want := "NAME     IMAGE                           REPLICAS   CONFIG              AGE   RESOURCE VERSION   NAMESPACE   LABELS\n"
		if first, _, _ := strings.Cut(got, "\n"); first+"\n" != want || !strings.Contains(got, "\nworker   registry.example/worker:1.4.2   1          worker-8f8c79820c   5d    ") {
			t.Fatalf("got:\n%s", got)
		}
		if table := okAt(t, demoNow, url, "get", "services"); strings.Contains(table, "CONFIG") || !strings.HasPrefix(table, "NAME     IMAGE                           REPLICAS   AGE\n") {
			t.Fatalf("table:\n%s", table)
		}
	})
	t.Run("labels", func(t *testing.T) {
		t.Parallel()
		got := ok(t, url, "get", "flags", "-n", "sorting", "--show-labels", "-L", "team,cup.dev/tier", "--sort-by", ".metadata.name")
		lines := strings.Split(got, "\n")
		if !regexp.MustCompile(`^NAME +ENABLED +ROLLOUT +AGE +TEAM +TIER +LABELS$`).MatchString(lines[0]) ||
			!regexp.MustCompile(`^big-1 +true +5 +`+recent+` +web +gold +cup.dev/tier=gold,team=web$`).MatchString(lines[1]) ||
			!regexp.MustCompile(`^plain +false +<none> +`+recent+` +<none>$`).MatchString(lines[3]) {
			t.Fatalf("got:\n%s", got)
		}
	})
	t.Run("sort by numbers, exactly", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ path, want string }{
			// Missing values first; 12345678901234567889 before ...890.
			{".spec.variants[0].weight", "plain small big-2 big-1"},
			{"{.spec.variants[0].weight}", "plain small big-2 big-1"},
			{".spec.rollout", "plain big-1 small big-2"}, // 5 < 50 < 100, not as text
			{"spec.enabled", "big-2 plain big-1 small"},  // false first; stable
			{".metadata.name", "big-1 big-2 plain small"},
		} {
			got := ok(t, url, "get", "flags", "-n", "sorting", "--sort-by", tc.path, "-o", "jsonpath={.items[*].metadata.name}")
			if got != tc.want {
				t.Errorf("--sort-by %s: %q, want %q", tc.path, got, tc.want)
			}
		}
		fails(t, url, "--sort-by", "get", "flags", "--sort-by", ".spec[")
	})
	t.Run("jsonpath", func(t *testing.T) {
		t.Parallel()
		got := ok(t, url, "get", "flags", "-n", "sorting", "-o", `jsonpath={range .items[*]}{.metadata.name}={.spec.variants[0].weight}{"\n"}{end}`)
		if want := "big-1=12345678901234567890\nbig-2=12345678901234567889\nplain=\nsmall=9\n"; got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
		// One resource named is the object itself, as kubectl's.
		if got := ok(t, url, "get", "flag", "big-1", "-n", "sorting", "-o", "jsonpath={.spec.variants[0].weight} {.metadata.labels.team}"); got != "12345678901234567890 web" {
			t.Fatalf("one: %q", got)
		}
		file := filepath.Join(t.TempDir(), "tmpl")
		if err := os.WriteFile(file, []byte(`{.spec.rollout}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := ok(t, url, "get", "flag", "small", "-n", "sorting", "-o", "jsonpath-file="+file); got != "50" {
			t.Fatalf("jsonpath-file: %q", got)
		}
		fails(t, url, "-o jsonpath", "get", "flags", "-o", "jsonpath={.items[")
	})
	t.Run("custom columns", func(t *testing.T) {
		t.Parallel()
		got := ok(t, url, "get", "flags", "-n", "sorting", "-o", "custom-columns=NAME:.metadata.name,WEIGHT:.spec.variants[*].weight,ON:spec.enabled")
		want := "NAME    WEIGHT                 ON\n" +
			"big-1   12345678901234567890   true\n" +
			"big-2   12345678901234567889   false\n" +
			"plain   <none>                 false\n" +
			"small   9                      true\n"
		if got != want {
			t.Fatalf("got:\n%s\nwant:\n%s", got, want)
		}
		fails(t, url, "HEADER:JSONPATH", "get", "flags", "-o", "custom-columns=NAME")
	})
	t.Run("field selector", func(t *testing.T) {
		t.Parallel()
		if got := ok(t, url, "get", "flags", "--field-selector", "metadata.name=dark-mode", "-o", "name"); got != "flags.flags.cup.dev/dark-mode\n" {
			t.Errorf("name: %q", got)
		}
		got := ok(t, url, "get", "flags", "-A", "--field-selector", "metadata.namespace!=default,metadata.namespace!=sorting,metadata.name==new-checkout",
			"-o", "custom-columns=NS:.metadata.namespace,NAME:.metadata.name")
		if want := "NS           NAME\nproduction   new-checkout\nstaging      new-checkout\n"; got != want {
			t.Errorf("-A: %q, want %q", got, want)
		}
		fails(t, url, "field label not supported: spec.enabled", "get", "flags", "--field-selector", "spec.enabled=true")
		fails(t, url, "cannot be used with named resources", "get", "flags", "dark-mode", "--field-selector", "metadata.name=x")
		r := cup(t, url, "", "get", "flags", "--field-selector", "metadata.name=nope")
		if r.code != 0 || r.stdout != "" || r.stderr != "No resources found in namespace default.\n" {
			t.Errorf("none: %+v", r)
		}
	})
	t.Run("field selector with -w", func(t *testing.T) {
		t.Parallel()
		w := startCup(t, url, "get", "flags", "-w", "-n", "watched", "--field-selector", "metadata.name=small", "-o", "name")
		w.waitFor(t, "the initial state", func(out string) bool { return lines(out) >= 1 })
		for _, name := range []string{"other", "small"} {
			doc := "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: " + name + ", namespace: watched}\nspec: {enabled: false}\n"
			if r := cup(t, url, doc, "apply", "-f", "-"); r.code != 0 {
				t.Fatalf("apply: %+v", r)
			}
		}
		w.waitFor(t, "the change", func(out string) bool { return lines(out) >= 2 })
		if r := w.stop(); r.stdout != "flags.flags.cup.dev/small\nflags.flags.cup.dev/small\n" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("watch shows the columns", func(t *testing.T) {
		t.Parallel()
		w := startCup(t, url, "get", "flags", "-w", "-n", "sorting", "-L", "team")
		out := w.waitFor(t, "the initial state", func(out string) bool { return lines(out) >= 5 })
		w.stop()
		if !regexp.MustCompile(`^NAME +ENABLED +ROLLOUT +RESOURCE VERSION +TEAM\nbig-1 +true +5 +[0-9a-f]{7} +web\n`).MatchString(out) {
			t.Fatalf("got:\n%s", out)
		}
	})
}

func TestGetAll(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	got := okAt(t, demoNow, url, "get", "all", "-n", "production")
	want := "NAME                               AGE\n" +
		"bundles.flags.cup.dev/production   5d\n" +
		"\n" +
		"NAME                                   AGE\n" +
		"flagbundles.flags.cup.dev/production   5d\n" +
		"\n" +
		"NAME                               ENABLED   ROLLOUT   AGE\n" +
		"flags.flags.cup.dev/new-checkout   false     0         5d\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	// Across namespaces: a type whose controller cannot list across
	// namespaces is a warning, and the rest prints.
	r := cup(t, url, "", "get", "all", "-A", "-o", "name")
	if r.code != 0 || !strings.Contains(r.stderr, "Warning: segments.flags.cup.dev: cannot list: ") ||
		!strings.Contains(r.stdout, "flags.flags.cup.dev/new-checkout\n") || !strings.Contains(r.stdout, "services.apps.cup.dev/worker\n") ||
		!strings.Contains(r.stdout, "configlayers.config.cup.dev/base\n") {
		t.Fatalf("-A: %+v", r)
	}
	// -A with the NAMESPACE column; a selector applies to every type.
	got = okAt(t, demoNow, url, "get", "all", "-A", "--field-selector", "metadata.name=api")
	if !strings.Contains(got, "NAMESPACE   NAME                        IMAGE                             REPLICAS   AGE\n"+
		"default     services.apps.cup.dev/api   registry.example/api:1.4.2        3          5d\n") ||
		strings.Contains(got, "flags.flags.cup.dev") || !strings.Contains(got, "configlayers.config.cup.dev/api") {
		t.Fatalf("-A --field-selector:\n%s", got)
	}
	r = cup(t, url, "", "get", "all", "-n", "empty")
	if r.code != 0 || r.stdout != "" || r.stderr != "No resources found in namespace empty.\n" {
		t.Fatalf("empty: %+v", r)
	}
}

// TestGetAgeOfManyRows: a list answers every row's last change in one
// walk (with_changes), so AGE is known past maxAgeRows, the bound of the
// History calls for rows a list cannot tell.
func TestGetAgeOfManyRows(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	var docs strings.Builder
	for i := range maxAgeRows - 2 { // the demo's 3 make maxAgeRows+1
		fmt.Fprintf(&docs, "---\napiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: f%03d}\nspec: {enabled: true}\n", i)
	}
	if r := cup(t, url, docs.String(), "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	r := cup(t, url, "", "get", "flags")
	rows := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 0 || len(rows) != maxAgeRows+2 || strings.Contains(r.stdout, "<unknown>") || r.stderr != "" {
		t.Fatalf("%d rows: %+v", maxAgeRows+1, r)
	}
	// The batch just written is seconds or minutes old; the demo's flags, years.
	fresh := regexp.MustCompile(`^f\d{3} .* (\d+s|\d+m\d*s?|\d+m)$`)
	for _, row := range rows[1:] {
		if strings.HasPrefix(row, "f") && !fresh.MatchString(row) {
			t.Errorf("row %q: AGE is not that of a write just made", row)
		}
	}
}
