package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/scm/github/githubtest"
	"github.com/cup-dev/cup/scm/scmtest"
)

const proposalsPath = "/apis/cup.dev/v1alpha1/proposals"

type proposalJSON struct {
	ID, URL, Title, State, Branch, Base string
	Resources                           []struct{ Group, Plural, Namespace, Name string }
}

// startWithGitHub runs cupd over the demo remote with proposals on a fake
// GitHub, and returns cupd's URL, the remote's directory and the fake.
func startWithGitHub(t *testing.T, extra ...string) (string, string, *githubtest.Fake) {
	t.Helper()
	dir, remote := serveDemoRemote(t)
	fake := githubtest.NewFake(t, "acme", "config")
	fake.LinkRepository(dir)
	t.Setenv("CUPD_GIT_TOKEN", "s3cret")
	t.Setenv("CUPD_SCM_TOKEN", "gh-token")
	url, _, _ := start(t, append([]string{"--address", "127.0.0.1:0", "--repository", remote, "--git-user", "alice",
		"--fetch-interval", "0", "--scm", "github", "--scm-url", fake.URL(), "--scm-repository", "acme/config",
		"--proposal-labels", "cup,config", "--webhook-secret", "hook"}, extra...)...)
	return url, dir, fake
}

func pullRequests(fake *githubtest.Fake) []scmtest.Request {
	var out []scmtest.Request
	for _, r := range fake.Requests() {
		if r.Method == "POST" && strings.HasSuffix(r.Path, "/repos/acme/config/pulls") {
			out = append(out, r)
		}
	}
	return out
}

func putFlagKeyed(t *testing.T, url, key string, rollout int) (int, map[string]any) {
	t.Helper()
	code, body := do(t, "PUT", url+flagPath, fmt.Sprintf(`{"spec": {"description": "x", "enabled": true, "rollout": %d}}`, rollout), "Idempotency-Key", key)
	var out map[string]any
	_ = json.Unmarshal([]byte(body), &out)
	if out == nil {
		out = map[string]any{"raw": body}
	}
	return code, out
}

// TestProposalsEndToEnd: a Put becomes a branch on the remote and a pull
// request on GitHub; the API lists it; a retry opens no second one; a
// merge on GitHub shows as merged once the webhook arrives.
func TestProposalsEndToEnd(t *testing.T) {
	url, dir, fake := startWithGitHub(t)
	main, _ := gitrepo.Resolve(dir, "main")

	code, res := putFlagKeyed(t, url, "e2e-1", 60)
	if code != http.StatusAccepted {
		t.Fatalf("PUT = %d %v", code, res)
	}
	result := res["result"].(map[string]any)
	prop, _ := result["proposal"].(map[string]any)
	if prop == nil || prop["id"] != "1" || !strings.Contains(prop["url"].(string), "/acme/config/pull/1") {
		t.Fatalf("write result %v", result)
	}
	branch := result["branch"].(string)
	if head, err := gitrepo.Resolve(dir, branch); err != nil || head != result["commit"] {
		t.Errorf("remote %s at %s (%v), want %s", branch, head, err, result["commit"])
	}
	if now, _ := gitrepo.Resolve(dir, "main"); now != main {
		t.Error("main moved")
	}
	pulls := pullRequests(fake)
	if len(pulls) != 1 {
		t.Fatalf("%d pull requests opened", len(pulls))
	}
	var sent struct{ Title, Head, Base, Body string }
	if err := json.Unmarshal(pulls[0].Body, &sent); err != nil {
		t.Fatal(err)
	}
	if sent.Head != branch || sent.Base != "main" || !strings.Contains(sent.Title, "new-checkout") ||
		!strings.Contains(sent.Body, "| default | new-checkout |") || pulls[0].Header.Get("Authorization") != "Bearer gh-token" {
		t.Errorf("pull request sent %+v with %q", sent, pulls[0].Header.Get("Authorization"))
	}

	// The same write again, with the same key: the same proposal.
	code, again := putFlagKeyed(t, url, "e2e-1", 60)
	if code != http.StatusAccepted || again["result"].(map[string]any)["proposal"].(map[string]any)["id"] != "1" {
		t.Fatalf("retry = %d %v", code, again)
	}
	if n := len(pullRequests(fake)); n != 1 {
		t.Errorf("%d pull requests after a retry", n)
	}

	var list struct{ Proposals []proposalJSON }
	code, body := get(t, url+proposalsPath+"?state=open&plural=flags&namespace=default&name=new-checkout")
	if err := json.Unmarshal([]byte(body), &list); err != nil || code != 200 || len(list.Proposals) != 1 {
		t.Fatalf("list = %d %s", code, body)
	}
	if p := list.Proposals[0]; p.Branch != branch || p.State != "PROPOSAL_STATE_OPEN" || len(p.Resources) != 1 || p.Resources[0].Name != "new-checkout" {
		t.Errorf("listed %+v", p)
	}
	code, body = do(t, "POST", url+"/cup.v1alpha1.ResourceService/Get",
		`{"group":"flags.cup.dev","version":"v1alpha1","plural":"flags","namespace":"default","name":"new-checkout"}`, "Content-Type", "application/json")
	if code != 200 || !strings.Contains(body, `"proposals":[{"id":"1"`) {
		t.Errorf("Get of the resource = %d %s, want it to name proposal 1", code, body)
	}

	fake.Merge(t, "1")
	if code, _ := do(t, "POST", url+"/hooks/scm", "{}", "Authorization", "Bearer hook"); code != http.StatusNoContent {
		t.Fatalf("SCM webhook = %d", code)
	}
	code, body = get(t, url+proposalsPath+"/1")
	if code != 200 || !strings.Contains(body, `"state":"PROPOSAL_STATE_MERGED"`) {
		t.Errorf("get = %d %s", code, body)
	}
	if code, body := get(t, url+proposalsPath+"?state=open"); code != 200 || strings.Contains(body, `"id"`) {
		t.Errorf("open proposals after the merge = %d %s", code, body)
	}
	if code, body := get(t, url+"/metrics"); code != 200 || !strings.Contains(body, `cup_scm_rate_limit_remaining{provider="github"}`) {
		t.Errorf("metrics = %d, lack the rate-limit budget", code)
	}
}

// TestProposalsSCMFailsAfterPush: the SCM fails after the branch was
// pushed; the answer is UNAVAILABLE naming the branch, and the retry opens
// the proposal for that same branch.
func TestProposalsSCMFailsAfterPush(t *testing.T) {
	url, dir, fake := startWithGitHub(t)
	fake.SetFault(scmtest.FaultServerError, -1, 0)
	code, res := putFlagKeyed(t, url, "e2e-2", 70)
	if code != http.StatusServiceUnavailable || !strings.Contains(fmt.Sprint(res["message"]), "cup/") {
		t.Fatalf("PUT with the SCM failing = %d %v, want 503 naming the pushed branch", code, res)
	}
	fake.SetFault(scmtest.FaultNone, 0, 0)
	code, res = putFlagKeyed(t, url, "e2e-2", 70)
	if code != http.StatusAccepted {
		t.Fatalf("retry = %d %v", code, res)
	}
	branch := res["result"].(map[string]any)["branch"].(string)
	if n := len(pullRequests(fake)); n != 1 {
		t.Errorf("%d pull requests opened, want 1", n)
	}
	out, err := gitrepo.Log(dir, branch)
	if err != nil || len(out) < 2 {
		t.Fatalf("branch %s: %v", branch, err)
	}
	heads := 0
	files, _ := gitrepo.Files(dir, branch)
	if strings.Contains(string(files["flags/default/new-checkout.yaml"]), "rollout: 70") {
		heads++
	}
	if heads != 1 {
		t.Error("the change set lacks the write")
	}
}

// TestProposalsSCMDownAtStart: cupd starts and serves reads with the SCM
// unreachable; writes answer UNAVAILABLE.
func TestProposalsSCMDownAtStart(t *testing.T) {
	_, remote := serveDemoRemote(t)
	t.Setenv("CUPD_GIT_TOKEN", "s3cret")
	t.Setenv("CUPD_SCM_TOKEN", "gh-token")
	url, _, _ := start(t, "--address", "127.0.0.1:0", "--repository", remote, "--git-user", "alice",
		"--fetch-interval", "0", "--scm", "github", "--scm-url", "http://127.0.0.1:1/api/v3/", "--scm-repository", "acme/config")
	if code, _ := get(t, url+"/readyz"); code != 200 {
		t.Fatalf("/readyz = %d", code)
	}
	if code, _ := get(t, url+flagPath); code != 200 {
		t.Fatalf("GET = %d", code)
	}
	if code, res := putFlagKeyed(t, url, "e2e-3", 80); code != http.StatusServiceUnavailable {
		t.Fatalf("PUT = %d %v", code, res)
	}
}
