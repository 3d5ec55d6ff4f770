package gittest_test

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	"go.uber.org/goleak"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/gittest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// A client is a Git client: go-git or the git command.
type client struct {
	name string
	// clone clones the repository at rawURL, authenticating as user with
	// password unless user is empty.
	clone func(t *testing.T, rawURL, user, password string) (workspace, error)
	// fetchPOSTs is how many git-upload-pack POSTs a clone or fetch makes:
	// with protocol version 2, which git speaks, listing the references
	// is one too.
	fetchPOSTs int
}

// A workspace is a clone of a repository on the server whose branch main
// tracks the server's.
type workspace interface {
	// head returns the commit main holds.
	head(t *testing.T) string
	// commit commits file with content on main and returns the commit.
	commit(t *testing.T, file, content string) string
	// push pushes main and returns what the server said besides the result
	// (progress and "remote:" lines).
	push(t *testing.T) (string, error)
	// fetch fetches and returns the commit origin/main then holds.
	fetch(t *testing.T) (string, error)
}

var clients = []client{
	{name: "go-git", clone: cloneGoGit, fetchPOSTs: 1},
	{name: "git", clone: cloneCLI, fetchPOSTs: 2},
}

// goGit is a go-git clone kept in memory.
type goGit struct {
	repo *git.Repository
	auth transport.AuthMethod
}

func cloneGoGit(t *testing.T, rawURL, user, password string) (workspace, error) {
	var auth transport.AuthMethod
	if user != "" {
		auth = &githttp.BasicAuth{Username: user, Password: password}
	}
	repo, err := git.CloneContext(t.Context(), memory.NewStorage(), memfs.New(), &git.CloneOptions{
		URL: rawURL, Auth: auth, ReferenceName: "refs/heads/main", SingleBranch: true,
	})
	if err != nil {
		return nil, err
	}
	return &goGit{repo: repo, auth: auth}, nil
}

func (g *goGit) head(t *testing.T) string {
	t.Helper()
	ref, err := g.repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	return ref.Hash().String()
}

func (g *goGit) commit(t *testing.T, file, content string) string {
	t.Helper()
	wt, err := g.repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	f, err := wt.Filesystem.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add(file); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "tester", Email: "tester@localhost", When: time.Now()}
	h, err := wt.Commit("change "+file+"\n", &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

func (g *goGit) push(t *testing.T) (string, error) {
	var progress bytes.Buffer
	err := g.repo.PushContext(t.Context(), &git.PushOptions{
		Auth:     g.auth,
		RefSpecs: []gitconfig.RefSpec{"refs/heads/main:refs/heads/main"},
		Progress: &progress,
	})
	return progress.String(), err
}

func (g *goGit) fetch(t *testing.T) (string, error) {
	err := g.repo.FetchContext(t.Context(), &git.FetchOptions{Auth: g.auth})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return "", err
	}
	ref, err := g.repo.Reference(plumbing.NewRemoteReferenceName("origin", "main"), true)
	if err != nil {
		return "", err
	}
	return ref.Hash().String(), nil
}

// cli is a clone made with the git command.
type cli struct {
	dir string
}

func cloneCLI(t *testing.T, rawURL, user, password string) (workspace, error) {
	if user != "" {
		u, err := url.Parse(rawURL)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword(user, password)
		rawURL = u.String()
	}
	dir := filepath.Join(t.TempDir(), "clone")
	if _, err := runGit(t, "", "clone", "--branch", "main", rawURL, dir); err != nil {
		return nil, err
	}
	return &cli{dir: dir}, nil
}

func (c *cli) head(t *testing.T) string {
	t.Helper()
	return mustGit(t, c.dir, "rev-parse", "HEAD")
}

func (c *cli) commit(t *testing.T, file, content string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(c.dir, file), []byte(content), 0o666); err != nil {
		t.Fatal(err)
	}
	mustGit(t, c.dir, "add", file)
	mustGit(t, c.dir, "commit", "-q", "-m", "change "+file)
	return c.head(t)
}

func (c *cli) push(t *testing.T) (string, error) {
	return runGit(t, c.dir, "push", "origin", "main:main")
}

func (c *cli) fetch(t *testing.T) (string, error) {
	if out, err := runGit(t, c.dir, "fetch", "origin"); err != nil {
		return out, err
	}
	return mustGit(t, c.dir, "rev-parse", "origin/main"), nil
}

// gitEnv is the environment of the git command: the test's without Git's
// own variables and HOME, in which git reads no configuration and asks no
// questions.
func gitEnv(t *testing.T) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			env = append(env, kv)
		}
	}
	return append(env,
		"HOME="+t.TempDir(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=tester", "GIT_AUTHOR_EMAIL=tester@localhost",
		"GIT_COMMITTER_NAME=tester", "GIT_COMMITTER_EMAIL=tester@localhost",
		"LC_ALL=C",
	)
}

// runGit runs the git command in dir and returns its combined output.
func runGit(t *testing.T, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(t)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := runGit(t, dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// initRepo creates a bare repository at dir whose branch main holds one
// commit, and returns the commit.
func initRepo(t *testing.T, dir string) string {
	t.Helper()
	c, err := gitrepo.Init(dir, "main", map[string][]byte{"README.md": []byte("hello\n")}, "initial\n")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// resolve returns the commit branch main holds in the bare repository at dir.
func resolve(t *testing.T, dir string) string {
	t.Helper()
	c, err := gitrepo.Resolve(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeHook writes an executable hook script into the bare repository at dir.
func writeHook(t *testing.T, dir, name, script string) {
	t.Helper()
	hooks := filepath.Join(dir, "hooks")
	if err := os.MkdirAll(hooks, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hooks, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// fixture is a server with the repository config.git, whose branch main
// holds initial, and a clone of it made by a client with one commit,
// pushed, not yet pushed.
type fixture struct {
	srv     *gittest.Server
	dir     string // config.git on disk
	initial string
	ws      workspace
	pushed  string
}

func newFixture(t *testing.T, c client) fixture {
	t.Helper()
	f := fixture{srv: gittest.NewServer(t)}
	f.dir = f.srv.Path("config.git")
	f.initial = initRepo(t, f.dir)
	ws, err := c.clone(t, f.srv.URL("config.git"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	f.ws = ws
	f.pushed = ws.commit(t, "a.txt", "a\n")
	return f
}
