package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// getJSON reads a flag as cup get -o json prints it.
func getJSON(t *testing.T, url, name string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(ok(t, url, "get", "flags", name, "-o", "json")), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func specOf(m map[string]any) map[string]any { return m["spec"].(map[string]any) }

func metadataOf(m map[string]any, field string) map[string]any {
	v, _ := m["metadata"].(map[string]any)[field].(map[string]any)
	return v
}

func TestPatchCommand(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	committed := regexp.MustCompile(`^flags\.flags\.cup\.dev/dark-mode patched: committed [0-9a-f]{7}\n$`)

	if got := ok(t, url, "patch", "flag", "dark-mode", "-p", `{"spec":{"enabled":true}}`); !committed.MatchString(got) {
		t.Fatalf("merge patch printed %q", got)
	}
	if s := specOf(getJSON(t, url, "dark-mode")); s["enabled"] != true || s["rollout"] != 0.0 {
		t.Fatalf("after a merge patch the spec is %v", s)
	}
	if got := ok(t, url, "patch", "flag", "dark-mode", "-p", `{"spec":{"enabled":true}}`); got != "flags.flags.cup.dev/dark-mode patched (no change)\n" {
		t.Fatalf("patch changing nothing printed %q", got)
	}
	got := ok(t, url, "patch", "flags/dark-mode", "--type", "json", "-p", `[{"op":"test","path":"/spec/enabled","value":true},{"op":"replace","path":"/spec/rollout","value":50}]`)
	if !committed.MatchString(got) || specOf(getJSON(t, url, "dark-mode"))["rollout"] != 50.0 {
		t.Fatalf("JSON patch printed %q", got)
	}
	file := writeFile(t, t.TempDir(), "patch.json", `{"spec": {"rollout": 60}}`)
	if got := ok(t, url, "patch", "flag", "dark-mode", "-p", "@"+file); !committed.MatchString(got) || specOf(getJSON(t, url, "dark-mode"))["rollout"] != 60.0 {
		t.Fatalf("patch from a file printed %q", got)
	}
	if r := cup(t, url, `{"spec": {"rollout": 70}}`, "patch", "flag", "dark-mode", "-p", "@-", "--dry-run"); r.code != 0 ||
		r.stdout != "flags.flags.cup.dev/dark-mode patched: dry run: 1 file\n" || specOf(getJSON(t, url, "dark-mode"))["rollout"] != 60.0 {
		t.Fatalf("dry run from stdin: %+v", r)
	}
	rv := getJSON(t, url, "dark-mode")["metadata"].(map[string]any)["resourceVersion"].(string)
	ok(t, url, "patch", "flag", "dark-mode", "-p", `{"spec":{"rollout":61}}`, "--resource-version", rv, "--message", "Roll out to 61%")
	if got := ok(t, url, "history", "flag", "dark-mode"); !strings.Contains(got, "Roll out to 61%") {
		t.Fatalf("history does not show the patch's message: %s", got)
	}

	fails(t, url, "precondition failed", "patch", "flag", "dark-mode", "-p", `{"spec":{"rollout":62}}`, "--resource-version", rv)
	fails(t, url, "test failed", "patch", "flag", "dark-mode", "--type", "json", "-p", `[{"op":"test","path":"/spec/enabled","value":false}]`)
	fails(t, url, "flags.flags.cup.dev/dark-mode: metadata.name: a patch cannot change it", "patch", "flag", "dark-mode", "-p", `{"metadata":{"name":"light-mode"}}`)
	fails(t, url, "spec.rollout: schema violation", "patch", "flag", "dark-mode", "-p", `{"spec":{"rollout":101}}`)
	fails(t, url, "--type strategic (kubectl's default) is not served", "patch", "flag", "dark-mode", "--type", "strategic", "-p", `{}`)
	fails(t, url, "-p is required", "patch", "flag", "dark-mode")
	fails(t, url, "not found", "patch", "flag", "no-such-flag", "-p", `{"spec":{"enabled":true}}`)
	fails(t, url, "patch: not JSON", "patch", "flag", "dark-mode", "-p", `{spec: 1}`)
}

func TestLabelCommand(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	labels := func() map[string]any { return metadataOf(getJSON(t, url, "dark-mode"), "labels") }

	if got := ok(t, url, "label", "flag", "dark-mode", "stage=beta", "tier=1"); !regexp.MustCompile(`^flags\.flags\.cup\.dev/dark-mode labeled: committed [0-9a-f]{7}\n$`).MatchString(got) {
		t.Fatalf("label printed %q", got)
	}
	if l := labels(); l["stage"] != "beta" || l["tier"] != "1" || l["team"] != "web" {
		t.Fatalf("labels %v", l)
	}
	// kubectl's rule and message: a new value needs --overwrite.
	fails(t, url, "'team' already has a value (web), and --overwrite is false", "label", "flag", "dark-mode", "team=search")
	// The same value is no change, and needs none.
	if got := ok(t, url, "label", "flag", "dark-mode", "team=web"); got != "flags.flags.cup.dev/dark-mode labeled (no change)\n" {
		t.Fatalf("label to the same value printed %q", got)
	}
	ok(t, url, "label", "flags/dark-mode", "team=search", "--overwrite")
	// Removing, also a label that is not there.
	ok(t, url, "label", "flag", "dark-mode", "stage-", "absent-")
	if l := labels(); l["team"] != "search" || l["stage"] != nil || l["tier"] != "1" {
		t.Fatalf("labels after overwrite and removal %v", l)
	}
	if r := cup(t, url, "", "label", "flag", "dark-mode", "stage=gamma", "--dry-run"); r.code != 0 || !strings.Contains(r.stdout, "labeled: dry run: 1 file") || labels()["stage"] != nil {
		t.Fatalf("dry run: %+v", r)
	}
	rv := getJSON(t, url, "dark-mode")["metadata"].(map[string]any)["resourceVersion"].(string)
	ok(t, url, "label", "flag", "dark-mode", "stage=gamma", "--resource-version", rv)
	fails(t, url, "precondition failed", "label", "flag", "dark-mode", "stage=delta", "--overwrite", "--resource-version", rv)

	// A rerun with the idempotency key replays the first write.
	first := ok(t, url, "label", "flag", "dark-mode", "reviewed=yes", "--idempotency-key", "review-1")
	if again := ok(t, url, "label", "flag", "dark-mode", "reviewed=yes", "--idempotency-key", "review-1"); again != strings.TrimSuffix(first, "\n")+" (replayed)\n" {
		t.Fatalf("label rerun with its key printed %q, first %q", again, first)
	}

	// Refused before anything is sent.
	for _, tc := range []struct{ arg, want string }{
		{"bad key=x", `"bad key" is not a valid label key`},
		{"team=-search-", `"-search-" is not a valid label value for "team"`},
		{"owner", `"owner" is neither KEY=VALUE nor KEY-`},
	} {
		fails(t, url, tc.want, "label", "flag", "dark-mode", tc.arg)
	}
	fails(t, url, "given more than once", "label", "flag", "dark-mode", "a=1", "a-")
	fails(t, url, "give at least one label", "label", "flag", "dark-mode")
	fails(t, url, "not found", "label", "flag", "no-such-flag", "a=1")
}

func TestAnnotateCommand(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	annotations := func() map[string]any { return metadataOf(getJSON(t, url, "dark-mode"), "annotations") }

	if got := ok(t, url, "annotate", "flag", "dark-mode", "note=Rolled out slowly, see #42", "example.com/owner=web"); !regexp.MustCompile(`^flags\.flags\.cup\.dev/dark-mode annotated: committed [0-9a-f]{7}\n$`).MatchString(got) {
		t.Fatalf("annotate printed %q", got)
	}
	if a := annotations(); a["note"] != "Rolled out slowly, see #42" || a["example.com/owner"] != "web" {
		t.Fatalf("annotations %v", a)
	}
	fails(t, url, "'note' already has a value (Rolled out slowly, see #42), and --overwrite is false", "annotate", "flag", "dark-mode", "note=done")
	ok(t, url, "annotate", "flag", "dark-mode", "note=done", "--overwrite")
	ok(t, url, "annotate", "flag", "dark-mode", "example.com/owner-", "missing-")
	if a := annotations(); a["note"] != "done" || a["example.com/owner"] != nil {
		t.Fatalf("annotations after overwrite and removal %v", a)
	}
	// Annotations hold any text; their keys follow the rules of labels'.
	fails(t, url, `"Not/a/key" is not a valid annotation key`, "annotate", "flag", "dark-mode", "Not/a/key=x")

	// Every flag a selector selects, or all of them, each its own write.
	if got := ok(t, url, "annotate", "flags", "-l", "team in (web, payments)", "reviewed=yes"); !regexp.MustCompile(
		`^flags\.flags\.cup\.dev/dark-mode annotated: committed [0-9a-f]{7}\nflags\.flags\.cup\.dev/new-checkout annotated: committed [0-9a-f]{7}\n$`).MatchString(got) {
		t.Fatalf("annotate -l printed %q", got)
	}
	if a := metadataOf(getJSON(t, url, "search-v2"), "annotations"); a["reviewed"] != nil {
		t.Fatalf("a flag the selector does not select was annotated: %v", a)
	}
	got := ok(t, url, "annotate", "flags", "--all", "reviewed=yes")
	if want := "flags.flags.cup.dev/dark-mode annotated (no change)\nflags.flags.cup.dev/new-checkout annotated (no change)\n"; !strings.HasPrefix(got, want) ||
		!regexp.MustCompile(`flags\.flags\.cup\.dev/search-v2 annotated: committed [0-9a-f]{7}\n$`).MatchString(got) {
		t.Fatalf("annotate --all printed %q", got)
	}
	fails(t, url, "'reviewed' already has a value (yes), and --overwrite is false", "annotate", "flags", "--all", "reviewed=no")
	if r := cup(t, url, "", "annotate", "flags", "-l", "team=nobody", "reviewed=no"); r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "No resources found") {
		t.Fatalf("annotate -l selecting nothing: %+v", r)
	}
	fails(t, url, "give one", "annotate", "flags", "-l", "team=web", "--all", "a=b")
	fails(t, url, "not with -l or --all", "annotate", "flags", "--all", "a=b", "--resource-version", "abc")
}

// TestLabelAfterAConcurrentChange: when another writer changes the
// resource between label's read and its write, label reads it again: it
// keeps the other writer's change, and checks --overwrite against it.
func TestLabelAfterAConcurrentChange(t *testing.T) {
	t.Parallel()
	h := newHandler(t)
	// The other writer's patch, sent just before cup's first patch arrives.
	var other atomic.Pointer[string]
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/cup.v1alpha1.ResourceService/Patch" {
			h.ServeHTTP(w, r)
			return
		}
		if p := other.Swap(nil); p != nil {
			req := httptest.NewRequestWithContext(r.Context(), "PATCH", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/dark-mode", strings.NewReader(*p))
			req.Host = "127.0.0.1"
			req.Header.Set("Content-Type", "application/merge-patch+json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusAccepted {
				t.Errorf("the other writer's PATCH = %d %s", rec.Code, rec.Body)
			}
		}
		h.ServeHTTP(w, r)
	}))
	labels := func() map[string]any { return metadataOf(getJSON(t, url, "dark-mode"), "labels") }

	another := `{"metadata":{"labels":{"owner":"ops"}}}`
	other.Store(&another)
	ok(t, url, "label", "flag", "dark-mode", "stage=beta")
	if l := labels(); l["owner"] != "ops" || l["stage"] != "beta" || l["team"] != "web" || other.Load() != nil {
		t.Fatalf("labels after a concurrent change %v", l)
	}
	conflicting := `{"metadata":{"labels":{"tier":"gold"}}}`
	other.Store(&conflicting)
	fails(t, url, "'tier' already has a value (gold), and --overwrite is false", "label", "flag", "dark-mode", "tier=silver")
	if l := labels(); l["tier"] != "gold" {
		t.Fatalf("label overwrote a concurrent change: %v", l)
	}
	// With --resource-version, a concurrent change fails the write.
	rv := getJSON(t, url, "dark-mode")["metadata"].(map[string]any)["resourceVersion"].(string)
	third := `{"metadata":{"labels":{"owner":"web"}}}`
	other.Store(&third)
	fails(t, url, "precondition failed", "label", "flag", "dark-mode", "stage=gamma", "--overwrite", "--resource-version", rv)
}
