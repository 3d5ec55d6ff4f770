package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	url := newServer(t)

	out := ok(t, url, "version")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "Client: ") || !strings.HasPrefix(lines[1], "Server: ") ||
		!strings.Contains(out, runtime.Version()) {
		t.Errorf("cup version printed %q, want a Client and a Server line", out)
	}

	var v struct {
		Client struct{ Version, GoVersion string }
		Server *struct{ Version, GoVersion string }
	}
	if err := json.Unmarshal([]byte(ok(t, url, "version", "-o", "json")), &v); err != nil || v.Client.Version == "" || v.Server == nil || v.Server.GoVersion != runtime.Version() {
		t.Errorf("cup version -o json = %+v, %v", v, err)
	}

	// The client's version needs no server.
	if out := ok(t, "http://127.0.0.1:1", "version", "--client"); !strings.HasPrefix(out, "Client: ") || strings.Contains(out, "Server") {
		t.Errorf("cup version --client printed %q", out)
	}
	r := cup(t, "http://127.0.0.1:1", "", "version")
	if r.code != 1 || !strings.HasPrefix(r.stdout, "Client: ") || !strings.Contains(r.stderr, "cannot reach the server") {
		t.Errorf("cup version without a server: exit %d, stdout %q, stderr %q; want the client's version, then the error", r.code, r.stdout, r.stderr)
	}
	fails(t, url, "--output", "version", "-o", "yaml")
}
