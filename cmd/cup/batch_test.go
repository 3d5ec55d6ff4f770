package main

import (
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/gitrepo"
)

// repoServer is a cupd on a copy of the demo repository, with the
// repository, to count the commits a command made.
type repoServer struct {
	url, repo string
}

func newRepoServer(t *testing.T) *repoServer {
	t.Helper()
	a, err := app.Open(t.Context(), app.Options{Logger: slog.New(slog.NewTextHandler(t.Output(), nil)), WASMRuntime: testWASM})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return &repoServer{url: serve(t, a.Handler()), repo: a.Repository()}
}

// log is the first-parent history of main, newest first.
func (s *repoServer) log(t *testing.T) []gitrepo.CommitInfo {
	t.Helper()
	log, err := gitrepo.Log(s.repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	return log
}

const threeResources = `apiVersion: flags.cup.dev/v1alpha1
kind: Flag
metadata: {name: beta-banner}
spec: {enabled: true, rollout: 10}
---
apiVersion: flags.cup.dev/v1alpha1
kind: Flag
metadata: {name: beta-banner, namespace: staging}
spec: {enabled: false}
---
apiVersion: apps.cup.dev/v1alpha1
kind: Service
metadata: {name: cache, namespace: staging}
spec: {image: "redis:7", replicas: 1}
`

func TestApplyIsOneCommit(t *testing.T) {
	t.Parallel()
	s := newRepoServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "a/three.yaml", threeResources)
	writeFile(t, dir, "b/search.yaml", "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: search-v2, namespace: default}\nspec: {enabled: false}\n")
	before := len(s.log(t))
	got := ok(t, s.url, "apply", "-f", dir)
	if !regexp.MustCompile(`^flags\.flags\.cup\.dev/beta-banner created
flags\.flags\.cup\.dev/beta-banner created
services\.apps\.cup\.dev/cache created
flags\.flags\.cup\.dev/search-v2 configured
committed ([0-9a-f]{7})
$`).MatchString(got) {
		t.Fatalf("got %q", got)
	}
	log := s.log(t)
	if len(log) != before+1 || !strings.HasPrefix(got[strings.LastIndex(got, " ")+1:], log[0].ID[:7]) ||
		!strings.HasPrefix(log[0].Message, "Apply 4 resources\n\nput Flag default/beta-banner") {
		t.Fatalf("%d commits after %d; newest %s %q", len(log), before, log[0].ID, log[0].Message)
	}
	if got := ok(t, s.url, "get", "services", "cache", "-n", "staging", "-o", "name"); got != "services.apps.cup.dev/cache\n" {
		t.Fatalf("got %q", got)
	}
	// Again: nothing to write.
	if got := ok(t, s.url, "apply", "-f", dir); got != "flags.flags.cup.dev/beta-banner unchanged\nflags.flags.cup.dev/beta-banner unchanged\nservices.apps.cup.dev/cache unchanged\nflags.flags.cup.dev/search-v2 unchanged\n" {
		t.Fatalf("got %q", got)
	}
	if n := len(s.log(t)); n != before+1 {
		t.Fatalf("an unchanged apply made a commit: %d", n)
	}
}

func TestApplyAllOrNothing(t *testing.T) {
	t.Parallel()
	s := newRepoServer(t)
	file := writeFile(t, t.TempDir(), "mixed.yaml", `apiVersion: flags.cup.dev/v1alpha1
kind: Flag
metadata: {name: good}
spec: {enabled: true}
---
apiVersion: flags.cup.dev/v1alpha1
kind: Flag
metadata: {name: bad}
spec: {enabled: true, rollout: 101}
`)
	head := s.log(t)[0].ID
	r := cup(t, s.url, "", "apply", "-f", file)
	if r.code != 1 || r.stdout != "" || !strings.HasPrefix(r.stderr, "error: flags.flags.cup.dev/bad: items[1].put.resource.spec.rollout: schema violation: ") {
		t.Fatalf("%+v", r)
	}
	if s.log(t)[0].ID != head {
		t.Fatal("a failed batch wrote a commit")
	}
	fails(t, s.url, "not found", "get", "flags", "good")

	// --atomic=false writes one by one, and stops at the bad one: the good
	// one is written, in a commit of its own.
	r = cup(t, s.url, "", "apply", "-f", file, "--atomic=false", "--idempotency-key", "k")
	if r.code != 1 || !regexp.MustCompile(`^flags\.flags\.cup\.dev/good committed [0-9a-f]{7}\n$`).MatchString(r.stdout) ||
		!strings.HasPrefix(r.stderr, "error: flags.flags.cup.dev/bad: resource.spec.rollout: schema violation") {
		t.Fatalf("%+v", r)
	}
	log := s.log(t)
	if log[1].ID != head || !strings.Contains(log[0].Message, "Cup-Idempotency-Key: k-1") {
		t.Fatalf("newest commits %q, %q", log[0].Message, log[1].ID)
	}
}

func TestApplyAtomicFalse(t *testing.T) {
	t.Parallel()
	s := newRepoServer(t)
	file := writeFile(t, t.TempDir(), "three.yaml", threeResources)
	before := len(s.log(t))
	got := ok(t, s.url, "apply", "-f", file, "--atomic=false")
	if !regexp.MustCompile(`^flags\.flags\.cup\.dev/beta-banner committed [0-9a-f]{7}
flags\.flags\.cup\.dev/beta-banner committed [0-9a-f]{7}
services\.apps\.cup\.dev/cache committed [0-9a-f]{7}
$`).MatchString(got) {
		t.Fatalf("got %q", got)
	}
	if n := len(s.log(t)); n != before+3 {
		t.Fatalf("%d commits after %d, want one per resource", n, before)
	}
}

func TestApplyNamespaceMismatch(t *testing.T) {
	t.Parallel()
	s := newRepoServer(t)
	file := writeFile(t, t.TempDir(), "staging.yaml", "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: x, namespace: staging}\nspec: {enabled: true}\n")
	want := `error: the namespace from the provided object "staging" does not match the namespace "production". You must pass '--namespace=staging' to perform this operation.` + "\n"
	for _, cmd := range []string{"apply", "create", "delete", "diff"} {
		r := cup(t, s.url, "", cmd, "-f", file, "-n", "production")
		if r.code == 0 || r.stdout != "" || r.stderr != want {
			t.Fatalf("cup %s: %+v", cmd, r)
		}
	}
	// The namespace that agrees, or none, is fine.
	ok(t, s.url, "apply", "-f", file, "-n", "staging")
	ok(t, s.url, "get", "flags", "x", "-n", "staging")
}

func TestCreate(t *testing.T) {
	t.Parallel()
	s := newRepoServer(t)
	dir := t.TempDir()
	fresh := writeFile(t, dir, "fresh.yaml", "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: fresh}\nspec: {enabled: true}\n")
	got := ok(t, s.url, "create", "-f", fresh)
	if !regexp.MustCompile(`^flags\.flags\.cup\.dev/fresh created\ncommitted [0-9a-f]{7}\n$`).MatchString(got) {
		t.Fatalf("got %q", got)
	}
	head := s.log(t)[0].ID
	writeFile(t, dir, "other.yaml", "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: other}\nspec: {enabled: true}\n")
	r := cup(t, s.url, "", "create", "-f", dir)
	if r.code != 1 || r.stdout != "" ||
		r.stderr != "error: flags.flags.cup.dev/fresh: items[0] (flags.flags.cup.dev default/fresh): flag \"fresh\" already exists in namespace \"default\": a create never replaces a resource; apply it to replace it\n" {
		t.Fatalf("%+v", r)
	}
	if s.log(t)[0].ID != head {
		t.Fatal("a failed create wrote a commit")
	}
	fails(t, s.url, "not found", "get", "flags", "other")
	fails(t, s.url, `flags.flags.cup.dev/fresh: flag "fresh" already exists`, "create", "-f", fresh, "--atomic=false")
}

func TestDeleteSelected(t *testing.T) {
	t.Parallel()
	s := newRepoServer(t)
	before := len(s.log(t))
	got := ok(t, s.url, "delete", "flags", "-l", "team=payments", "-A")
	if !regexp.MustCompile(`^flags\.flags\.cup\.dev/new-checkout deleted
flags\.flags\.cup\.dev/new-checkout deleted
flags\.flags\.cup\.dev/new-checkout deleted
committed [0-9a-f]{7}
$`).MatchString(got) {
		t.Fatalf("got %q", got)
	}
	if n := len(s.log(t)); n != before+1 {
		t.Fatalf("%d commits after %d", n, before)
	}
	if got := ok(t, s.url, "get", "flags", "-A", "-o", "name"); got != "flags.flags.cup.dev/dark-mode\nflags.flags.cup.dev/search-v2\nflags.flags.cup.dev/dark-mode\n" {
		t.Fatalf("left %q", got)
	}
	got = ok(t, s.url, "delete", "flags", "--all", "-n", "staging")
	if !regexp.MustCompile(`^flags\.flags\.cup\.dev/dark-mode deleted\ncommitted [0-9a-f]{7}\n$`).MatchString(got) {
		t.Fatalf("got %q", got)
	}
	r := cup(t, s.url, "", "delete", "flags", "--all", "-n", "staging")
	if r.code != 0 || r.stdout != "" || r.stderr != "No resources found in namespace staging.\n" {
		t.Fatalf("%+v", r)
	}
	// --ignore-not-found: nothing printed for what is not there.
	r = cup(t, s.url, "", "delete", "flags", "nope", "--ignore-not-found")
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("%+v", r)
	}
	got = ok(t, s.url, "delete", "flags", "nope", "dark-mode", "--ignore-not-found")
	if !regexp.MustCompile(`^flags\.flags\.cup\.dev/dark-mode deleted\ncommitted [0-9a-f]{7}\n$`).MatchString(got) {
		t.Fatalf("got %q", got)
	}
	if got := ok(t, s.url, "delete", "flags", "nope", "--ignore-not-found", "--atomic=false"); got != "" {
		t.Fatalf("got %q", got)
	}
	fails(t, s.url, "-l and --all both select resources", "delete", "flags", "-l", "a=b", "--all")
	fails(t, s.url, "cannot be used with named resources", "delete", "flags", "x", "--all")
	fails(t, s.url, "-l, --all and -A select resources: they cannot be used with named resources", "delete", "flags", "x", "-A")
	if n := len(s.log(t)); n != before+3 {
		t.Fatalf("%d commits after %d", n, before)
	}
}

func TestDeleteFiles(t *testing.T) {
	t.Parallel()
	s := newRepoServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: dark-mode}\n---\napiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: dark-mode, namespace: staging}\n")
	writeFile(t, dir, "b.yaml", "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: nope}\n")
	head := s.log(t)[0].ID
	fails(t, s.url, `flags.flags.cup.dev/nope: items[2] (flags.flags.cup.dev default/nope): flag "nope" not found in namespace "default"`, "delete", "-f", dir)
	if s.log(t)[0].ID != head {
		t.Fatal("a failed delete wrote a commit")
	}
	got := ok(t, s.url, "delete", "-f", dir, "--ignore-not-found")
	if !regexp.MustCompile(`^flags\.flags\.cup\.dev/dark-mode deleted\nflags\.flags\.cup\.dev/dark-mode deleted\ncommitted [0-9a-f]{7}\n$`).MatchString(got) {
		t.Fatalf("got %q", got)
	}
	if log := s.log(t); log[1].ID != head {
		t.Fatal("delete -f made more than one commit")
	}
}

func TestApplyTooLargeForOneBatch(t *testing.T) {
	t.Parallel()
	url := serve(t, newHandler(t, func(o *app.Options) { o.MaxRequestBytes = 4 << 10 }))
	var doc strings.Builder
	for i := range 40 {
		fmt.Fprintf(&doc, "---\napiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: f%02d}\nspec: {enabled: true, description: %s}\n", i, strings.Repeat("x", 100))
	}
	file := writeFile(t, t.TempDir(), "many.yaml", doc.String())
	fails(t, url, "a batch of 40 resources is too much for the server at once; pass --atomic=false to write them one by one, or split the files", "apply", "-f", file)
	if got := ok(t, url, "apply", "-f", file, "--atomic=false"); strings.Count(got, " committed ") != 40 {
		t.Fatalf("got %q", got)
	}
}
