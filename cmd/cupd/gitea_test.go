package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/gittest"
	"github.com/cup-dev/cup/scm"
	giteascm "github.com/cup-dev/cup/scm/gitea"
)

// The end-to-end test against a real Gitea runs when CUP_GITEA names a
// Gitea binary; `make test-gitea` builds one (test/gitea/build.sh) and sets
// it. CUP_GITEA_STATIC is the folder Gitea reads its templates and options
// from (default: src beside the binary, where the build script leaves the
// module it built).
const (
	giteaEnv       = "CUP_GITEA"
	giteaStaticEnv = "CUP_GITEA_STATIC"
)

// gitea is a Gitea server on 127.0.0.1 with one user, acme, whose token
// the test uses for Git and the API.
type gitea struct {
	t      testing.TB
	bin    string
	dir    string // work path: app.ini, the database, the repositories
	url    string // ends in "/"
	token  string
	cmd    *exec.Cmd
	exited chan struct{}
}

// startGitea starts a Gitea, or skips the test when CUP_GITEA is unset.
func startGitea(t testing.TB) *gitea {
	t.Helper()
	bin := os.Getenv(giteaEnv)
	if bin == "" {
		t.Skipf("%s is not set: skipping the end-to-end test against a real Gitea; run `make test-gitea`, which builds Gitea once and runs it", giteaEnv)
	}
	static := os.Getenv(giteaStaticEnv)
	if static == "" {
		static = filepath.Join(filepath.Dir(bin), "src")
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	g := &gitea{t: t, bin: bin, dir: t.TempDir(), url: fmt.Sprintf("http://127.0.0.1:%d/", port)}
	ini := fmt.Sprintf(`APP_NAME = cup-e2e
RUN_MODE = prod
RUN_USER = %[1]s
WORK_PATH = %[2]s

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[3]d
ROOT_URL = %[4]s
LOCAL_ROOT_URL = %[4]s
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
STATIC_ROOT_PATH = %[5]s
APP_DATA_PATH = %[2]s/data

[database]
DB_TYPE = sqlite3
PATH = %[2]s/gitea.db
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = %[2]s/repos
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = cup-e2e-secret-key
PASSWORD_HASH_ALGO = pbkdf2_v2

[service]
DISABLE_REGISTRATION = true

[webhook]
ALLOWED_HOST_LIST = loopback
DELIVER_TIMEOUT = 10

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[mailer]
ENABLED = false

[actions]
ENABLED = false

[packages]
ENABLED = false

[log]
MODE = console
LEVEL = warn
ROOT_PATH = %[2]s/log
`, u.Username, g.dir, port, g.url, static)
	if err := os.WriteFile(filepath.Join(g.dir, "app.ini"), []byte(ini), 0o600); err != nil {
		t.Fatal(err)
	}
	g.start()
	t.Cleanup(g.stop)

	g.admin("user", "create", "--username", "acme", "--password", "cup-e2e-password-1", "--email", "acme@example.com",
		"--admin", "--must-change-password=false")
	out := strings.Fields(g.admin("user", "generate-access-token", "--username", "acme", "--token-name", "cup",
		"--scopes", "all", "--raw"))
	// The token is the last word; Gitea may print log lines before it.
	if len(out) == 0 || len(out[len(out)-1]) != 40 {
		t.Fatalf("gitea admin user generate-access-token printed no token: %q", out)
	}
	g.token = out[len(out)-1]
	return g
}

// env is the environment Gitea's commands run in.
func (g *gitea) env() []string {
	return append(os.Environ(),
		"GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT=true",
		"GITEA_WORK_DIR="+g.dir,
		"HOME="+g.dir,
	)
}

// start starts the server and waits until its API answers.
func (g *gitea) start() {
	g.t.Helper()
	g.cmd = exec.Command(g.bin, "web", "--config", filepath.Join(g.dir, "app.ini"), "--work-path", g.dir)
	g.cmd.Env = g.env()
	g.cmd.Dir = g.dir
	log, err := os.OpenFile(filepath.Join(g.dir, "gitea.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		g.t.Fatal(err)
	}
	defer log.Close()
	g.cmd.Stdout, g.cmd.Stderr = log, log
	if err := g.cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	exited := make(chan struct{})
	g.exited = exited
	go func() { _ = g.cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res, err := http.Get(g.url + "api/v1/version")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			g.t.Fatalf("gitea exited while starting:\n%s", g.log())
		default:
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("gitea did not answer within 2 minutes:\n%s", g.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop stops the server, if it runs.
func (g *gitea) stop() {
	if g.cmd == nil {
		return
	}
	_ = g.cmd.Process.Signal(os.Interrupt)
	select {
	case <-g.exited:
	case <-time.After(20 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.exited
	}
	g.cmd = nil
}

func (g *gitea) log() string {
	b, _ := os.ReadFile(filepath.Join(g.dir, "gitea.log"))
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}

// admin runs `gitea admin args...` and returns its standard output.
func (g *gitea) admin(args ...string) string {
	g.t.Helper()
	cmd := exec.Command(g.bin, append([]string{"admin"}, append(args, "--config", filepath.Join(g.dir, "app.ini"), "--work-path", g.dir)...)...)
	cmd.Env = g.env()
	cmd.Dir = g.dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		g.t.Fatalf("gitea admin %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// api calls Gitea's API as acme and decodes the answer into out (when not
// nil); it returns the status.
func (g *gitea) api(method, path string, in, out any) int {
	g.t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			g.t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, g.url+"api/v1"+path, body)
	if err != nil {
		g.t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+g.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			g.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	// 405 is Gitea asking to merge later, which callers retry.
	if res.StatusCode >= 300 && res.StatusCode != http.StatusMethodNotAllowed {
		g.t.Logf("%s %s = %d %s", method, path, res.StatusCode, b)
	}
	return res.StatusCode
}

type giteaPull struct {
	Number int64  `json:"number"`
	State  string `json:"state"`
	Merged bool   `json:"merged"`
	Body   string `json:"body"`
	Head   struct {
		Ref string `json:"ref"`
	} `json:"head"`
}

// startGiteaCupd starts a Gitea holding the demo repository as
// acme/config, with a webhook to a cupd in proposal mode over it, and
// returns them; it skips when CUP_GITEA is unset.
func startGiteaCupd(t testing.TB) (g *gitea, url string) {
	t.Helper()
	g = startGitea(t)

	// The repository: the demo, pushed to Gitea.
	if code := g.api("POST", "/user/repos", map[string]any{"name": "config", "default_branch": "main"}, nil); code != http.StatusCreated {
		t.Fatalf("creating the repository = %d", code)
	}
	demo := gittest.NewDemo(t)
	remote := g.url + "acme/config.git"
	push := exec.Command("git", "push", "--quiet", strings.Replace(remote, "http://", "http://acme:"+g.token+"@", 1), "main")
	push.Dir = demo.Path(gittest.Demo)
	push.Env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_TERMINAL_PROMPT=0")
	if out, err := push.CombinedOutput(); err != nil {
		t.Fatalf("git push to gitea: %v\n%s\n%s", err, out, g.log())
	}

	t.Setenv("CUPD_GIT_TOKEN", g.token)
	t.Setenv("CUPD_SCM_TOKEN", g.token)
	url, _, _ = start(t, "--address", "127.0.0.1:0", "--repository", remote, "--git-user", "acme",
		"--fetch-interval", "0", "--scm", "gitea", "--scm-url", g.url, "--scm-repository", "acme/config",
		"--proposal-labels", "cup,config", "--webhook-secret", "hook", "--scm-timeout", "5s", "--reconcile=true")

	// Gitea's own webhook, signed with the secret, to cupd on loopback.
	hook := map[string]any{"type": "gitea", "active": true, "events": []string{"pull_request"},
		"config": map[string]string{"url": url + "/hooks/scm", "content_type": "json", "secret": "hook"}}
	if code := g.api("POST", "/repos/acme/config/hooks", hook, nil); code != http.StatusCreated {
		t.Fatalf("creating the webhook = %d", code)
	}

	return g, url
}

// putGiteaFlag creates flag name with a PUT and returns the write's result.
func putGiteaFlag(t testing.TB, url, name, query string) (map[string]any, time.Duration) {
	t.Helper()
	begin := time.Now()
	code, out := do(t, "PUT", url+"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/"+name+query,
		`{"spec": {"description": "e2e", "enabled": true, "rollout": 5}}`)
	took := time.Since(begin)
	if code != http.StatusAccepted {
		t.Fatalf("PUT %s%s = %d %s", name, query, code, out)
	}
	var res struct{ Result map[string]any }
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Result["proposal"] == nil {
		t.Fatalf("PUT %s: %v: %s", name, err, out)
	}
	return res.Result, took
}

// mergeAndWait merges pull request id through Gitea's API and waits until
// cupd's own list shows it merged: only a refresh changes that list, and
// with a 30 s refresh interval that is Gitea's webhook. It returns the time
// from the end of the merge call to cupd showing it.
func mergeAndWait(t testing.TB, g *gitea, url, id string) time.Duration {
	t.Helper()
	begin := time.Now()
	for {
		code := g.api("POST", "/repos/acme/config/pulls/"+id+"/merge", map[string]any{"Do": "merge"}, nil)
		if code == http.StatusOK {
			break
		}
		// 405 while Gitea still checks the pull request for conflicts.
		if time.Since(begin) > time.Minute {
			t.Fatalf("merging pull request %s = %d", id, code)
		}
		time.Sleep(200 * time.Millisecond)
	}
	merged := time.Now()
	for {
		_, body := get(t, url+proposalsPath+"?state=merged")
		if strings.Contains(body, `"id":"`+id+`"`) {
			return time.Since(merged)
		}
		if time.Since(merged) > 25*time.Second {
			t.Fatalf("cupd does not show pull request %s merged 25 s after the merge: %s\n%s", id, body, g.log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkGiteaProposal measures, against a real Gitea, the time from a
// PUT in proposal mode to its answer naming the new pull request, and from
// a merge on Gitea to cupd showing it merged, as p50 over b.N of each.
func BenchmarkGiteaProposal(b *testing.B) {
	g, url := startGiteaCupd(b)
	var puts, merges []time.Duration
	i := 0
	for b.Loop() {
		res, took := putGiteaFlag(b, url, fmt.Sprintf("bench-%04d", i), "")
		puts = append(puts, took)
		merges = append(merges, mergeAndWait(b, g, url, res["proposal"].(map[string]any)["id"].(string)))
		i++
	}
	b.ReportMetric(p50(puts).Seconds()*1e3, "put-to-pr-p50-ms")
	b.ReportMetric(p50(merges).Seconds()*1e3, "merge-to-merged-p50-ms")
}

// p50 returns the median of d, which it sorts.
func p50(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// TestGiteaEndToEnd runs cupd in proposal mode against a real Gitea: a PUT
// opens a pull request, a second write joins it, the demo's reconciler
// adds the bundle's change to it, a merge through Gitea's
// API shows through Gitea's webhook, and with Gitea stopped reads go on
// while writes answer 503 until it is back. It logs the time from a PUT to
// its pull request and from a merge to cupd showing it.
func TestGiteaEndToEnd(t *testing.T) {
	g, url := startGiteaCupd(t)

	// PUTs of new flags, each opening a pull request: time them.
	const n = 10
	var took []time.Duration
	var first, last map[string]any
	for i := range n {
		res, d := putGiteaFlag(t, url, fmt.Sprintf("e2e-%02d", i), "")
		took = append(took, d)
		if i == 0 {
			first = res
		}
		last = res
	}
	slices.Sort(took)
	t.Logf("PUT to pull request on Gitea, %d writes: p50 %v, min %v, max %v", n, p50(took).Round(time.Millisecond), took[0].Round(time.Millisecond), took[n-1].Round(time.Millisecond))

	branch := first["branch"].(string)
	id := first["proposal"].(map[string]any)["id"].(string)
	var pr giteaPull
	if code := g.api("GET", "/repos/acme/config/pulls/"+id, nil, &pr); code != http.StatusOK {
		t.Fatalf("the pull request cupd reported, %s, is not on Gitea: %d", id, code)
	}
	if pr.State != "open" || pr.Head.Ref != branch || !strings.Contains(pr.Body, "e2e-00") {
		t.Fatalf("pull request %s on Gitea: %+v, want open from %s naming e2e-00", id, pr, branch)
	}

	// A second write into the same change set joins the same proposal.
	jr, _ := putGiteaFlag(t, url, "e2e-joined", "?changeSet="+branch)
	if jr["branch"] != branch || jr["proposal"].(map[string]any)["id"] != id {
		t.Fatalf("the second write went to %v, proposal %v; want %s, proposal %s", jr["branch"], jr["proposal"], branch, id)
	}
	if g.api("GET", "/repos/acme/config/pulls/"+id, nil, &pr); !strings.Contains(pr.Body, "e2e-00") || !strings.Contains(pr.Body, "e2e-joined") {
		t.Errorf("pull request %s's description does not name both resources:\n%s", id, pr.Body)
	}
	// The demo's reconciler commits the default bundle's change into the
	// same pull request, on top of the two flags.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := get(t, url+"/apis/flags.cup.dev/v1alpha1/namespaces/default/flagbundles/default?revision="+branch)
		if code == http.StatusOK && strings.Contains(body, `"e2e-00"`) && strings.Contains(body, `"e2e-joined"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pull request's bundle does not hold both flags 30 s after the writes: %d %s\n%s", code, body, g.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	var commits []struct {
		Commit struct{ Message string }
	}
	// Gitea lists them newest first: the bundle's last, after the two
	// flags' (each flag's followed by the bundle's, unless the second
	// came before the first bundle was written).
	code := g.api("GET", "/repos/acme/config/pulls/"+id+"/commits", nil, &commits)
	var subjects []string
	puts := 0
	for _, c := range commits {
		subject := strings.SplitN(c.Commit.Message, "\n", 2)[0]
		subjects = append(subjects, subject)
		if strings.HasPrefix(subject, "Put Flag default/e2e-") {
			puts++
		}
	}
	if code != http.StatusOK || puts != 2 || len(subjects) < 3 || !strings.HasPrefix(subjects[0], "Reconcile flag-bundles") {
		t.Errorf("pull request %s's commits on Gitea (%d), newest first: %q; want the bundle's after the two flags'", id, code, subjects)
	}
	var open []giteaPull
	g.api("GET", "/repos/acme/config/pulls?state=open&limit=50", nil, &open)
	if len(open) != n {
		t.Errorf("%d open pull requests on Gitea, want %d", len(open), n)
	}

	// Merge through Gitea's API; Gitea's webhook tells cupd.
	t.Logf("merge on Gitea to merged in cupd (Gitea's webhook, cupd's read of the one pull request): %v",
		mergeAndWait(t, g, url, id).Round(time.Millisecond))
	if code, body := get(t, url+proposalsPath+"/"+id); code != 200 || !strings.Contains(body, "PROPOSAL_STATE_MERGED") {
		t.Errorf("GET proposal %s = %d %s", id, code, body)
	}

	// The adapter's lookup against the real server, as the fake serves it:
	// Gitea answers GET /pulls/{base}/{head} with the merged pull request
	// too, which Find must not return as the branch's open one.
	p, err := giteascm.New(giteascm.Config{BaseURL: g.url, Owner: "acme", Repo: "config",
		HTTPClient: scm.NewHTTPClient(scm.HTTPOptions{Token: scm.StaticToken(g.token)})})
	if err != nil {
		t.Fatal(err)
	}
	lr := last
	if got, err := p.Find(t.Context(), lr["branch"].(string), "main"); err != nil || got.ID != lr["proposal"].(map[string]any)["id"] {
		t.Errorf("Find(%s, main) = %+v, %v; want proposal %v", lr["branch"], got, err, lr["proposal"])
	}
	for _, head := range []string{branch, "cup/none"} {
		if got, err := p.Find(t.Context(), head, "main"); !errors.Is(err, scm.ErrNotFound) {
			t.Errorf("Find(%s, main) = %+v, %v; want ErrNotFound", head, got, err)
		}
	}

	// Gitea stopped: reads go on, writes answer 503.
	g.stop()
	if code, body := get(t, url+"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/new-checkout"); code != 200 {
		t.Errorf("GET with Gitea down = %d %s", code, body)
	}
	if code, body := get(t, url+proposalsPath+"?state=open"); code != 200 || !strings.Contains(body, `"id"`) {
		t.Errorf("list of proposals with Gitea down = %d %s", code, body)
	}
	code, out := do(t, "PUT", url+"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/e2e-down",
		`{"spec": {"description": "down", "enabled": true, "rollout": 1}}`)
	if code != http.StatusServiceUnavailable {
		t.Errorf("PUT with Gitea down = %d %s, want 503", code, out)
	}

	// Gitea back: writes work.
	g.start()
	code, out = do(t, "PUT", url+"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/e2e-back",
		`{"spec": {"description": "back", "enabled": true, "rollout": 2}}`)
	if code != http.StatusAccepted || !strings.Contains(out, `"proposal"`) {
		t.Errorf("PUT with Gitea back = %d %s", code, out)
	}
	t.Log("writes 503 with Gitea down, work again once it is back; reads served throughout (" + strconv.Itoa(n+3) + " writes in all)")
}
