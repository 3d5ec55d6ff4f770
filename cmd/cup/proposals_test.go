package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/gittest"
	"github.com/cup-dev/cup/scm/github/githubtest"
)

// scmTokenEnv holds the fake GitHub's token; TestMain sets it.
const scmTokenEnv = "CUP_TEST_SCM_TOKEN"

// newProposingServer starts a cupd over the demo, served as a remote over
// smart HTTP on 127.0.0.1, proposing every write on a fake GitHub.
func newProposingServer(t *testing.T) string {
	t.Helper()
	srv := gittest.NewDemo(t, gittest.WithBasicAuth("alice", "s3cret"))
	dir := srv.Path(gittest.Demo)
	fake := githubtest.NewFake(t, "acme", "config")
	fake.LinkRepository(dir)
	url := newServer(t, func(o *app.Options) {
		o.Repository = srv.URL(gittest.Demo)
		o.Remote = app.Remote{User: "alice", Token: "s3cret", FetchInterval: -1}
		o.SCM = app.SCM{Provider: "github", URL: fake.URL(), Repository: "acme/config", TokenEnv: scmTokenEnv}
	})
	return url
}

func TestProposalsWithSCM(t *testing.T) {
	t.Parallel()
	url := newProposingServer(t)
	file := writeFile(t, t.TempDir(), "flag.yaml", "apiVersion: flags.cup.dev/v1alpha1\nkind: Flag\nmetadata: {name: beta-banner}\nspec: {enabled: true}\n")
	got := ok(t, url, "apply", "-f", file)
	if !regexp.MustCompile(`^flags\.flags\.cup\.dev/beta-banner created\nproposed \S+acme/config\S*/1\n$`).MatchString(got) {
		t.Fatalf("got %q", got)
	}
	list := ok(t, url, "proposals")
	if !regexp.MustCompile(`(?m)^ID\s+STATE\s+BRANCH\s+URL\n1\s+open\s+cup/\S+\s+\S+$`).MatchString(list) {
		t.Fatalf("proposals:\n%s", list)
	}
	if y := ok(t, url, "proposals", "get", "1"); !strings.Contains(y, "state: PROPOSAL_STATE_OPEN") || !strings.Contains(y, "branch: cup/") {
		t.Fatalf("proposals get:\n%s", y)
	}
	// --proposal adds a write to the proposal's change set: the same proposal.
	svc := writeFile(t, t.TempDir(), "svc.json", `{"apiVersion": "apps.cup.dev/v1alpha1", "kind": "Service", "metadata": {"name": "cache"}, "spec": {"image": "redis:7", "replicas": 1}}`)
	if got := ok(t, url, "apply", "-f", svc, "--proposal", "1"); !strings.HasSuffix(got, "/1\n") {
		t.Fatalf("got %q", got)
	}
	if list := ok(t, url, "proposals", "--state", "open", "-o", "json"); strings.Count(list, `"id"`) != 1 {
		t.Fatalf("proposals:\n%s", list)
	}
	fails(t, url, "", "apply", "-f", svc, "--proposal", "99")
}
