package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/gittest"
	"github.com/cup-dev/cup/scm/scmtest"
)

// restError is the body of a failed REST call.
type restError struct{ Code, Message string }

func decodeError(t *testing.T, body string) restError {
	t.Helper()
	var e restError
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return e
}

func putRollout(rollout int) string {
	return fmt.Sprintf(`{"spec": {"description": "From cupd.", "enabled": true, "rollout": %d}}`, rollout)
}

// TestRemoteDownAndBack takes the remote away under a running cupd and
// brings it back: meanwhile reads are served from the last fetch, and
// writes and webhook fetches answer UNAVAILABLE naming the remote, with
// nothing pushed; once it is back, the next fetch and write work.
func TestRemoteDownAndBack(t *testing.T) {
	if testing.Short() {
		t.Skip("slow (cupd against a remote that goes away for seconds): runs without -short")
	}
	srv, dir, remote := serveDemo(t)
	t.Setenv("CUPD_GIT_TOKEN", "s3cret")
	url, _, _ := start(t, "--address", "127.0.0.1:0", "--repository", remote, "--git-user", "alice",
		"--fetch-interval", "0", "--cache-dir", t.TempDir())
	_, flag := get(t, url+flagPath)
	if !strings.Contains(flag, `"rollout":50`) {
		t.Fatalf("GET = %s", flag)
	}
	before := gittest.Refs(t, dir)
	for i, fault := range []gittest.Fault{gittest.FaultRefuse, gittest.FaultUnavailable} {
		t.Run(fault.String(), func(t *testing.T) {
			srv.SetFault(fault)
			defer srv.SetFault(gittest.FaultNone)
			if code, body := get(t, url+flagPath); code != 200 || body != flag {
				t.Errorf("GET with the remote down = %d %s, want the last fetched state", code, body)
			}
			if code, body := get(t, url+"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags"); code != 200 || !strings.Contains(body, "new-checkout") {
				t.Errorf("list with the remote down = %d %s", code, body)
			}
			if code, _ := get(t, url+"/readyz"); code != 200 {
				t.Errorf("/readyz with the remote down = %d, want 200: the cache is served", code)
			}
			if code, body := do(t, "POST", url+"/hooks/fetch", "{}"); code != http.StatusServiceUnavailable {
				t.Errorf("webhook fetch with the remote down = %d %s, want 503", code, body)
			}
			for _, key := range []string{"", fmt.Sprintf("down-%d", i)} {
				var header []string
				if key != "" {
					header = []string{"Idempotency-Key", key}
				}
				code, body := do(t, "PUT", url+flagPath, putRollout(60+i), header...)
				if code != http.StatusServiceUnavailable {
					t.Fatalf("PUT (key %q) with the remote down = %d %s, want 503", key, code, body)
				}
				e := decodeError(t, body)
				if e.Code != "unavailable" || !strings.Contains(e.Message, remote) || strings.Contains(e.Message, "s3cret") {
					t.Errorf("PUT (key %q) answered %+v, want unavailable naming %s and not the token", key, e, remote)
				}
			}
			if after := gittest.Refs(t, dir); after != before {
				t.Errorf("the remote's references changed while it was down:\n%s\nto\n%s", before, after)
			}
		})
	}

	// Back: a commit made meanwhile shows after the webhook, and writes land.
	changed := strings.Replace(readFlag(t, dir), "rollout: 50", "rollout: 55", 1)
	if _, err := gitrepo.Commit(dir, "main", map[string][]byte{"flags/default/new-checkout.yaml": []byte(changed)}, "elsewhere\n"); err != nil {
		t.Fatal(err)
	}
	if code, body := do(t, "POST", url+"/hooks/fetch", "{}"); code != http.StatusNoContent {
		t.Fatalf("webhook fetch with the remote back = %d %s", code, body)
	}
	if code, body := get(t, url+flagPath); code != 200 || !strings.Contains(body, `"rollout":55`) {
		t.Errorf("GET after the fetch = %d %s", code, body)
	}
	log, _ := gitrepo.Log(dir, "main")
	code, body := do(t, "PUT", url+flagPath, putRollout(61), "Idempotency-Key", "down-1")
	if code != http.StatusAccepted {
		t.Fatalf("PUT with the remote back = %d %s", code, body)
	}
	var res writeResult
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	if head, _ := gitrepo.Resolve(dir, "main"); head != res.Result.Commit {
		t.Errorf("remote main at %s, want %s", head, res.Result.Commit)
	}
	if after, _ := gitrepo.Log(dir, "main"); len(after) != len(log)+1 {
		t.Errorf("%d commits after one write, want %d: a write made while the remote was down landed", len(after), len(log)+1)
	}
}

// TestPushRefusedThroughCupd makes the remote refuse a push (a
// pre-receive hook) and then cut one off midway: the caller gets
// FAILED_PRECONDITION with the hook's words, then UNAVAILABLE; nothing
// lands, and the next write does.
func TestPushRefusedThroughCupd(t *testing.T) {
	srv, dir, remote := serveDemo(t)
	t.Setenv("CUPD_GIT_TOKEN", "s3cret")
	url, _, _ := start(t, "--address", "127.0.0.1:0", "--repository", remote, "--git-user", "alice",
		"--fetch-interval", "0", "--cache-dir", t.TempDir())
	before := gittest.Refs(t, dir)

	hook := filepath.Join(dir, "hooks", "pre-receive")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'main is frozen for the release' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, body := do(t, "PUT", url+flagPath, putRollout(70))
	if e := decodeError(t, body); code != http.StatusBadRequest || e.Code != "failed_precondition" || !strings.Contains(e.Message, "main is frozen for the release") {
		t.Errorf("PUT refused by a hook = %d %s, want 400 failed_precondition with the hook's words", code, body)
	}
	if err := os.Remove(hook); err != nil {
		t.Fatal(err)
	}

	srv.SetFault(gittest.FaultCutPush)
	code, body = do(t, "PUT", url+flagPath, putRollout(71), "Idempotency-Key", "cut-1")
	srv.SetFault(gittest.FaultNone)
	if e := decodeError(t, body); code != http.StatusServiceUnavailable || e.Code != "unavailable" {
		t.Errorf("PUT cut off midway = %d %s, want 503 unavailable", code, body)
	}
	if after := gittest.Refs(t, dir); after != before {
		t.Fatalf("the remote's references changed after failed pushes:\n%s\nto\n%s", before, after)
	}
	if code, body := get(t, url+flagPath); code != 200 || !strings.Contains(body, `"rollout":50`) {
		t.Errorf("GET after failed pushes = %d %s, want the old value", code, body)
	}

	log, _ := gitrepo.Log(dir, "main")
	code, body = do(t, "PUT", url+flagPath, putRollout(71), "Idempotency-Key", "cut-1")
	if code != http.StatusAccepted || strings.Contains(body, `"replayed":true`) {
		t.Fatalf("the next PUT = %d %s, want a new commit", code, body)
	}
	if after, _ := gitrepo.Log(dir, "main"); len(after) != len(log)+1 {
		t.Errorf("%d commits after one write, want %d", len(after), len(log)+1)
	}
	if !strings.Contains(readFlag(t, dir), "rollout: 71") {
		t.Errorf("remote holds %s", readFlag(t, dir))
	}
}

// TestProposalsSCMHangs makes the SCM hold every call until cupd gives up
// on it: the write answers UNAVAILABLE naming the pushed branch within the
// configured --scm-timeout (not its 30 s default), and a keyed retry once
// the SCM is back opens exactly one proposal for that branch.
func TestProposalsSCMHangs(t *testing.T) {
	const timeout = time.Second
	h := newHost(t, "github")
	url, dir := startWithSCM(t, h, "--scm-timeout", timeout.String())
	h.fake.SetFault(scmtest.FaultTimeout, -1, 0)
	client := &http.Client{Timeout: time.Minute}
	// The body putFlagKeyed sends, for the retry below.
	req, err := http.NewRequest("PUT", url+flagPath, strings.NewReader(`{"spec": {"description": "x", "enabled": true, "rollout": 80}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", "hang-1")
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("PUT with the SCM hanging: %v", err)
	}
	var e restError
	err = json.NewDecoder(res.Body).Decode(&e)
	res.Body.Close()
	took := time.Since(start)
	t.Logf("answered after %s: %d %+v", took.Round(time.Millisecond), res.StatusCode, e)
	if err != nil || res.StatusCode != http.StatusServiceUnavailable || e.Code != "unavailable" || !strings.Contains(e.Message, "cup/") {
		t.Fatalf("PUT with the SCM hanging = %d %+v (%v), want 503 naming the pushed branch", res.StatusCode, e, err)
	}
	// The push and the SCM call that times out, with room for a loaded
	// machine; far from the 30 s default.
	if took > timeout+10*time.Second {
		t.Errorf("the write answered after %s, with --scm-timeout %s", took, timeout)
	}
	h.fake.SetFault(scmtest.FaultNone, 0, 0)

	code, out := putFlagKeyed(t, url, "hang-1", 80)
	if code != http.StatusAccepted {
		t.Fatalf("retry = %d %v", code, out)
	}
	result := out["result"].(map[string]any)
	branch := result["branch"].(string)
	if !strings.Contains(e.Message, branch) {
		t.Errorf("the failed write named no branch %s: %s", branch, e.Message)
	}
	if prop, _ := result["proposal"].(map[string]any); prop == nil || prop["id"] != "1" {
		t.Errorf("retry answered %v, want proposal 1", result)
	}
	if n := len(h.opened()); n != 1 {
		t.Errorf("%d proposals opened, want 1", n)
	}
	if head, err := gitrepo.Resolve(dir, branch); err != nil || head != result["commit"] {
		t.Errorf("remote %s at %s (%v), want %v", branch, head, err, result["commit"])
	}
}
