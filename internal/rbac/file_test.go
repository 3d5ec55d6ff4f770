package rbac_test

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/internal/rbac"
	"github.com/cup-dev/cup/internal/testlog"
)

// adminPolicy makes user an administrator.
func adminPolicy(user string) string {
	return header + `kind: ClusterRole
metadata: {name: admin}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: ["*"]}]
---
` + header + `kind: ClusterRoleBinding
metadata: {name: admins}
subjects: [{kind: User, name: ` + user + `}]
roleRef: {kind: ClusterRole, name: admin}
`
}

const invalidPolicy = header + "kind: ClusterRole\nmetadata: {name: admin}\nrules: [{apiGroups: ['*'], resources: ['*'], verbs: [everything]}]\n"

var getProposal = auth.Attributes{Verb: auth.VerbGet, Group: "cup.dev", Plural: "proposals", Name: "1"}

// write replaces the file at path atomically, as editors and deployment
// tools do, so that a concurrent Run never sees it half written.
func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// admins returns which of the users may get a proposal.
func admins(a auth.Authorizer, users ...string) []string {
	var out []string
	for _, u := range users {
		if a.Allowed(user(u), getProposal) {
			out = append(out, u)
		}
	}
	return out
}

func wantAdmins(t *testing.T, a auth.Authorizer, want ...string) {
	t.Helper()
	if got := admins(a, "alice", "bob", "carol"); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("admins = %v, want %v", got, want)
	}
}

func TestFileReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	write(t, path, adminPolicy("alice"))
	f, err := rbac.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wantAdmins(t, f, "alice")
	if !f.Visible(user("alice"), "flipt.io", "flags") || f.Visible(user("bob"), "flipt.io", "flags") {
		t.Error("Visible does not follow the policy")
	}

	write(t, path, invalidPolicy)
	if err := f.Reload(); !errors.Is(err, rbac.ErrInvalid) {
		t.Errorf("Reload of an invalid policy: error = %v, want ErrInvalid", err)
	}
	wantAdmins(t, f, "alice")

	write(t, path, adminPolicy("bob"))
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	wantAdmins(t, f, "bob")

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := f.Reload(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Reload of a missing file: error = %v, want fs.ErrNotExist", err)
	}
	wantAdmins(t, f, "bob")
}

func TestLoadFileInvalid(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	write(t, path, invalidPolicy)
	if f, err := rbac.LoadFile(path); !errors.Is(err, rbac.ErrInvalid) || f != nil {
		t.Errorf("LoadFile = %v, %v; want nil, ErrInvalid", f, err)
	}
	if _, err := rbac.LoadFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadFile of a missing file: error = %v, want fs.ErrNotExist", err)
	}
}

// eventually waits until cond holds, failing the test after a while.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// run starts f.Run and returns a function that stops it and checks what it
// returned.
func run(t *testing.T, f *rbac.File, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx, interval) }()
	return func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after its context was cancelled")
		}
	}
}

func TestFileRun(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"roles.yaml": adminPolicy("alice")})
	var logs testlog.Buffer
	f, err := rbac.LoadFile(dir, rbac.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, f, time.Millisecond)
	defer stop()

	// A new file in the directory.
	write(t, filepath.Join(dir, "more.yaml"), header+`kind: ClusterRoleBinding
metadata: {name: more}
subjects: [{kind: User, name: carol}]
roleRef: {kind: ClusterRole, name: admin}
`)
	eventually(t, "the new file to be loaded", func() bool { return f.Allowed(user("carol"), getProposal) })
	wantAdmins(t, f, "alice", "carol")
	eventually(t, "the reload to be logged", func() bool {
		return strings.Contains(logs.String(), `level=INFO msg="reloaded the RBAC policy"`)
	})

	// An invalid change keeps the policy in force.
	write(t, filepath.Join(dir, "roles.yaml"), invalidPolicy)
	eventually(t, "the invalid policy to be reported", func() bool {
		return strings.Contains(logs.String(), "level=WARN")
	})
	if got := logs.String(); !strings.Contains(got, `unknown verb \"everything\"`) {
		t.Errorf("logs do not say what is wrong:\n%s", got)
	}
	wantAdmins(t, f, "alice", "carol")

	// A valid change replaces it.
	write(t, filepath.Join(dir, "roles.yaml"), adminPolicy("bob"))
	eventually(t, "the fixed policy to be loaded", func() bool { return f.Allowed(user("bob"), getProposal) })
	wantAdmins(t, f, "bob", "carol")
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
	}
}

func TestFileRunReadError(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	write(t, path, adminPolicy("alice"))
	// In a bubble, "some more checks" are exactly that many ticks of Run.
	synctest.Test(t, func(t *testing.T) {
		var logs testlog.Buffer
		f, err := rbac.LoadFile(path, rbac.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		if err != nil {
			t.Fatal(err)
		}
		stop := run(t, f, time.Millisecond)
		defer stop()

		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the missing file to be reported", func() bool {
			return strings.Contains(logs.String(), "reading the RBAC policy failed")
		})
		time.Sleep(20 * time.Millisecond) // twenty more checks
		if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
			t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
		}
		wantAdmins(t, f, "alice")

		// The same content again is not a change: nothing to reload.
		write(t, path, adminPolicy("alice"))
		write(t, path+".other", "") // a sibling file is not part of the policy
		time.Sleep(20 * time.Millisecond)
		if strings.Contains(logs.String(), "level=INFO") {
			t.Errorf("reloaded an unchanged policy:\n%s", logs.String())
		}
		write(t, path, adminPolicy("bob"))
		eventually(t, "the new file to be loaded", func() bool { return f.Allowed(user("bob"), getProposal) })
	})
}

func TestFileRunStops(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	write(t, path, adminPolicy("alice"))
	f, err := rbac.LoadFile(path, rbac.WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, interval := range []time.Duration{0, -1, time.Hour} {
		stop := run(t, f, interval)
		stop()
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := f.Run(ctx, time.Millisecond); err != nil {
		t.Errorf("Run with a cancelled context = %v, want nil", err)
	}
}
