package tokens_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/internal/auth/tokens"
	"github.com/cup-dev/cup/internal/testlog"
)

func hash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	// Write a new file and rename it into place, as careful tools do; the
	// inode changes, so Run notices even within the file system's
	// timestamp granularity.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func load(t *testing.T, content string, opts ...tokens.Option) (*tokens.File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	writeFile(t, path, content)
	f, err := tokens.Load(path, opts...)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return f, path
}

func authenticate(f *tokens.File, authorization string) (*auth.Identity, error) {
	r := httptest.NewRequest("GET", "/", nil)
	if authorization != "" {
		r.Header.Set("Authorization", authorization)
	}
	return f.Authenticate(r)
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	f, _ := load(t, `
tokens:
- sha256: "`+hash("alice-secret")+`"
  user: alice
  groups: [flag-admins, viewers]
- sha256: "`+strings.ToUpper(hash("bob-secret"))+`"
  user: bob
`)
	if got := f.Len(); got != 2 {
		t.Errorf("Len() = %d, want 2", got)
	}
	tests := []struct {
		name          string
		authorization string
		want          *auth.Identity
		wantErr       error
	}{
		{name: "listed token", authorization: "Bearer alice-secret", want: &auth.Identity{User: "alice", Groups: []string{"flag-admins", "viewers"}, Method: "token"}},
		{name: "scheme in any case", authorization: "bearer alice-secret", want: &auth.Identity{User: "alice", Groups: []string{"flag-admins", "viewers"}, Method: "token"}},
		{name: "upper-case hash in file", authorization: "Bearer bob-secret", want: &auth.Identity{User: "bob", Method: "token"}},
		{name: "no header", wantErr: auth.ErrNoCredentials},
		{name: "basic auth", authorization: "Basic YWxpY2U6c2VjcmV0", wantErr: auth.ErrNoCredentials},
		{name: "unknown token", authorization: "Bearer mallory", wantErr: auth.ErrNoCredentials},
		{name: "prefix of a token", authorization: "Bearer alice", wantErr: auth.ErrNoCredentials},
		{name: "the hash itself", authorization: "Bearer " + hash("alice-secret"), wantErr: auth.ErrNoCredentials},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id, err := authenticate(f, tt.authorization)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Authenticate() error = %v, want %v", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "mallory") || strings.Contains(err.Error(), "alice") {
					t.Errorf("error %q repeats the credential", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Authenticate() error = %v", err)
			}
			if id.User != tt.want.User || !slices.Equal(id.Groups, tt.want.Groups) || id.Method != tt.want.Method {
				t.Errorf("Authenticate() = %+v, want %+v", id, tt.want)
			}
		})
	}
}

func TestAuthenticateReturnsACopy(t *testing.T) {
	t.Parallel()
	f, _ := load(t, `{"tokens": [{"sha256": "`+hash("t")+`", "user": "u", "groups": ["g"]}]}`)
	id, err := authenticate(f, "Bearer t")
	if err != nil {
		t.Fatal(err)
	}
	id.Groups[0] = "admins"
	id, err = authenticate(f, "Bearer t")
	if err != nil {
		t.Fatal(err)
	}
	if id.Groups[0] != "g" {
		t.Errorf("changing a returned identity changed the file's: groups = %v", id.Groups)
	}
}

func TestChain(t *testing.T) {
	t.Parallel()
	f, _ := load(t, "tokens:\n- sha256: "+hash("t")+"\n  user: u\n")
	chain := auth.Chain{f}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer other")
	_, err := chain.Authenticate(r)
	if !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("Chain.Authenticate(unknown token) error = %v, want ErrUnauthenticated", err)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	good := hash("a")
	tests := []struct {
		name    string
		content string
		want    string
	}{
		{name: "empty file", content: "", want: "empty"},
		{name: "no tokens key", content: "{}", want: "tokens: missing"},
		{name: "unknown field", content: "tokens: []\nextra: 1\n", want: `unknown field "extra"`},
		{name: "unknown entry field", content: "tokens:\n- sha256: " + good + "\n  user: u\n  token: plain\n", want: `unknown field "token"`},
		{name: "duplicate key", content: "tokens: []\ntokens: []\n", want: "tokens"},
		{name: "short hash", content: "tokens:\n- sha256: " + good + "\n  user: u\n- sha256: " + good[:63] + "\n  user: v\n", want: "tokens[1].sha256: want 64 hex digits"},
		{name: "not hex", content: "tokens:\n- sha256: " + strings.Repeat("g", 64) + "\n  user: u\n", want: "tokens[0].sha256: want 64 hex digits"},
		{name: "missing hash", content: "tokens:\n- user: u\n", want: "tokens[0].sha256: want 64 hex digits"},
		{name: "duplicate hash", content: "tokens:\n- sha256: " + good + "\n  user: u\n- sha256: " + good + "\n  user: v\n", want: "tokens[1].sha256: the same hash as tokens[0]"},
		{name: "empty user", content: "tokens:\n- sha256: " + good + "\n  user: \"\"\n", want: "tokens[0].user: missing"},
		{name: "empty group", content: "tokens:\n- sha256: " + good + "\n  user: u\n  groups: [a, \"\"]\n", want: "tokens[0].groups[1]: empty group name"},
		{name: "groups not a list", content: "tokens:\n- sha256: " + good + "\n  user: u\n  groups: a\n", want: "groups"},
		{name: "not YAML", content: "tokens: [", want: "tokens file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "tokens.yaml")
			writeFile(t, path, tt.content)
			_, err := tokens.Load(path)
			if err == nil {
				t.Fatal("Load() succeeded, want an error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load() error = %q, want it to contain %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("Load() error = %q does not name the file", err)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := tokens.Load(filepath.Join(t.TempDir(), "missing.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) error = %v, want os.ErrNotExist", err)
	}
}

func TestEmptyList(t *testing.T) {
	t.Parallel()
	f, _ := load(t, "tokens: []\n")
	if _, err := authenticate(f, "Bearer x"); !errors.Is(err, auth.ErrNoCredentials) {
		t.Errorf("Authenticate() error = %v, want ErrNoCredentials", err)
	}
}

func TestReload(t *testing.T) {
	t.Parallel()
	f, path := load(t, "tokens:\n- sha256: "+hash("one")+"\n  user: u1\n")

	writeFile(t, path, "tokens:\n- sha256: "+hash("two")+"\n  user: u2\n")
	if err := f.Reload(); err != nil {
		t.Fatalf("Reload() = %v", err)
	}
	if _, err := authenticate(f, "Bearer one"); !errors.Is(err, auth.ErrNoCredentials) {
		t.Errorf("old token after reload: error = %v, want ErrNoCredentials", err)
	}
	if id, err := authenticate(f, "Bearer two"); err != nil || id.User != "u2" {
		t.Errorf("new token after reload = %v, %v; want u2", id, err)
	}

	writeFile(t, path, "tokens:\n- sha256: nope\n  user: u3\n")
	if err := f.Reload(); err == nil || !strings.Contains(err.Error(), "tokens[0].sha256") {
		t.Errorf("Reload(bad file) = %v, want the entry's error", err)
	}
	if id, err := authenticate(f, "Bearer two"); err != nil || id.User != "u2" {
		t.Errorf("after a failed reload = %v, %v; want the previous tokens", id, err)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := f.Reload(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Reload(removed file) = %v, want os.ErrNotExist", err)
	}
	if id, err := authenticate(f, "Bearer two"); err != nil || id.User != "u2" {
		t.Errorf("after the file was removed = %v, %v; want the previous tokens", id, err)
	}
}

// eventually fails t unless cond holds within a few seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRun(t *testing.T) {
	t.Parallel()
	var logs testlog.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	f, path := load(t, "tokens:\n- sha256: "+hash("one")+"\n  user: u1\n", tokens.WithLogger(logger))

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- f.Run(ctx, 10*time.Millisecond) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run() = %v, want nil", err)
		}
	})

	accepts := func(token, user string) func() bool {
		return func() bool {
			id, err := authenticate(f, "Bearer "+token)
			return err == nil && id.User == user
		}
	}

	writeFile(t, path, "tokens:\n- sha256: "+hash("two")+"\n  user: u2\n")
	eventually(t, "the new token", accepts("two", "u2"))
	if accepts("one", "u1")() {
		t.Error("the old token is still accepted")
	}
	eventually(t, "the reload's log line", func() bool { return strings.Contains(logs.String(), "reloaded the tokens file") })

	writeFile(t, path, "tokens:\n- sha256: "+hash("three")+"\n  user: \"\"\n")
	eventually(t, "the failed reload's log line", func() bool { return strings.Contains(logs.String(), "tokens[0].user: missing") })
	if !accepts("two", "u2")() {
		t.Error("a failed reload dropped the previous tokens")
	}
	if strings.Contains(logs.String(), "three") {
		t.Error("the log repeats a token")
	}

	writeFile(t, path, "tokens:\n- sha256: "+hash("four")+"\n  user: u4\n")
	eventually(t, "recovery after a broken file", accepts("four", "u4"))
}

func TestRunStops(t *testing.T) {
	t.Parallel()
	f, _ := load(t, "tokens: []\n")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := f.Run(ctx, 0); err != nil {
		t.Errorf("Run(done context) = %v, want nil", err)
	}
}

// TestRunSameSizeRewrite revokes a token by rewriting the file in place with
// another hash of the same length, keeping its inode, size and modification
// time: Run must still notice, since the contents changed.
func TestRunSameSizeRewrite(t *testing.T) {
	t.Parallel()
	f, path := load(t, "tokens:\n- sha256: "+hash("one")+"\n  user: u1\n")
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- f.Run(ctx, 10*time.Millisecond) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run() = %v, want nil", err)
		}
	})

	// In place (no rename), so the inode stays.
	if err := os.WriteFile(path, []byte("tokens:\n- sha256: "+hash("two")+"\n  user: u1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, before.ModTime(), before.ModTime()); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("the rewrite changed the file's inode, size or modification time")
	}
	eventually(t, "the old token to be refused", func() bool {
		_, err := authenticate(f, "Bearer one")
		return errors.Is(err, auth.ErrNoCredentials)
	})
	if id, err := authenticate(f, "Bearer two"); err != nil || id.User != "u1" {
		t.Errorf("new token = %v, %v; want u1", id, err)
	}
}
