package gittest_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/gittest"
)

func TestCloneFetchPush(t *testing.T) {
	t.Parallel()
	for _, auth := range []struct {
		name string
		opts []gittest.Option
		user string
	}{
		{name: "anonymous"},
		{name: "basic auth", opts: []gittest.Option{gittest.WithBasicAuth("alice", "s3cret")}, user: "alice"},
	} {
		for _, c := range clients {
			t.Run(auth.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				srv := gittest.NewServer(t, auth.opts...)
				dir := srv.Path("team/config.git")
				initial := initRepo(t, dir)

				ws, err := c.clone(t, srv.URL("team/config.git"), auth.user, "s3cret")
				if err != nil {
					t.Fatalf("clone: %v", err)
				}
				if got := ws.head(t); got != initial {
					t.Fatalf("cloned main = %s, want %s", got, initial)
				}

				pushed := ws.commit(t, "a.txt", "a\n")
				if out, err := ws.push(t); err != nil {
					t.Fatalf("push: %v\n%s", err, out)
				}
				if got := resolve(t, dir); got != pushed {
					t.Fatalf("server's main = %s after push, want %s", got, pushed)
				}
				files, err := gitrepo.Files(dir, "main")
				if err != nil || string(files["a.txt"]) != "a\n" {
					t.Fatalf("server's files = %q, %v", files, err)
				}

				// Another user pushes; fetch brings the commit.
				other, err := gitrepo.Commit(dir, "main", map[string][]byte{"b.txt": []byte("b\n")}, "other\n")
				if err != nil {
					t.Fatal(err)
				}
				if got, err := ws.fetch(t); err != nil || got != other {
					t.Fatalf("fetch = %s, %v; want %s", got, err, other)
				}

				if n := srv.Count(gittest.ReceivePack); n != 1 {
					t.Errorf("Count(ReceivePack) = %d, want 1", n)
				}
				if n, want := srv.Count(gittest.UploadPack), 2*c.fetchPOSTs; n != want {
					t.Errorf("Count(UploadPack) = %d, want %d (clone and fetch)", n, want)
				}
			})
		}
	}
}

func TestWithRoot(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "not", "yet")
	srv := gittest.NewServer(t, gittest.WithRoot(root))
	if srv.Root() != root || srv.Path("a.git") != filepath.Join(root, "a.git") {
		t.Fatalf("Root() = %s, Path(a.git) = %s; want below %s", srv.Root(), srv.Path("a.git"), root)
	}
	want := initRepo(t, filepath.Join(root, "a.git"))
	ws, err := cloneGoGit(t, srv.URL("a.git"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := ws.head(t); got != want {
		t.Fatalf("cloned main = %s, want %s", got, want)
	}
	if got := srv.URL(""); !strings.HasPrefix(got, "http://127.0.0.1:") || !strings.HasSuffix(got, "/") {
		t.Fatalf(`URL("") = %s`, got)
	}
}

// A push larger than git's http.postBuffer (1 MiB) is sent chunked, which
// net/http/cgi refuses on its own.
func TestLargePush(t *testing.T) {
	t.Parallel()
	srv := gittest.NewServer(t)
	dir := srv.Path("big.git")
	initRepo(t, dir)
	ws, err := cloneCLI(t, srv.URL("big.git"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	var chunked atomic.Bool
	srv.OnRequest(func(r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/"+gittest.ReceivePack) && slices.Contains(r.TransferEncoding, "chunked") {
			chunked.Store(true)
		}
	})
	data := make([]byte, 2<<20)
	rand.Read(data)
	pushed := ws.commit(t, "big.txt", hex.EncodeToString(data)) // incompressible enough
	if out, err := ws.push(t); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	if !chunked.Load() {
		t.Error("git sent no chunked request body")
	}
	if got := resolve(t, dir); got != pushed {
		t.Fatalf("server's main = %s, want %s", got, pushed)
	}
}

func TestEmptyRepository(t *testing.T) {
	t.Parallel()
	srv := gittest.NewServer(t)
	mustGit(t, "", "init", "--quiet", "--bare", "--initial-branch=main", srv.Path("empty.git"))

	_, err := git.CloneContext(t.Context(), memory.NewStorage(), nil, &git.CloneOptions{URL: srv.URL("empty.git")})
	if !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		t.Fatalf("go-git clone = %v, want %v", err, transport.ErrEmptyRemoteRepository)
	}

	work := t.TempDir()
	mustGit(t, work, "init", "--quiet", "--initial-branch=main")
	if err := os.WriteFile(filepath.Join(work, "a.txt"), []byte("a\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	mustGit(t, work, "add", "a.txt")
	mustGit(t, work, "commit", "-q", "-m", "first")
	mustGit(t, work, "push", srv.URL("empty.git"), "main")
	if got, want := resolve(t, srv.Path("empty.git")), mustGit(t, work, "rev-parse", "HEAD"); got != want {
		t.Fatalf("server's main = %s, want %s", got, want)
	}
}

func TestRepositoryNotFound(t *testing.T) {
	t.Parallel()
	srv := gittest.NewServer(t)
	_, err := cloneGoGit(t, srv.URL("missing.git"), "", "")
	if !errors.Is(err, transport.ErrRepositoryNotFound) {
		t.Fatalf("go-git clone = %v, want %v", err, transport.ErrRepositoryNotFound)
	}
	if _, err := cloneCLI(t, srv.URL("missing.git"), "", ""); err == nil {
		t.Fatal("git clone succeeded")
	}
}

func TestBasicAuth(t *testing.T) {
	t.Parallel()
	srv := gittest.NewServer(t, gittest.WithBasicAuth("alice", "s3cret"))
	dir := srv.Path("config.git")
	initial := initRepo(t, dir)

	// A raw request shows the challenge.
	res, err := http.Get(srv.URL("config.git") + "/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Basic ") {
		t.Fatalf("anonymous request: %s, WWW-Authenticate %q", res.Status, res.Header.Get("WWW-Authenticate"))
	}

	for _, tc := range []struct {
		name, user, password string
	}{
		{"no credentials", "", ""},
		{"wrong password", "alice", "guess"},
		{"wrong user", "bob", "s3cret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := cloneGoGit(t, srv.URL("config.git"), tc.user, tc.password)
			if !errors.Is(err, transport.ErrAuthenticationRequired) {
				t.Errorf("go-git clone = %v, want %v", err, transport.ErrAuthenticationRequired)
			}
			if _, err := cloneCLI(t, srv.URL("config.git"), tc.user, tc.password); err == nil {
				t.Error("git clone succeeded")
			}

			// A push with the wrong credentials changes nothing.
			ws, err := cloneGoGit(t, srv.URL("config.git"), "alice", "s3cret")
			if err != nil {
				t.Fatal(err)
			}
			ws.commit(t, "a.txt", "a\n")
			ws.(*goGit).auth = nil
			if tc.user != "" {
				ws.(*goGit).auth = &githttp.BasicAuth{Username: tc.user, Password: tc.password}
			}
			if _, err := ws.push(t); !errors.Is(err, transport.ErrAuthenticationRequired) {
				t.Errorf("go-git push = %v, want %v", err, transport.ErrAuthenticationRequired)
			}
			if got := resolve(t, dir); got != initial {
				t.Errorf("server's main = %s, want %s", got, initial)
			}
		})
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	f := newFixture(t, clients[0])
	srv, ws := f.srv, f.ws
	srv.Close()
	srv.Close()

	_, err := cloneGoGit(t, srv.URL("config.git"), "", "")
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("go-git clone = %v, want %v", err, syscall.ECONNREFUSED)
	}
	if _, err := ws.push(t); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("go-git push = %v, want %v", err, syscall.ECONNREFUSED)
	}
	if _, err := ws.fetch(t); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("go-git fetch = %v, want %v", err, syscall.ECONNREFUSED)
	}
	if _, err := cloneCLI(t, srv.URL("config.git"), "", ""); err == nil {
		t.Error("git clone succeeded")
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fault     gittest.Fault
		cloneFail bool // clones and fetches fail too
		lands     bool // the failed push lands on the server
	}{
		{fault: gittest.FaultRefuse, cloneFail: true},
		{fault: gittest.FaultUnavailable, cloneFail: true},
		{fault: gittest.FaultCutPush},
		{fault: gittest.FaultCutAfterPush, lands: true},
	} {
		for _, c := range clients {
			t.Run(tc.fault.String()+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, c)
				srv, ws := f.srv, f.ws

				srv.SetFault(tc.fault)
				_, err := c.clone(t, srv.URL("config.git"), "", "")
				if gotFail := err != nil; gotFail != tc.cloneFail {
					t.Errorf("clone error = %v, want failure %t", err, tc.cloneFail)
				}
				out, err := ws.push(t)
				if err == nil {
					t.Fatalf("push succeeded\n%s", out)
				}
				t.Logf("push error: %v\n%s", err, out)
				want := f.initial
				if tc.lands {
					want = f.pushed
				}
				if got := resolve(t, f.dir); got != want {
					t.Fatalf("server's main = %s after the failed push, want %s", got, want)
				}

				// The remote recovers.
				srv.SetFault(gittest.FaultNone)
				if out, err := ws.push(t); err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
					t.Fatalf("push after the fault: %v\n%s", err, out)
				}
				if got := resolve(t, f.dir); got != f.pushed {
					t.Fatalf("server's main = %s, want %s", got, f.pushed)
				}
			})
		}
	}
}

// The errors go-git returns for each fault, which the remote source maps.
func TestFaultErrorsGoGit(t *testing.T) {
	t.Parallel()
	srv := gittest.NewServer(t)
	initRepo(t, srv.Path("config.git"))

	srv.SetFault(gittest.FaultUnavailable)
	_, err := cloneGoGit(t, srv.URL("config.git"), "", "")
	var unexpected *plumbing.UnexpectedError
	var status *githttp.Err
	if !errors.As(err, &unexpected) || !errors.As(unexpected.Err, &status) || status.StatusCode() != http.StatusServiceUnavailable {
		t.Errorf("FaultUnavailable: clone = %#v, want a plumbing.UnexpectedError holding a 503 *http.Err", err)
	}

	srv.SetFault(gittest.FaultRefuse)
	// The connection ends before an answer: net/http's io.EOF, wrapped in
	// a *url.Error that go-git returns as it is.
	_, err = cloneGoGit(t, srv.URL("config.git"), "", "")
	if !errors.Is(err, io.EOF) {
		t.Errorf("FaultRefuse: clone = %#v, want io.EOF", err)
	}

	for _, fault := range []gittest.Fault{gittest.FaultCutPush, gittest.FaultCutAfterPush} {
		srv.SetFault(gittest.FaultNone)
		ws, err := cloneGoGit(t, srv.URL("config.git"), "", "")
		if err != nil {
			t.Fatal(err)
		}
		ws.commit(t, "f.txt", fault.String())
		srv.SetFault(fault)
		// go-git wraps the POST's error in a plumbing.UnexpectedError,
		// which does not unwrap.
		_, err = ws.push(t)
		if !errors.As(err, &unexpected) || !errors.Is(unexpected.Err, io.EOF) {
			t.Errorf("%v: push = %#v, want a plumbing.UnexpectedError holding io.EOF", fault, err)
		}
	}
}

func TestPreReceiveHookRejects(t *testing.T) {
	t.Parallel()
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, c)
			writeHook(t, f.dir, "pre-receive", "#!/bin/sh\necho 'pushes are frozen' >&2\nexit 1\n")

			out, err := f.ws.push(t)
			if err == nil {
				t.Fatalf("push succeeded\n%s", out)
			}
			if !strings.Contains(out, "pushes are frozen") || !strings.Contains(err.Error()+out, "pre-receive hook declined") {
				t.Errorf("push = %v with output\n%s\nwant the hook's message and \"pre-receive hook declined\"", err, out)
			}
			if got := resolve(t, f.dir); got != f.initial {
				t.Errorf("server's main = %s, want %s", got, f.initial)
			}
		})
	}
}

// OnRequest moves the branch between the client's reading of the
// references and its push, so the push loses the race.
func TestOnRequestLostRace(t *testing.T) {
	t.Parallel()
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, c)
			srv, dir := f.srv, f.dir

			var other atomic.Value
			srv.OnRequest(func(r *http.Request) {
				if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/git-receive-pack") || other.Load() != nil {
					return
				}
				c, err := gitrepo.Commit(dir, "main", map[string][]byte{"b.txt": []byte("b\n")}, "other\n")
				if err != nil {
					t.Error(err)
				}
				other.Store(c)
			})
			out, err := f.ws.push(t)
			if err == nil {
				t.Fatalf("push succeeded\n%s", out)
			}
			t.Logf("push error: %v\n%s", err, out)
			if got := resolve(t, dir); got != other.Load() {
				t.Errorf("server's main = %s, want the other commit %s", got, other.Load())
			}
			srv.OnRequest(nil)
		})
	}
}

// Concurrent pushes to one branch: Git's locking lets exactly one win and
// the others fail promptly.
func TestConcurrentPushes(t *testing.T) {
	t.Parallel()
	const n = 50
	srv := gittest.NewServer(t, gittest.WithBasicAuth("alice", "s3cret"))
	dir := srv.Path("config.git")
	initRepo(t, dir)

	spaces := make([]workspace, n)
	commits := make([]string, n)
	for i := range spaces {
		ws, err := cloneGoGit(t, srv.URL("config.git"), "alice", "s3cret")
		if err != nil {
			t.Fatal(err)
		}
		spaces[i] = ws
		commits[i] = ws.commit(t, "a.txt", fmt.Sprintf("%d\n", i))
	}

	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, ws := range spaces {
		wg.Go(func() {
			<-start
			_, errs[i] = ws.push(t)
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	reasons := map[string]int{}
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Errorf("pushes %d and %d both succeeded", winner, i)
			}
			winner = i
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "non-fast-forward") {
			msg = "non-fast-forward"
		}
		reasons[msg]++
	}
	t.Logf("%d POSTs to git-receive-pack; failures: %v", srv.Count(gittest.ReceivePack), reasons)
	if winner < 0 {
		t.Fatal("no push succeeded")
	}
	if got := resolve(t, dir); got != commits[winner] {
		t.Fatalf("server's main = %s, want the winner's %s", got, commits[winner])
	}
}
