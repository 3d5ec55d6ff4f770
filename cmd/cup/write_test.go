package main

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/internal/app"
)

const twoFlags = `# two flags in one file
apiVersion: flags.cup.dev/v1alpha1
kind: Flag
metadata:
  name: beta-banner
  labels:
    team: web
spec:
  enabled: true
  rollout: 10
---
apiVersion: flags.cup.dev/v1alpha1
kind: Flag
metadata:
  name: new-checkout
  namespace: default
  labels:
    team: payments
spec:
  description: The redesigned checkout flow.
  enabled: true
  rollout: 50
`

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var commitLine = regexp.MustCompile(`^committed [0-9a-f]{7}$`)

func TestApply(t *testing.T) {
	t.Parallel()
	t.Run("multi-document yaml", func(t *testing.T) {
		t.Parallel()
		url := newServer(t)
		file := writeFile(t, t.TempDir(), "flags.yaml", twoFlags)
		lines := strings.Split(strings.TrimSpace(ok(t, url, "apply", "-f", file, "--message", "Add beta-banner")), "\n")
		if len(lines) != 3 || lines[0] != "flags.flags.cup.dev/beta-banner created" || lines[1] != "flags.flags.cup.dev/new-checkout unchanged" ||
			!commitLine.MatchString(lines[2]) {
			t.Fatalf("got %q", lines)
		}
		if got := ok(t, url, "get", "flags", "beta-banner", "-o", "wide"); !strings.Contains(got, "team=web") {
			t.Fatalf("got %q", got)
		}
		// Again: nothing changes.
		if got := ok(t, url, "apply", "-f", file); got != "flags.flags.cup.dev/beta-banner unchanged\nflags.flags.cup.dev/new-checkout unchanged\n" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("dry run, stdin, namespace", func(t *testing.T) {
		t.Parallel()
		url := newServer(t)
		// new-checkout says namespace: default, which -n staging contradicts.
		r := cup(t, url, twoFlags, "apply", "-f", "-", "--dry-run", "-n", "staging")
		if r.code != 1 || r.stdout != "" || r.stderr != `error: the namespace from the provided object "default" does not match the namespace "staging". You must pass '--namespace=default' to perform this operation.`+"\n" {
			t.Fatalf("%+v", r)
		}
		r = cup(t, url, strings.Replace(twoFlags, "  namespace: default\n", "", 1), "apply", "-f", "-", "--dry-run", "-n", "staging")
		if r.code != 0 || r.stdout != "flags.flags.cup.dev/beta-banner created (dry run)\nflags.flags.cup.dev/new-checkout configured (dry run)\ndry run: 2 files\n" {
			t.Fatalf("%+v", r)
		}
		fails(t, url, "not found", "get", "flags", "beta-banner", "-n", "staging")
	})
	t.Run("directory of json and yaml", func(t *testing.T) {
		t.Parallel()
		url := newServer(t)
		dir := t.TempDir()
		writeFile(t, dir, "a/svc.json", `[{"apiVersion": "apps.cup.dev/v1alpha1", "kind": "Service", "metadata": {"name": "cache"}, "spec": {"image": "redis:7", "replicas": 1}}]`)
		writeFile(t, dir, "b/flag.yml", "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: dir-flag}\nspec: {enabled: false}\n")
		writeFile(t, dir, "README.md", "not a resource")
		got := ok(t, url, "apply", "-f", dir, "--idempotency-key", "dir-apply")
		if !regexp.MustCompile(`^services\.apps\.cup\.dev/cache created\nflags\.flags\.cup\.dev/dir-flag created\ncommitted [0-9a-f]{7}\n$`).MatchString(got) {
			t.Fatalf("got %q", got)
		}
		ok(t, url, "get", "svc", "cache")
	})
	t.Run("invalid resource", func(t *testing.T) {
		t.Parallel()
		url := newServer(t)
		file := writeFile(t, t.TempDir(), "bad.yaml", "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: bad}\nspec: {enabled: yes-please}\n")
		fails(t, url, "flags.flags.cup.dev/bad: items[0].put.resource.spec.enabled: schema violation", "apply", "-f", file)
		unknown := writeFile(t, t.TempDir(), "x.yaml", "apiVersion: widgets.example/v1\nkind: Widget\nmetadata: {name: w}\n")
		fails(t, url, "the server has no kind Widget", "apply", "-f", unknown)
		fails(t, url, "-f is required", "apply")
		fails(t, url, "no such file", "apply", "-f", "/nonexistent.yaml")
	})
	t.Run("proposal needs an scm", func(t *testing.T) {
		t.Parallel()
		url := newServer(t)
		file := writeFile(t, t.TempDir(), "flags.yaml", twoFlags)
		r := cup(t, url, "", "apply", "-f", file, "--proposal", "42")
		if r.code != 1 || !strings.HasPrefix(r.stderr, "error: ") {
			t.Fatalf("%+v", r)
		}
	})
}

func TestDelete(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	if got := ok(t, url, "delete", "flags", "dark-mode", "--dry-run"); got != "flags.flags.cup.dev/dark-mode deleted (dry run)\ndry run: 1 file\n" {
		t.Fatalf("got %q", got)
	}
	got := ok(t, url, "delete", "fl", "dark-mode", "search-v2")
	if !regexp.MustCompile(`^flags\.flags\.cup\.dev/dark-mode deleted\nflags\.flags\.cup\.dev/search-v2 deleted\ncommitted [0-9a-f]{7}\n$`).MatchString(got) {
		t.Fatalf("got %q", got)
	}
	fails(t, url, "not found", "get", "flags", "dark-mode")
	file := writeFile(t, t.TempDir(), "nc.yaml", "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: new-checkout, namespace: staging}\n")
	if got := ok(t, url, "delete", "-f", file, "--atomic=false"); !strings.HasPrefix(got, "flags.flags.cup.dev/new-checkout deleted: committed ") {
		t.Fatalf("got %q", got)
	}
	fails(t, url, "not found", "get", "flags", "new-checkout", "-n", "staging")
	fails(t, url, "flags.flags.cup.dev/nope", "delete", "flags", "nope")
	fails(t, url, "name a TYPE and at least one NAME", "delete")
	fails(t, url, "name the flags to delete (cup delete flags NAME...), select them with -l SELECTOR, or delete every one with --all", "delete", "flags")
	fails(t, url, `the server has no resource type "widgets"`, "delete", "widgets", "x")
}

func TestDiff(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	changed := strings.Replace(twoFlags, "rollout: 50", "rollout: 75", 1)
	file := writeFile(t, t.TempDir(), "flags.yaml", changed)
	r := cup(t, url, "", "diff", "-f", file)
	if r.code != 1 || r.stderr != "" {
		t.Fatalf("diff with differences: exit %d, stderr %q; want 1 and nothing", r.code, r.stderr)
	}
	got := r.stdout
	for _, want := range []string{"flags/default/beta-banner.yaml", "+  rollout: 10", "-  rollout: 50", "+  rollout: 75"} {
		if !strings.Contains(got, want) {
			t.Errorf("diff lacks %q:\n%s", want, got)
		}
	}
	// Nothing was written.
	if out := ok(t, url, "get", "flags", "-o", "name"); strings.Contains(out, "beta-banner") {
		t.Fatalf("diff wrote: %q", out)
	}
	same := writeFile(t, t.TempDir(), "same.yaml", strings.SplitN(twoFlags, "---\n", 2)[1])
	if got := ok(t, url, "diff", "-f", same); got != "" {
		t.Fatalf("no change printed %q", got)
	}
	// Errors exit 2, as kubectl diff's do, since 1 says something differs.
	for _, tc := range []struct {
		name, want string
		args       []string
	}{
		{"missing file", "nope.yaml", []string{"diff", "-f", filepath.Join(t.TempDir(), "nope.yaml")}},
		{"argument", `unknown command "flags"`, []string{"diff", "flags", "-f", same}},
		{"unknown flag", "unknown flag: --nope", []string{"diff", "--nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cup(t, url, "", tc.args...)
			if r.code != 2 || !strings.HasPrefix(r.stderr, "error: ") || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and error: ...%s...", r.code, r.stderr, tc.want)
			}
		})
	}
}

// TestChangeSet: with a cupd in branch mode, a write makes a change set and
// --change-set adds to it.
func TestChangeSet(t *testing.T) {
	t.Parallel()
	url := newServer(t, func(o *app.Options) { o.WriteMode = "branch" })
	// The first write, by the API, makes the change set.
	res, err := cupv1alpha1connect.NewResourceServiceClient(http.DefaultClient, url).Put(t.Context(), connect.NewRequest(&cupv1alpha1.PutRequest{
		Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags", Namespace: "default", Name: "beta-banner",
		Resource: &cupv1alpha1.Resource{Spec: &structpb.Struct{Fields: map[string]*structpb.Value{"enabled": structpb.NewBoolValue(true)}}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	branch := res.Msg.GetResult().GetBranch()
	if !strings.HasPrefix(branch, "cup/") {
		t.Fatalf("branch %q", branch)
	}
	second := writeFile(t, t.TempDir(), "svc.json", `{"apiVersion": "apps.cup.dev/v1alpha1", "kind": "Service", "metadata": {"name": "cache"}, "spec": {"image": "redis:7", "replicas": 1}}`)
	if got := ok(t, url, "apply", "-f", second, "--change-set", branch); !strings.HasPrefix(got, "services.apps.cup.dev/cache created\ncommitted ") {
		t.Fatalf("got %q", got)
	}
	for _, name := range []string{"flags/beta-banner", "services/cache"} {
		ok(t, url, "get", name, "--revision", branch)
		fails(t, url, "not found", "get", name)
	}
	fails(t, url, "change set", "apply", "-f", second, "--change-set", "cup/nope")
	fails(t, url, "use one", "apply", "-f", second, "--change-set", branch, "--proposal", "1")
}

// TestWriteHints: a write the server refuses for want of credentials says
// which resource it was about and how to give credentials, as reads do.
func TestWriteHints(t *testing.T) {
	t.Parallel()
	const noCredentials = "no credentials: send a bearer token in the Authorization header"
	// The demo's cupd, answering every write Unauthenticated: discovery
	// works, so that cup gets as far as the write.
	h := newHandler(t)
	ew := connect.NewErrorWriter()
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case cupv1alpha1connect.ResourceServicePutProcedure, cupv1alpha1connect.ResourceServiceDeleteProcedure, cupv1alpha1connect.ResourceServiceApplyProcedure:
			_ = ew.Write(w, r, connect.NewError(connect.CodeUnauthenticated, errors.New(noCredentials)))
			return
		}
		h.ServeHTTP(w, r)
	}))
	file := writeFile(t, t.TempDir(), "flags.yaml", twoFlags)
	const hint = "hint: the server wants credentials: give a bearer token with --token, --token-file, CUP_TOKEN or CUP_TOKEN_FILE, or keep one in a context (cup config set-context NAME --token-file FILE)\n"
	for _, tt := range []struct {
		name     string
		args     []string
		resource string
		code     int
	}{
		{"apply", []string{"apply", "-f", file}, "", 1}, // one batch of two: about neither
		{"apply --atomic=false", []string{"apply", "-f", file, "--atomic=false"}, "flags.flags.cup.dev/beta-banner", 1},
		{"diff", []string{"diff", "-f", file}, "", 2}, // one dry run of two: about neither; 1 says something differs
		{"delete", []string{"delete", "flags", "dark-mode"}, "flags.flags.cup.dev/dark-mode", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := cup(t, url, "", tt.args...)
			want := "error: " + tt.resource + ": " + noCredentials + "\n" + hint
			if tt.resource == "" {
				want = "error: " + noCredentials + "\n" + hint
			}
			if r.code != tt.code || r.stdout != "" || r.stderr != want {
				t.Errorf("exit %d, stdout %q\nstderr: %q\nwant:   %q", r.code, r.stdout, r.stderr, want)
			}
		})
	}
}
