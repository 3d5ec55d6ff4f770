package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/scm/gitea/giteatest"
	"github.com/cup-dev/cup/scm/github/githubtest"
	"github.com/cup-dev/cup/scm/gitlab/gitlabtest"
	"github.com/cup-dev/cup/scm/scmtest"
)

const proposalsPath = "/apis/cup.dev/v1alpha1/proposals"

type proposalJSON struct {
	ID, URL, Title, State, Branch, Base string
	Resources                           []struct{ Group, Plural, Namespace, Name string }
}

// host is a fake SCM and how to recognise its "open a proposal" calls.
type host struct {
	name string
	fake scmtest.Fake
	// opens reports whether a recorded call opens a proposal.
	opens func(r scmtest.Request) bool
}

func newHost(t *testing.T, name string) host {
	t.Helper()
	switch name {
	case "github":
		return host{name, githubtest.NewFake(t, "acme", "config"), func(r scmtest.Request) bool {
			return r.Method == "POST" && strings.HasSuffix(r.Path, "/repos/acme/config/pulls")
		}}
	case "gitlab":
		return host{name, gitlabtest.NewFake(t, "acme/config"), func(r scmtest.Request) bool {
			return r.Method == "POST" && strings.HasSuffix(r.Path, "/merge_requests")
		}}
	default:
		return host{name, giteatest.NewFake(t, "acme", "config"), func(r scmtest.Request) bool {
			return r.Method == "POST" && strings.HasSuffix(r.Path, "/repos/acme/config/pulls")
		}}
	}
}

// opened returns the calls that opened proposals.
func (h host) opened() []scmtest.Request {
	var out []scmtest.Request
	for _, r := range h.fake.Requests() {
		if h.opens(r) {
			out = append(out, r)
		}
	}
	return out
}

// startWithSCM runs cupd over the demo remote with proposals on a fake
// host, and returns cupd's URL and the remote's directory.
func startWithSCM(t *testing.T, h host, extra ...string) (string, string) {
	t.Helper()
	dir, remote := serveDemoRemote(t)
	h.fake.LinkRepository(dir)
	t.Setenv("CUPD_GIT_TOKEN", "s3cret")
	t.Setenv("CUPD_SCM_TOKEN", "scm-token")
	url, _, _ := start(t, append([]string{"--address", "127.0.0.1:0", "--repository", remote, "--git-user", "alice",
		"--fetch-interval", "0", "--scm", h.name, "--scm-url", h.fake.URL(), "--scm-repository", "acme/config",
		"--proposal-labels", "cup,config", "--webhook-secret", "hook"}, extra...)...)
	return url, dir
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

// TestProposalsEndToEnd, on each host: a Put becomes a branch on the
// remote and a proposal on the host; the API lists it; a retry opens no
// second one; a merge on the host shows as merged once the webhook
// arrives.
func TestProposalsEndToEnd(t *testing.T) {
	for _, name := range []string{"github", "gitlab", "gitea"} {
		t.Run(name, func(t *testing.T) { testProposalsEndToEnd(t, newHost(t, name)) })
	}
}

func testProposalsEndToEnd(t *testing.T, h host) {
	url, dir := startWithSCM(t, h)
	main, _ := gitrepo.Resolve(dir, "main")

	code, res := putFlagKeyed(t, url, "e2e-1", 60)
	if code != http.StatusAccepted {
		t.Fatalf("PUT = %d %v", code, res)
	}
	result := res["result"].(map[string]any)
	prop, _ := result["proposal"].(map[string]any)
	if prop == nil || prop["id"] != "1" || !strings.Contains(fmt.Sprint(prop["url"]), "acme/config") {
		t.Fatalf("write result %v", result)
	}
	branch := result["branch"].(string)
	if head, err := gitrepo.Resolve(dir, branch); err != nil || head != result["commit"] {
		t.Errorf("remote %s at %s (%v), want %s", branch, head, err, result["commit"])
	}
	if now, _ := gitrepo.Resolve(dir, "main"); now != main {
		t.Error("main moved")
	}
	opened := h.opened()
	if len(opened) != 1 {
		t.Fatalf("%d proposals opened", len(opened))
	}
	sent := string(opened[0].Body)
	for _, want := range []string{branch, `"main"`, "new-checkout", `| default | new-checkout |`} {
		if !strings.Contains(sent, want) {
			t.Errorf("the call opening the proposal lacks %q: %s", want, sent)
		}
	}
	if got := opened[0].Header.Get("Authorization"); got != "Bearer scm-token" {
		t.Errorf("Authorization %q", got)
	}

	// The same write again, with the same key: the same proposal.
	code, again := putFlagKeyed(t, url, "e2e-1", 60)
	if code != http.StatusAccepted || again["result"].(map[string]any)["proposal"].(map[string]any)["id"] != "1" {
		t.Fatalf("retry = %d %v", code, again)
	}
	if n := len(h.opened()); n != 1 {
		t.Errorf("%d proposals after a retry", n)
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

	h.fake.Merge(t, "1")
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
	if code, body := get(t, url+"/metrics"); code != 200 || !strings.Contains(body, `cup_scm_requests_total{code="201",provider="`+h.name+`"}`) {
		t.Errorf("metrics = %d, lack the SCM's requests", code)
	}
}

// TestProposalsSCMFailsAfterPush: the SCM fails after the branch was
// pushed; the answer has the fault's code and names the branch, and the
// retry opens the proposal for that same branch, once.
func TestProposalsSCMFailsAfterPush(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault scmtest.Fault
		code  int
	}{
		{"5xx", scmtest.FaultServerError, http.StatusServiceUnavailable},
		{"401", scmtest.FaultUnauthorized, http.StatusServiceUnavailable},
		{"403", scmtest.FaultForbidden, http.StatusServiceUnavailable},
		{"rate-limited", scmtest.FaultRateLimited, http.StatusServiceUnavailable},
		{"422", scmtest.FaultInvalid, http.StatusBadRequest},
		{"timeout", scmtest.FaultTimeout, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, "github")
			url, dir := startWithSCM(t, h, "--scm-timeout", "300ms")
			key := "e2e-" + tc.name
			h.fake.SetFault(tc.fault, -1, time.Hour) // a rate limit resetting in an hour is not waited for
			code, res := putFlagKeyed(t, url, key, 70)
			if code != tc.code || !strings.Contains(fmt.Sprint(res["message"]), "cup/") {
				t.Fatalf("PUT with the SCM failing = %d %v, want %d naming the pushed branch", code, res, tc.code)
			}
			if strings.Contains(fmt.Sprint(res), "scm-token") {
				t.Error("the answer shows the token")
			}
			h.fake.SetFault(scmtest.FaultNone, 0, 0)
			code, res = putFlagKeyed(t, url, key, 70)
			if code != http.StatusAccepted {
				t.Fatalf("retry = %d %v", code, res)
			}
			branch := res["result"].(map[string]any)["branch"].(string)
			if n := len(h.opened()); n != 1 {
				t.Errorf("%d proposals opened, want 1", n)
			}
			files, _ := gitrepo.Files(dir, branch)
			if !strings.Contains(string(files["flags/default/new-checkout.yaml"]), "rollout: 70") {
				t.Error("the change set lacks the write")
			}
		})
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

// TestProposalsCostPerWrite: on each host, the calls a proposal write and
// a pull request webhook make do not grow with the number of proposals:
// no write lists the proposals, and a webhook naming one reads that one.
func TestProposalsCostPerWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("slow (counts SCM calls over many proposal writes per host): runs without -short")
	}
	for _, name := range []string{"github", "gitlab", "gitea"} {
		t.Run(name, func(t *testing.T) {
			h := newHost(t, name)
			// No periodic read of the proposals during the count: on a
			// loaded machine the writes outlast the default 30 s.
			url, _ := startWithSCM(t, h, "--proposals-refresh", "1h")
			const n = 40
			var last string
			lists := func() (n int) {
				for _, r := range h.fake.Requests() {
					q, _ := neturl.ParseQuery(r.Query)
					if r.Method == "GET" && (strings.HasSuffix(r.Path, "/pulls") || strings.HasSuffix(r.Path, "/merge_requests")) &&
						q.Get("head") == "" && q.Get("source_branch") == "" {
						n++
					}
				}
				return n
			}
			// cupd reads every proposal once when it starts, in the
			// background: count from after that read.
			for deadline := time.Now().Add(10 * time.Second); lists() == 0; {
				if time.Now().After(deadline) {
					t.Fatal("cupd did not read the proposals when it started")
				}
				time.Sleep(10 * time.Millisecond)
			}
			before, calls := lists(), len(h.fake.Requests())
			for i := range n {
				code, out := do(t, "PUT", url+fmt.Sprintf("/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/cost-%02d", i),
					fmt.Sprintf(`{"spec": {"description": "cost", "enabled": true, "rollout": %d}}`, i))
				if code != http.StatusAccepted {
					t.Fatalf("PUT %d = %d %s", i, code, out)
				}
				var res map[string]any
				_ = json.Unmarshal([]byte(out), &res)
				last = res["result"].(map[string]any)["proposal"].(map[string]any)["id"].(string)
			}
			if got := lists() - before; got != 0 {
				t.Errorf("%d writes listed all proposals %d times, want 0", n, got)
			}
			t.Logf("%s: %d SCM calls for %d proposal writes", name, len(h.fake.Requests())-calls, n)

			h.fake.Merge(t, last)
			before, calls = lists(), len(h.fake.Requests())
			payload := fmt.Sprintf(`{"action":"closed","number":%[1]s,"pull_request":{"number":%[1]s,"merged":true}}`, last)
			if name == "gitlab" {
				payload = fmt.Sprintf(`{"object_kind":"merge_request","object_attributes":{"iid":%s,"action":"merge"}}`, last)
			}
			if code, _ := do(t, "POST", url+"/hooks/scm", payload, "Authorization", "Bearer hook"); code != http.StatusNoContent {
				t.Fatalf("SCM webhook = %d", code)
			}
			if got, calls := lists()-before, len(h.fake.Requests())-calls; got != 0 || calls != 1 {
				t.Errorf("a webhook naming one proposal made %d calls, %d of them lists; want 1 and 0", calls, got)
			}
			if code, body := get(t, url+proposalsPath+"?state=merged"); code != 200 || !strings.Contains(body, `"id":"`+last+`"`) {
				t.Errorf("merged proposals after the webhook = %d %s", code, body)
			}
		})
	}
}
