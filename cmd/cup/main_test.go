package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cup-dev/cup/controller/wasm"
	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/cueeval"
	"github.com/cup-dev/cup/internal/gitops"
	"github.com/cup-dev/cup/server"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testWASM runs the demo's WASM controller for every fixture, so that the
// module is compiled once per test binary rather than once per fixture.
var testWASM *wasm.Runtime

func TestMain(m *testing.M) {
	cueeval.Worker() // the demo's layered configuration evaluates CUE in a child: this binary
	flag.Parse()
	// No test reads the user's configuration or environment.
	dir, err := os.MkdirTemp("", "cup-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("CUP_CONFIG", filepath.Join(dir, "config.yaml"))
	for _, k := range []string{"CUP_SERVER", "CUP_NAMESPACE", "CUP_TOKEN", "CUP_CONTEXT",
		"CUP_TOKEN_FILE", "CUP_CERTIFICATE_AUTHORITY", "CUP_CLIENT_CERTIFICATE", "CUP_CLIENT_KEY"} {
		os.Unsetenv(k)
	}
	os.Setenv(scmTokenEnv, "scm-token")
	rt, err := wasm.NewRuntime()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testWASM = rt
	code := m.Run()
	if err := rt.Close(context.Background()); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// newServer starts a cupd on a fresh copy of the demo repository and
// returns its URL.
func newServer(t *testing.T, opts ...func(*app.Options)) string {
	t.Helper()
	return serve(t, newHandler(t, opts...))
}

// newHandler opens a cupd on a fresh copy of the demo repository and
// returns its handler.
func newHandler(t *testing.T, opts ...func(*app.Options)) http.Handler {
	t.Helper()
	o := app.Options{Logger: slog.New(slog.NewTextHandler(t.Output(), nil)), WASMRuntime: testWASM}
	for _, f := range opts {
		f(&o)
	}
	a, err := app.Open(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a.Handler()
}

// serve serves h over cleartext HTTP/1.1 and HTTP/2 and returns its URL.
func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(h)
	ts.Config = server.NewHTTPServer("", h)
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL
}

// result is what one run of cup printed and exited with.
type result struct {
	stdout, stderr string
	code           int
}

// cup runs the command line in-process against url with stdin.
func cup(t *testing.T, url, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if url != "" {
		args = append([]string{"--server", url}, args...)
	}
	code := run(t.Context(), args, strings.NewReader(stdin), &stdout, &stderr)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// demoNow is a clock five days after the demo repository's commits: AGE
// columns of its resources read 5d.
var demoNow = gitops.InitTime.Add(5 * 24 * time.Hour)

// okAt is ok with the clock at now.
func okAt(t *testing.T, now time.Time, url string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c := &cli{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, now: func() time.Time { return now }}
	if code := c.run(t.Context(), append([]string{"--server", url}, args...)); code != 0 {
		t.Fatalf("cup %s: exit %d\nstderr: %s", strings.Join(args, " "), code, stderr.String())
	}
	return stdout.String()
}

// ok runs cup and fails the test unless it succeeds; it returns stdout.
func ok(t *testing.T, url string, args ...string) string {
	t.Helper()
	r := cup(t, url, "", args...)
	if r.code != 0 {
		t.Fatalf("cup %s: exit %d\nstderr: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// fails runs cup, expects exit 1 and an error line containing want.
func fails(t *testing.T, url, want string, args ...string) {
	t.Helper()
	r := cup(t, url, "", args...)
	if r.code != 1 {
		t.Fatalf("cup %s: exit %d, want 1\nstdout: %s", strings.Join(args, " "), r.code, r.stdout)
	}
	if !strings.HasPrefix(r.stderr, "error: ") || !strings.Contains(r.stderr, want) {
		t.Fatalf("cup %s: stderr %q, want error: ...%s...", strings.Join(args, " "), r.stderr, want)
	}
}

// golden compares got with testdata/name, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", p, got, want)
	}
}

// TestUnknownSubcommand: a command with subcommands refuses an argument
// that names none of them, listing the ones it has, where cobra would print
// help and exit 0; without arguments it prints its help.
func TestUnknownSubcommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args      []string
		want, sub string
	}{
		{[]string{"config", "get-context"}, `unknown command "get-context" for "cup config"; did you mean get-contexts or set-context?`, "use-context"},
		{[]string{"proposals", "nope"}, `unknown command "nope" for "cup proposals"`, "get"},
		{[]string{"nope"}, `unknown command "nope" for "cup"`, "apply"},
		{[]string{"confg"}, `unknown command "confg" for "cup"; did you mean config?`, "config"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			fails(t, "", tc.want, tc.args...)
			if r := cup(t, "", "", tc.args...); !strings.Contains(r.stderr, "\nits commands are:\n") || !strings.Contains(r.stderr, "\n  "+tc.sub+" ") {
				t.Errorf("stderr %q lists no %s", r.stderr, tc.sub)
			}
		})
	}
	for _, args := range [][]string{nil, {"config"}} {
		if got := ok(t, "", args...); !strings.Contains(got, "Available Commands:") {
			t.Errorf("cup %s printed %q, want its help", strings.Join(args, " "), got)
		}
	}
}
