// Command fakegithub serves, on 127.0.0.1, what a cupd in proposal mode
// needs outside itself, for tests that are not Go tests (the web UI's
// browser tests): the demo repository over Git's smart HTTP protocol
// (internal/gittest), and a fake of GitHub's pull-request API
// (scm/github/githubtest) that sees the branches pushed to that repository.
//
// It prints one line of JSON with the addresses, then serves until it is
// sent SIGINT or SIGTERM:
//
//	{"api":"http://127.0.0.1:P/api/v3/","repository":"http://127.0.0.1:Q/demo.git","control":"http://127.0.0.1:R"}
//
// Start cupd with --repository <repository> --scm github --scm-url <api>
// --scm-repository acme/config (and any CUPD_SCM_TOKEN). The control
// address merges or closes a pull request, as a reviewer would on GitHub:
// POST <control>/merge?id=N, POST <control>/close?id=N (204, or 404).
//
// githubtest.NewFake and gittest.DemoFiles want a testing.TB; this program
// passes them a minimal one (progTB) that logs to standard error, exits on
// Fatal and runs the cleanups on the way out.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/gittest"
	"github.com/cup-dev/cup/scm/github/githubtest"
)

// progTB is the part of testing.TB the fakes use, for a program. The
// embedded interface is nil: a method not defined here would panic, which
// would say the fakes started using more of testing.TB.
type progTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

func (t *progTB) Helper()      {}
func (t *progTB) Name() string { return "fakegithub" }

func (t *progTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// cleanup runs the cleanups, last registered first, as testing does.
func (t *progTB) cleanup() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

func (t *progTB) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (t *progTB) Log(args ...any)                 { fmt.Fprintln(os.Stderr, args...) }

// Errorf is how the fake reports a call nobody expected: logged, and the
// program goes on serving (its exit status says so at the end).
func (t *progTB) Errorf(format string, args ...any) {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	fmt.Fprintf(os.Stderr, "fakegithub: error: "+format+"\n", args...)
}

func (t *progTB) Error(args ...any) { t.Errorf("%s", fmt.Sprint(args...)) }

func (t *progTB) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "fakegithub: "+format+"\n", args...)
	t.cleanup()
	os.Exit(1)
}

func (t *progTB) Fatal(args ...any) { t.Fatalf("%s", fmt.Sprint(args...)) }

func (t *progTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *progTB) TempDir() string {
	dir, err := os.MkdirTemp("", "fakegithub-*")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// reviewer fails the test less than the fake's own Merge and Close would:
// an unknown id is a 404, not the end of the program.
type reviewer struct {
	fake *githubtest.Fake
}

func (r reviewer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	id := req.URL.Query().Get("id")
	if req.Method != http.MethodPost || (req.URL.Path != "/merge" && req.URL.Path != "/close") {
		http.Error(w, "POST /merge?id=N or /close?id=N", http.StatusNotFound)
		return
	}
	if _, err := strconv.Atoi(id); err != nil {
		http.Error(w, "id must be a number", http.StatusBadRequest)
		return
	}
	t := &onceTB{}
	if req.URL.Path == "/merge" {
		r.fake.Merge(t, id)
	} else {
		r.fake.Close(t, id)
	}
	if t.msg != "" {
		http.Error(w, t.msg, http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// onceTB records the failure of one Merge or Close.
type onceTB struct {
	testing.TB
	msg string
}

func (t *onceTB) Helper()                           {}
func (t *onceTB) Fatalf(format string, args ...any) { t.msg = fmt.Sprintf(format, args...) }

func main() {
	owner := flag.String("owner", "acme", "the fake repository's owner")
	repo := flag.String("repo", "config", "the fake repository's name")
	flag.Parse()

	t := &progTB{}
	defer t.cleanup()

	git, err := gittest.Start()
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(git.Close)
	if _, err := gitrepo.Init(git.Path(gittest.Demo), "main", gittest.DemoFiles(t), "demo\n"); err != nil {
		t.Fatalf("%v", err)
	}
	fake := githubtest.NewFake(t, *owner, *repo)
	fake.LinkRepository(git.Path(gittest.Demo))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("%v", err)
	}
	control := &http.Server{Handler: reviewer{fake}}
	go func() { _ = control.Serve(ln) }()
	t.Cleanup(func() { _ = control.Close() })

	out, _ := json.Marshal(map[string]string{
		"api":        fake.URL(),
		"repository": git.URL(gittest.Demo),
		"control":    "http://" + ln.Addr().String(),
	})
	fmt.Println(string(out))

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
	t.cleanup()
	if t.Failed() {
		os.Exit(1)
	}
}
