package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/testlog"
)

// addressLine finds the address cupd serves at (the repository may be a URL too).
var addressLine = regexp.MustCompile(` at (https?://127\.0\.0\.1:\d+)`)

// start runs cupd with args until the test ends, and returns its URL once it
// printed it.
func start(t testing.TB, args ...string) (string, *testlog.Buffer, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &testlog.Buffer{}, &testlog.Buffer{}
	cmd := newRootCommand(stdout, stderr)
	cmd.SetArgs(withoutReconcilers(args))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-done:
			case <-time.After(20 * time.Second):
				t.Error("cupd did not shut down")
			}
		})
		return stopErr
	}
	t.Cleanup(func() { _ = stop() })
	deadline := time.Now().Add(2 * time.Minute) // the race detector makes compiling the demo's WASM module slow
	for time.Now().Before(deadline) {
		if m := addressLine.FindStringSubmatch(stdout.String()); m != nil {
			return m[1], stdout, stop
		}
		select {
		case err := <-done:
			t.Fatalf("cupd exited: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("cupd printed no address\nstdout: %s\nstderr: %s", stdout, stderr)
	return "", nil, nil
}

func get(t testing.TB, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestServeDemoWithoutFlags(t *testing.T) {
	t.Setenv("CUPD_ADDRESS", "127.0.0.1:0") // the default port may be taken; everything else is default
	url, stdout, stop := start(t)
	out := stdout.String()
	if !strings.Contains(out, "demo repository") || !strings.Contains(out, "curl -s "+url+"/apis/") {
		t.Fatalf("stdout lacks the demo line or a curl line:\n%s", out)
	}
	if code, body := get(t, url+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz = %d %q", code, body)
	}
	if code, body := get(t, url+"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/new-checkout"); code != 200 || !strings.Contains(body, `"team":"payments"`) {
		t.Fatalf("GET a demo flag = %d %s", code, body)
	}
	if code, body := get(t, url+"/metrics"); code != 200 || !strings.Contains(body, "cup_controller_calls_in_flight 0") || !strings.Contains(body, "cup_controller_calls_rejected_total 0") {
		t.Errorf("/metrics = %d, lacks the controller call metrics", code)
	}
	if err := stop(); err != nil {
		t.Fatalf("graceful shutdown: %v", err)
	}
}

func TestInvalidConfigurationStopsStartup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("apiVersion: cup.dev/v1alpha1\nkind: Controller\nmetadata: {name: x}\nspec: {type: teapot}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := newRootCommand(io.Discard, io.Discard)
	cmd.SetArgs([]string{"serve", "--address", "127.0.0.1:0", "--config", dir})
	err := cmd.ExecuteContext(t.Context())
	if err == nil || !strings.Contains(err.Error(), "broken.yaml") || !strings.Contains(err.Error(), "teapot") {
		t.Fatalf("err = %v, want one naming broken.yaml and the bad type", err)
	}
}

func TestWASMMemoryBudgetTooSmall(t *testing.T) {
	t.Parallel()
	cmd := newRootCommand(io.Discard, io.Discard)
	cmd.SetArgs([]string{"serve", "--address", "127.0.0.1:0", "--wasm-memory-bytes", "1048576"})
	err := cmd.ExecuteContext(t.Context())
	if err == nil || !strings.Contains(err.Error(), "--wasm-memory-bytes") || !strings.Contains(err.Error(), "16 pages (1 MiB)") {
		t.Fatalf("err = %v, want one naming --wasm-memory-bytes and the budget", err)
	}
}

func TestBadFlagsAndEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     [2]string
		args    []string
		mention string
	}{
		{"log level", [2]string{}, []string{"--log-level", "loud"}, "--log-level"},
		{"log format", [2]string{}, []string{"--log-format", "xml"}, "--log-format"},
		{"environment", [2]string{"CUPD_MAX_REQUEST_BYTES", "lots"}, nil, "CUPD_MAX_REQUEST_BYTES"},
		{"repository", [2]string{}, []string{"--repository", "/nonexistent/cup-repo"}, "/nonexistent/cup-repo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env[0] != "" {
				t.Setenv(tc.env[0], tc.env[1])
			}
			cmd := newRootCommand(io.Discard, io.Discard)
			cmd.SetArgs(append([]string{"--address", "127.0.0.1:0"}, tc.args...))
			err := cmd.ExecuteContext(t.Context())
			if err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.mention)
			}
		})
	}
}

// TestOriginalSettings checks that the original Cup's environment variables
// and flags, and any CUPD_ variable that names no flag, stop start-up with
// an error naming them (and cupd's setting), rather than being ignored.
func TestOriginalSettings(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-repository")
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"env local path", map[string]string{"CUPD_API_LOCAL_PATH": "./clone"}, nil, []string{"CUPD_API_LOCAL_PATH", "--repository"}},
		{"env resources", map[string]string{"CUPD_API_RESOURCES": "./config", "CUPD_API_SOURCE": "local"}, nil, []string{"CUPD_API_RESOURCES", "--config", "CUPD_API_SOURCE"}},
		{"env unknown", map[string]string{"CUPD_NO_SUCH_FLAG": "1"}, nil, []string{"CUPD_NO_SUCH_FLAG names no flag"}},
		{"flag single dash", nil, []string{"serve", "-api-address", ":8181"}, []string{"-api-address is the original Cup's flag", "--address"}},
		{"flag double dash", nil, []string{"--api-resources=./config"}, []string{"-api-resources is the original Cup's flag", "--config"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			cmd := newRootCommand(io.Discard, io.Discard)
			// A repository that does not exist makes start-up fail at once
			// if the settings are ignored.
			cmd.SetArgs(append(tc.args, "--repository", missing))
			err := cmd.ExecuteContext(t.Context())
			if err == nil {
				t.Fatal("cupd started")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// The variable --scm-token-env names is no flag's, and is accepted.
	if err := applyEnv(newRootCommand(io.Discard, io.Discard).Flags(), []string{"CUPD_SCM_TOKEN=x", "CUPD_ADDRESS=127.0.0.1:0"}); err != nil {
		t.Errorf("applyEnv: %v", err)
	}
}

// withoutReconcilers adds --reconcile=false to cupd's arguments unless
// they say otherwise: the demo's reconciler commits a bundle after each
// flag written, which tests that count pushes, commits or WASM calls do
// not expect. internal/app's TestDemoFlagBundles and the TypeScript tests
// run it.
func withoutReconcilers(args []string) []string {
	for _, a := range args {
		if strings.HasPrefix(a, "--reconcile") {
			return args
		}
	}
	if len(args) > 0 && args[0] == "serve" {
		return append([]string{"serve", "--reconcile=false"}, args[1:]...)
	}
	return append(append([]string(nil), args...), "--reconcile=false")
}
