package scm_test

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/scm"
)

// The EnvToken tests set variables, so they cannot run in parallel.

func TestEnvToken(t *testing.T) {
	const name = "CUP_SCM_TEST_TOKEN"
	src := scm.EnvToken(name)
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) { _, _ = io.WriteString(w, "{}") })
	c := f.client(scm.HTTPOptions{Token: src})

	t.Setenv(name, " env-token-1\n")
	get(t, c, f.URL+"/pulls")
	t.Setenv(name, "env-token-2")
	get(t, c, f.URL+"/pulls")
	calls := f.Calls()
	if calls[0].Auth != "Bearer env-token-1" || calls[1].Auth != "Bearer env-token-2" {
		t.Errorf("got %q, %q; want each call to read the variable again", calls[0].Auth, calls[1].Auth)
	}
}

func TestEnvTokenUnset(t *testing.T) {
	const name = "CUP_SCM_TEST_UNSET_TOKEN"
	for _, value := range []string{"", "  \n"} {
		t.Setenv(name, value)
		if value == "" {
			os.Unsetenv(name)
		}
		_, err := scm.EnvToken(name).Token(t.Context())
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("value %q: got %v, want an error naming %s", value, err, name)
		}
		// Through the client the call fails as unauthenticated, before
		// anything is sent.
		f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {})
		c := f.client(scm.HTTPOptions{Token: scm.EnvToken(name)})
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.URL+"/pulls", nil)
		res, err := c.Do(req)
		if err == nil {
			res.Body.Close()
			t.Fatal("the call succeeded without a token")
		}
		if !errors.Is(err, scm.ErrUnauthenticated) || !strings.Contains(err.Error(), name) {
			t.Errorf("got %v, want ErrUnauthenticated naming %s", err, name)
		}
		if len(f.Calls()) != 0 {
			t.Errorf("%d calls were sent", len(f.Calls()))
		}
	}
}

func TestFileTokenRotation(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "token")
	// rotate replaces the file as rotating tools do: a new file renamed
	// over the old one.
	rotate := func(tok string) {
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) { _, _ = io.WriteString(w, "{}") })
	c := f.client(scm.HTTPOptions{Token: scm.FileToken(path)})

	rotate("file-token-1\n")
	get(t, c, f.URL+"/pulls")
	get(t, c, f.URL+"/pulls")
	rotate("file-token-2\n")
	get(t, c, f.URL+"/pulls")
	// Rewritten in place, with the same size, at once: the same inode,
	// size and perhaps modification time, which must still be noticed.
	if err := os.WriteFile(path, []byte("file-token-3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	get(t, c, f.URL+"/pulls")

	var got []string
	for _, c := range f.Calls() {
		got = append(got, strings.TrimPrefix(c.Auth, "Bearer "))
	}
	want := []string{"file-token-1", "file-token-1", "file-token-2", "file-token-3"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("calls carried %q, want %q", got, want)
	}
}

func TestFileTokenUnchangedIsNotReread(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "token")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	write := func(tok string, mtime time.Time) {
		if err := os.WriteFile(path, []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	src := scm.FileToken(path)
	token := func() string {
		tok, err := src.Token(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	write("token-A", old)
	if got := token(); got != "token-A" {
		t.Fatalf("got %q, want token-A", got)
	}
	// New contents behind an unchanged stat (inode, size and time): the
	// cached token proves the file was not read again.
	write("token-B", old)
	if got := token(); got != "token-A" {
		t.Errorf("got %q with the file's stat unchanged, want the cached token-A", got)
	}
	// A different modification time makes it read again.
	write("token-B", old.Add(time.Second))
	if got := token(); got != "token-B" {
		t.Errorf("got %q after the file changed, want token-B", got)
	}
}

func TestFileTokenRewrittenWithinATimestampTick(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "token")
	// Both writes get the same, recent, modification time, as two writes
	// within one tick of a coarse file-system clock do.
	tick := time.Now().Truncate(time.Second)
	src := scm.FileToken(path)
	for _, tok := range []string{"token-1", "token-2"} {
		if err := os.WriteFile(path, []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, tick, tick); err != nil {
			t.Fatal(err)
		}
		if got, err := src.Token(t.Context()); err != nil || got != tok {
			t.Errorf("got %q, %v; want %s", got, err, tok)
		}
	}
}

func TestFileTokenErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name     string
		contents *string
		want     string
	}{
		{name: "missing", want: "no such file"},
		{name: "empty", contents: new(""), want: "is empty"},
		{name: "blank", contents: new(" \n\t\n"), want: "is empty"},
		{name: "too large", contents: new(strings.Repeat("x", 1<<20)), want: "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
			if tt.contents != nil {
				if err := os.WriteFile(path, []byte(*tt.contents), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			tok, err := scm.FileToken(path).Token(t.Context())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q, %v; want an error saying %q", tok, err, tt.want)
			}
		})
	}
}

func TestFileTokenTrims(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("  glpat-xyz \r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := scm.FileToken(path).Token(t.Context())
	if err != nil || tok != "glpat-xyz" {
		t.Errorf("got %q, %v; want glpat-xyz", tok, err)
	}
}
