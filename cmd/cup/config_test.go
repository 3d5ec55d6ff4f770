package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfig(t *testing.T) { // not parallel: it sets CUP_CONFIG
	url := newServer(t)
	cfg := filepath.Join(t.TempDir(), "sub", "config.yaml")
	t.Setenv("CUP_CONFIG", cfg)

	fails(t, "", "no current context", "config", "current-context")
	if got := ok(t, "", "config", "set-context", "demo", "--server", url, "-n", "production", "--token", "s3cret"); got != "Created context \"demo\".\n" {
		t.Fatalf("got %q", got)
	}
	info, err := os.Stat(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	if got := ok(t, "", "config", "current-context"); got != "demo\n" {
		t.Fatalf("got %q", got)
	}
	view := ok(t, "", "config", "view")
	if !strings.Contains(view, "server: "+url) || !strings.Contains(view, "token: REDACTED") || strings.Contains(view, "s3cret") {
		t.Fatalf("view:\n%s", view)
	}
	if raw := ok(t, "", "config", "view", "--raw"); !strings.Contains(raw, "token: s3cret") {
		t.Fatalf("view --raw:\n%s", raw)
	}

	// The context's server and namespace are used.
	if got := ok(t, "", "get", "flags", "-o", "name"); got != "flags.flags.cup.dev/new-checkout\n" {
		t.Fatalf("production flags: %q", got)
	}
	// Flags and the environment override it.
	if got := ok(t, "", "get", "flags", "-n", "staging", "-o", "name"); !strings.Contains(got, "dark-mode") {
		t.Fatalf("-n staging: %q", got)
	}
	t.Setenv("CUP_NAMESPACE", "default")
	if got := ok(t, "", "get", "flags", "-o", "name"); !strings.Contains(got, "search-v2") {
		t.Fatalf("CUP_NAMESPACE=default: %q", got)
	}
	os.Unsetenv("CUP_NAMESPACE")

	// A second context, switched to and back.
	ok(t, "", "config", "set-context", "broken", "--server", "http://127.0.0.1:1", "--protocol", "grpc")
	if got := ok(t, "", "config", "use-context", "broken"); got != "Switched to context \"broken\".\n" {
		t.Fatalf("got %q", got)
	}
	fails(t, "", "", "get", "flags")
	if got := ok(t, "", "--context", "demo", "get", "flags", "-o", "name"); got != "flags.flags.cup.dev/new-checkout\n" {
		t.Fatalf("--context demo: %q", got)
	}
	t.Setenv("CUP_CONTEXT", "demo")
	ok(t, "", "get", "flags")
	os.Unsetenv("CUP_CONTEXT")
	t.Setenv("CUP_SERVER", url)
	ok(t, "", "get", "flags", "-n", "default") // CUP_SERVER overrides the context's server
	os.Unsetenv("CUP_SERVER")

	if got := ok(t, "", "config", "set-context", "broken", "--server", url); got != "Modified context \"broken\".\n" {
		t.Fatalf("got %q", got)
	}
	ok(t, "", "get", "flags") // now over gRPC to the right server

	// get-contexts: the current one marked, credentials named but never shown.
	want := "CURRENT   NAME     SERVER" + strings.Repeat(" ", len(url)-6) + "   NAMESPACE    CREDENTIALS\n" +
		"          demo     " + url + "   production   token\n" +
		"*         broken   " + url + "                none\n"
	if got := ok(t, "", "config", "get-contexts"); got != want {
		t.Fatalf("get-contexts:\n%s\nwant:\n%s", got, want)
	}
	if got := ok(t, "", "config", "get-contexts", "-o", "name", "broken"); got != "broken\n" {
		t.Fatalf("get-contexts -o name broken: %q", got)
	}
	fails(t, "", `context "nope" is not in the configuration`, "config", "get-contexts", "demo", "nope")
	fails(t, "", `--output "yaml"`, "config", "get-contexts", "-o", "yaml")
	fails(t, "", `context "nope" is not in the configuration`, "config", "use-context", "nope")
	fails(t, "", `context "nope" is not in the configuration`, "--context", "nope", "get", "flags")
	fails(t, "", "neither connect nor grpc", "config", "set-context", "x", "--protocol", "carrier-pigeon")

	if err := os.WriteFile(cfg, []byte("currentContext: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fails(t, "", cfg, "get", "flags")
}

func TestToken(t *testing.T) {
	t.Parallel()
	// The demo server accepts any token; the call still succeeds with one set.
	url := newServer(t)
	ok(t, url, "--token", "abc", "get", "flags")
	ok(t, url, "--token", "abc", "--protocol", "grpc", "get", "flags")
}
