package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/gittest"
	"github.com/cup-dev/cup/internal/servertest"
)

const flagPath = "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/new-checkout"

// serveDemo serves the demo repository over smart HTTP with basic
// authentication (alice, s3cret) and returns the server, to make it fail,
// and the repository's directory and URL.
func serveDemo(t *testing.T) (srv *gittest.Server, dir, url string) {
	t.Helper()
	srv = gittest.NewDemo(t, gittest.WithBasicAuth("alice", "s3cret"))
	return srv, srv.Path(gittest.Demo), srv.URL(gittest.Demo)
}

// serveDemoRemote is serveDemo without the server.
func serveDemoRemote(t *testing.T) (dir, url string) {
	t.Helper()
	_, dir, url = serveDemo(t)
	return dir, url
}

// do sends a request with the test's context, headers as name, value
// pairs, and returns the answer's status and body.
func do(t testing.TB, method, url, body string, header ...string) (int, string) {
	t.Helper()
	r := servertest.Do(t, method, url, body, header...)
	return r.Status, r.Body
}

// TestServeRemote serves a remote repository: reads come from the clone,
// a webhook call makes a commit pushed behind cupd's back visible, and a
// write is pushed to the remote.
func TestServeRemote(t *testing.T) {
	dir, remote := serveDemoRemote(t)
	t.Setenv("CUPD_GIT_TOKEN", "s3cret")
	url, _, _ := start(t, "--address", "127.0.0.1:0", "--repository", remote, "--git-user", "alice",
		"--fetch-interval", "0", "--webhook-secret", "hook", "--cache-dir", t.TempDir())
	if code, body := get(t, url+"/readyz"); code != 200 {
		t.Fatalf("/readyz = %d %s", code, body)
	}
	if code, body := get(t, url+flagPath); code != 200 || !strings.Contains(body, `"rollout":50`) {
		t.Fatalf("GET = %d %s", code, body)
	}

	changed := strings.Replace(readFlag(t, dir), "rollout: 50", "rollout: 75", 1)
	if _, err := gitrepo.Commit(dir, "main", map[string][]byte{"flags/default/new-checkout.yaml": []byte(changed)}, "elsewhere\n"); err != nil {
		t.Fatal(err)
	}
	if code, _ := do(t, "POST", url+"/hooks/fetch", ""); code != http.StatusUnauthorized {
		t.Errorf("webhook without the secret = %d, want 401", code)
	}
	if code, body := do(t, "POST", url+"/hooks/fetch", "{}", "X-Gitlab-Token", "hook"); code != http.StatusNoContent {
		t.Fatalf("webhook = %d %s", code, body)
	}
	if code, body := get(t, url+flagPath); code != 200 || !strings.Contains(body, `"rollout":75`) {
		t.Fatalf("GET after the webhook = %d %s", code, body)
	}

	res := putFlag(t, url, 90)
	if head, _ := gitrepo.Resolve(dir, "main"); head != res.Result.Commit || res.Result.Branch != "main" {
		t.Errorf("remote main at %s, response %+v", head, res.Result)
	}
	if !strings.Contains(readFlag(t, dir), "rollout: 90") {
		t.Errorf("remote holds %s", readFlag(t, dir))
	}
	// Start's fetch and the webhook's brought news; the write pushed once.
	_, metrics := get(t, url+"/metrics")
	for _, want := range []string{
		`cup_git_fetches_total{outcome="success"} 2`,
		`cup_git_pushes_total{outcome="success"} 1`,
		`cup_git_pushes_total{outcome="conflict"} 0`,
		`cup_git_fetch_duration_seconds_count 2`,
		`cup_git_push_duration_seconds_count 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestServeRemoteBranchMode writes a change set: a new branch, with main
// left alone, that a second write extends.
func TestServeRemoteBranchMode(t *testing.T) {
	dir, remote := serveDemoRemote(t)
	t.Setenv("CUPD_GIT_TOKEN", "s3cret")
	url, _, _ := start(t, "--address", "127.0.0.1:0", "--repository", remote, "--git-user", "alice",
		"--fetch-interval", "0", "--write-mode", "branch")
	main, _ := gitrepo.Resolve(dir, "main")
	res := putFlag(t, url, 10)
	if !strings.HasPrefix(res.Result.Branch, "cup/") {
		t.Fatalf("branch %q, want cup/...", res.Result.Branch)
	}
	if head, _ := gitrepo.Resolve(dir, res.Result.Branch); head != res.Result.Commit {
		t.Errorf("remote %s at %s, want %s", res.Result.Branch, head, res.Result.Commit)
	}
	if now, _ := gitrepo.Resolve(dir, "main"); now != main {
		t.Errorf("main moved to %s", now)
	}
	if code, body := get(t, url+flagPath+"?revision="+res.Result.Branch); code != 200 || !strings.Contains(body, `"rollout":10`) {
		t.Errorf("GET at the change set = %d %s", code, body)
	}
	if code, body := get(t, url+flagPath); code != 200 || !strings.Contains(body, `"rollout":50`) {
		t.Errorf("GET at main = %d %s", code, body)
	}
}

// writeResult is the part of a REST write's answer the tests look at.
type writeResult struct {
	Result struct{ Commit, Branch string }
}

// putFlag sets the demo flag's rollout through the REST form.
func putFlag(t *testing.T, url string, rollout int) writeResult {
	t.Helper()
	code, body := do(t, "PUT", url+flagPath, fmt.Sprintf(`{"spec": {"description": "From cupd.", "enabled": true, "rollout": %d}}`, rollout))
	if code != http.StatusAccepted {
		t.Fatalf("PUT = %d %s", code, body)
	}
	var res writeResult
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func readFlag(t *testing.T, dir string) string {
	t.Helper()
	files, err := gitrepo.Files(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	return string(files["flags/default/new-checkout.yaml"])
}

// TestTwoServersRaceOnOneResource runs two cupd over one remote; both
// write the same resource at once, each naming the resourceVersion it
// read: one write lands, the other is ABORTED, and nothing else is lost.
func TestTwoServersRaceOnOneResource(t *testing.T) {
	dir, remote := serveDemoRemote(t)
	t.Setenv("CUPD_GIT_TOKEN", "s3cret")
	var urls []string
	for range 2 {
		url, _, _ := start(t, "--address", "127.0.0.1:0", "--repository", remote, "--git-user", "alice", "--fetch-interval", "0")
		urls = append(urls, url)
	}
	res, err := http.Get(urls[0] + flagPath)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	etag := res.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	before, _ := gitrepo.Log(dir, "main")
	codes := make([]int, 2)
	var wg sync.WaitGroup
	for i, url := range urls {
		wg.Go(func() {
			codes[i], _ = do(t, "PUT", url+flagPath, fmt.Sprintf(`{"spec": {"description": "x", "enabled": true, "rollout": %d}}`, i+1), "If-Match", etag)
		})
	}
	wg.Wait()
	slices.Sort(codes)
	if codes[0] != http.StatusAccepted || codes[1] != http.StatusConflict {
		t.Fatalf("statuses %v, want one 202 and one 409", codes)
	}
	if after, _ := gitrepo.Log(dir, "main"); len(after) != len(before)+1 {
		t.Errorf("%d commits after the race, want %d", len(after), len(before)+1)
	}
}

// TestWatchResumeOnReplicaBehind: a watch resuming on a cupd from a commit
// it has not fetched (another replica pushed it; here it is committed on
// the remote) makes cupd fetch, and streams the changes after that
// commit; a revision the remote does not have either stays 410 Gone.
func TestWatchResumeOnReplicaBehind(t *testing.T) {
	dir, remote := serveDemoRemote(t)
	t.Setenv("CUPD_GIT_TOKEN", "s3cret")
	url, _, _ := start(t, "--address", "127.0.0.1:0", "--repository", remote, "--git-user", "alice", "--fetch-interval", "0")
	commitRollout := func(rollout int) string {
		t.Helper()
		changed := regexp.MustCompile(`rollout: \d+`).ReplaceAllString(readFlag(t, dir), fmt.Sprintf("rollout: %d", rollout))
		c, err := gitrepo.Commit(dir, "main", map[string][]byte{"flags/default/new-checkout.yaml": []byte(changed)}, "elsewhere\n")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	behind := commitRollout(75)
	watch := "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags?watch=true&resourceVersion="
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url+watch+behind, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("watch from a commit on the remote, not yet fetched = %d %s, want 200", res.StatusCode, b)
	}
	events := bufio.NewReader(res.Body)
	line, err := events.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(line, `{"type":"BOOKMARK"`) || !strings.Contains(line, `"commit":"`+behind+`"`) {
		t.Errorf("first event %s, want the BOOKMARK at %s the watch starts from", line, behind)
	}
	// The change after it reaches the watch with the next fetch.
	next := commitRollout(80)
	if code, body := do(t, "POST", url+"/hooks/fetch", ""); code != http.StatusNoContent {
		t.Fatalf("webhook = %d %s", code, body)
	}
	if line, err = events.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(line, `{"type":"MODIFIED"`) || !strings.Contains(line, `"rollout":80`) || !strings.Contains(line, `"commit":"`+next+`"`) {
		t.Errorf("next event %s, want MODIFIED with rollout 80 at %s", line, next)
	}
	if code, body := get(t, url+watch+strings.Repeat("0", 40)); code != http.StatusGone {
		t.Fatalf("watch from a commit nobody has = %d %s, want 410", code, body)
	}
	_, metrics := get(t, url+"/metrics")
	if !strings.Contains(metrics, `cup_server_watch_catch_ups_total{outcome="fetched"} `) {
		t.Errorf("/metrics counts no catch-up:\n%s", metrics)
	}
}
