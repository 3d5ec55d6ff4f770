package server_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/server"
)

// recorder keeps every log record, and passes it on to t.
type recorder struct {
	mu      *sync.Mutex
	records *[]slog.Record
	next    slog.Handler
	attrs   []slog.Attr
}

func newRecorder(t *testing.T) *recorder {
	return &recorder{mu: new(sync.Mutex), records: new([]slog.Record),
		next: slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})}
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(ctx context.Context, rec slog.Record) error {
	rec = rec.Clone()
	rec.AddAttrs(r.attrs...)
	r.mu.Lock()
	*r.records = append(*r.records, rec)
	r.mu.Unlock()
	return r.next.Handle(ctx, rec)
}

func (r *recorder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *r
	c.attrs = append(slices.Clone(r.attrs), as...)
	return &c
}

func (r *recorder) WithGroup(string) slog.Handler { return r }

// of returns the records whose request_id is id, each as its level, its
// message and its attributes.
func (r *recorder) of(id string) []logLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logLine
	for _, rec := range *r.records {
		l := logLine{level: rec.Level, msg: rec.Message, attrs: map[string]string{}}
		rec.Attrs(func(a slog.Attr) bool {
			l.attrs[a.Key] = a.Value.String()
			return true
		})
		if l.attrs["request_id"] == id {
			out = append(out, l)
		}
	}
	return out
}

type logLine struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// TestChain checks what the chain does for every call, on one fixture:
// request ids, and the log.
func TestChain(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	f := newFixture(t, servertest.WithServerOptions(server.WithLogger(slog.New(rec))))
	t.Run("request id", func(t *testing.T) { testRequestID(t, f, rec) })
	t.Run("log levels", func(t *testing.T) { testLogLevels(t, f, rec) })
}

// testRequestID checks that every answer carries an X-Request-Id, the
// caller's when it is sane, and that the log lines of the call carry it.
func testRequestID(t *testing.T, f *fixture, rec *recorder) {
	generated := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for _, tc := range []struct {
		name, sent string
		kept       bool
	}{
		{"sane", "req-0001/a.b_c:D", true},
		{"128 characters", strings.Repeat("r", 128), true},
		{"none", "", false},
		{"too long", strings.Repeat("r", 129), false},
		{"space", "a b", false},
		{"not ASCII", "caf\u00e9", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, call := range []struct{ method, path, body, contentType string }{
				{"GET", flagsPath + "/dark-mode", "", ""},
				{"GET", flagsPath + "/no-such-flag", "", ""},
				{"POST", "/cup.v1alpha1.ResourceService/Get", `{"group": "flags.cup.dev", "version": "v1alpha1", "plural": "flags", "namespace": "default", "name": "no-such-flag"}`, "application/json"},
				{"GET", "/healthz", "", ""},
			} {
				var header []string
				if tc.sent != "" {
					header = append(header, "X-Request-Id", tc.sent)
				}
				if call.contentType != "" {
					header = append(header, "Content-Type", call.contentType)
				}
				r := f.do(t, call.method, call.path, call.body, header...)
				got := r.header.Get("X-Request-Id")
				switch {
				case tc.kept && got != tc.sent:
					t.Fatalf("%s %s: X-Request-Id %q, want the caller's %q", call.method, call.path, got, tc.sent)
				case !tc.kept && !generated.MatchString(got):
					t.Fatalf("%s %s: X-Request-Id %q, want a new id of 32 hex digits", call.method, call.path, got)
				}
				// A failed call logs a line, with the request's id.
				if r.status == 404 && len(rec.of(got)) == 0 {
					t.Fatalf("%s %s: no log line carries request_id %q", call.method, call.path, got)
				}
			}
		})
	}
}

// testLogLevels checks what a call logs: one line per write at info with
// who wrote what, the commit, the outcome and the duration; the caller's
// mistakes never at error.
func testLogLevels(t *testing.T, f *fixture, rec *recorder) {
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		// write is the outcome of the write line the call logs; empty
		// for a call that logs no write line.
		write string
	}{
		{"put", "PUT", flagsPath + "/logged", `{"spec": {"enabled": true}}`, 202, "committed"},
		{"put again", "PUT", flagsPath + "/logged", `{"spec": {"enabled": true}}`, 204, "unchanged"},
		{"dry run", "PUT", flagsPath + "/logged?dryRun=true", `{"spec": {"enabled": false}}`, 200, "dry_run"},
		{"failed precondition", "PUT", flagsPath + "/logged?resourceVersion=00ff", `{"spec": {"enabled": false}}`, 409, "failed"},
		{"delete of a missing flag", "DELETE", flagsPath + "/no-such-flag", "", 404, "failed"},
		{"delete", "DELETE", flagsPath + "/logged", "", 202, "committed"},
		{"bad body", "PUT", flagsPath + "/logged", `{"spec": {"enabled": true}, "status": {}}`, 400, ""},
		{"schema violation", "PUT", flagsPath + "/logged", `{"spec": {"enabled": "yes"}}`, 400, ""},
		{"unknown parameter", "GET", flagsPath + "?limt=5", "", 400, ""},
		{"missing", "GET", flagsPath + "/no-such-flag", "", 404, ""},
		{"method not allowed", "POST", flagsPath + "/x", "", 405, ""},
		{"no route", "GET", "/apis/nothing/here", "", 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "log-levels-" + strings.ReplaceAll(tc.name, " ", "-")
			r := f.do(t, tc.method, tc.path, tc.body, "X-Request-Id", id)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			lines := rec.of(id)
			var writes []logLine
			for _, l := range lines {
				if l.level >= slog.LevelError {
					t.Errorf("logged at %s: %s %v", l.level, l.msg, l.attrs)
				}
				if l.msg == "write" {
					writes = append(writes, l)
				}
			}
			if tc.write == "" {
				if len(writes) > 0 {
					t.Fatalf("logged a write line: %v", writes[0].attrs)
				}
				if r.status >= 400 && len(lines) == 0 {
					t.Fatal("logged nothing of a failed call")
				}
				return
			}
			if len(writes) != 1 {
				t.Fatalf("logged %d write lines, want 1: %v", len(writes), lines)
			}
			w := writes[0]
			if w.level != slog.LevelInfo {
				t.Errorf("write logged at %s, want INFO", w.level)
			}
			for _, k := range []string{"who", "verb", "resource", "commit", "outcome", "code", "duration", "procedure", "form"} {
				if _, ok := w.attrs[k]; !ok {
					t.Errorf("the write line has no %s: %v", k, w.attrs)
				}
			}
			if w.attrs["outcome"] != tc.write || !strings.HasSuffix(w.attrs["resource"], "default/"+strings.TrimPrefix(strings.SplitN(tc.path, "?", 2)[0], flagsPath+"/")) ||
				w.attrs["form"] != "rest" {
				t.Errorf("write line %v: want outcome %q, the resource and the form rest", w.attrs, tc.write)
			}
			if tc.write == "committed" && len(w.attrs["commit"]) != 40 {
				t.Errorf("write line %v: want the commit", w.attrs)
			}
		})
	}
}

// failingAuthn fails every request with err; allowNone allows nothing.
type failingAuthn struct{ err error }

func (a failingAuthn) Authenticate(*http.Request) (*auth.Identity, error) { return nil, a.err }

type allowNone struct{}

func (allowNone) Allowed(*auth.Identity, auth.Attributes) bool { return false }
func (allowNone) Visible(*auth.Identity, string, string) bool  { return false }

// TestAuthenticationFailuresAreLogged: a caller without good credentials
// is a rejected call (debug, unauthenticated), not a server fault; an
// authenticator that cannot decide (an issuer out of reach) is a warning
// that names its cause, which the caller never sees.
func TestAuthenticationFailuresAreLogged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		level  slog.Level
		code   string
		inLog  string
		status int
	}{
		{auth.Unauthenticatedf("malformed token"), slog.LevelDebug, "unauthenticated", "malformed token", 401},
		{auth.ErrNoCredentials, slog.LevelDebug, "unauthenticated", "no credentials", 401},
		{errors.New("issuer keys: dial tcp 10.0.0.1:443: i/o timeout"), slog.LevelWarn, "unavailable", "i/o timeout", 503},
	} {
		rec := newRecorder(t)
		f := newFixture(t, servertest.WithServerOptions(server.WithLogger(slog.New(rec)), server.WithAuthorization(failingAuthn{tc.err}, allowNone{})))
		r := f.do(t, "GET", flagsPath+"/dark-mode", "")
		lines := rec.of(r.header.Get("X-Request-Id"))
		if r.status != tc.status || len(lines) != 1 || lines[0].level != tc.level || lines[0].attrs["code"] != tc.code || !strings.Contains(lines[0].attrs["error"], tc.inLog) {
			t.Errorf("%v: status %d, log %+v; want %d and one %s line with code %s naming %q", tc.err, r.status, lines, tc.status, tc.level, tc.code, tc.inLog)
		}
		if strings.Contains(string(r.body), "10.0.0.1") {
			t.Errorf("%v: the answer names the cause: %s", tc.err, r.body)
		}
	}
}
