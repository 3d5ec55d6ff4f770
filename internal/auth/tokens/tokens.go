// Package tokens authenticates callers by static bearer tokens listed in a
// file that holds only the tokens' SHA-256 hashes.
//
// The file is YAML or JSON:
//
//	tokens:
//	- sha256: "<lowercase hex SHA-256 of the token>"
//	  user: alice
//	  groups: [flag-admins, viewers]
//
// Every entry needs a hash (64 hex digits, listed once) and a user; groups
// are optional. Unknown fields are errors, and so is a file without a
// tokens key (write "tokens: []" for none), so that a truncated or empty
// file is not taken for "no tokens".
//
// Make a token and its line with, for example:
//
//	token=$(openssl rand -hex 32)
//	printf %s "$token" | sha256sum
//
// A [File] is loaded once with [Load] and may be reloaded while the server
// runs, by [File.Run] (which polls the file) or [File.Reload] (for a
// SIGHUP). A reload that fails keeps the tokens loaded before.
package tokens

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/internal/filewatch"
)

// DefaultInterval is how often [File.Run] checks the file when it is given
// an interval of zero or less.
const DefaultInterval = filewatch.DefaultInterval

// Option configures a File.
type Option func(*options)

type options struct {
	logger *slog.Logger
}

// WithLogger sets where [File.Run] reports reloads: each successful one at
// level Info, each failed one (the previous tokens stay in force) at level
// Warn. Nothing else logs. By default nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// File is a set of tokens loaded from a file. It is an
// [auth.Authenticator]. It never holds a plain token, only hashes. Its
// methods are safe for concurrent use.
type File struct {
	set *filewatch.Value[contents, tokenSet]
}

var _ auth.Authenticator = (*File)(nil)

type tokenSet struct {
	byHash map[[sha256.Size]byte]*auth.Identity
}

// Load reads and checks the tokens file at path. Errors name the file and
// the offending entry, e.g. "tokens[2].sha256: want 64 hex digits".
func Load(path string, opts ...Option) (*File, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	const failed = "reloading the tokens file failed; keeping the previous tokens"
	f := &File{set: filewatch.New(source{path: path}, filewatch.Log[tokenSet]{
		Logger:        o.logger,
		Attrs:         []any{"path", path},
		ReadFailed:    failed,
		Invalid:       failed,
		Reloaded:      "reloaded the tokens file",
		ReloadedAttrs: func(s *tokenSet) []any { return []any{"tokens", len(s.byHash)} },
	})}
	if err := f.Reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// Len returns how many tokens are in force.
func (f *File) Len() int { return len(f.set.Load().byHash) }

// Authenticate implements [auth.Authenticator]. A request without a bearer
// token, or with one whose hash the file does not list, fails with
// [auth.ErrNoCredentials], so that another authenticator (OIDC) may accept
// it; [auth.Chain] reports a token that nobody accepts. A listed token
// yields the entry's user and groups, with Method [auth.MethodToken].
func (f *File) Authenticate(r *http.Request) (*auth.Identity, error) {
	token, ok := auth.BearerToken(r)
	if !ok {
		return nil, auth.NoCredentialsf("no bearer token")
	}
	// Hashing first makes the lookup's time independent of how much of the
	// token matches a listed one.
	id, ok := f.set.Load().byHash[sha256.Sum256([]byte(token))]
	if !ok {
		return nil, auth.NoCredentialsf("the bearer token is not a listed static token")
	}
	return &auth.Identity{User: id.User, Groups: append([]string(nil), id.Groups...), Method: id.Method}, nil
}

// Reload reads the file now, whether or not it changed. If it cannot be
// read or is not valid, Reload returns the error and the tokens in force
// stay as they were; otherwise the new tokens replace them at once.
func (f *File) Reload() error { return f.set.Reload() }

// Run checks every interval (DefaultInterval if interval is zero or less)
// whether the file's contents changed, and reloads it if so. Failures are
// logged (see WithLogger) and keep the previous tokens: a failure to read
// the file once until it succeeds or fails otherwise, invalid contents once
// until they change. Run returns nil when ctx is done.
func (f *File) Run(ctx context.Context, interval time.Duration) error {
	return f.set.Run(ctx, interval)
}

// source is the tokens file at path. A change is one of its contents,
// compared by their SHA-256, so that an edit in place that keeps the size
// and the modification time (one hash swapped for another) is not missed.
type source struct {
	path string
}

var _ filewatch.Source[contents, tokenSet] = source{}

// contents are the file's bytes as read, and their hash.
type contents struct {
	data []byte
	sum  [sha256.Size]byte
}

func (s source) Read() (contents, error) {
	data, err := os.ReadFile(s.path)
	if err != nil {
		// Possibly the moment of an atomic replacement: Run keeps the
		// tokens and looks again next time.
		return contents{}, fmt.Errorf("tokens file: %w", err)
	}
	return contents{data: data, sum: sha256.Sum256(data)}, nil
}

func (source) Same(prev, cur contents) bool { return prev.sum == cur.sum }

func (s source) Parse(c contents) (*tokenSet, error) {
	set, err := parse(c.data)
	if err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", s.path, err)
	}
	return set, nil
}

// document is the file's shape.
type document struct {
	Tokens *[]entry `json:"tokens"`
}

type entry struct {
	SHA256 string   `json:"sha256"`
	User   string   `json:"user"`
	Groups []string `json:"groups,omitempty"`
}

func parse(data []byte) (*tokenSet, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the file is empty; want a tokens list (tokens: [] for none)")
	}
	var doc document
	if err := yaml.UnmarshalStrict(data, &doc); err != nil {
		return nil, errors.New(tidy(err.Error()))
	}
	if doc.Tokens == nil {
		return nil, errors.New("tokens: missing; want a list (tokens: [] for none)")
	}
	set := &tokenSet{byHash: make(map[[sha256.Size]byte]*auth.Identity, len(*doc.Tokens))}
	index := make(map[[sha256.Size]byte]int, len(*doc.Tokens))
	for i, e := range *doc.Tokens {
		var h [sha256.Size]byte
		if len(e.SHA256) != hex.EncodedLen(sha256.Size) {
			return nil, fmt.Errorf("tokens[%d].sha256: want 64 hex digits (the SHA-256 of the token, e.g. from sha256sum), have %d characters", i, len(e.SHA256))
		}
		if _, err := hex.Decode(h[:], []byte(e.SHA256)); err != nil {
			return nil, fmt.Errorf("tokens[%d].sha256: want 64 hex digits (the SHA-256 of the token, e.g. from sha256sum)", i)
		}
		if j, dup := index[h]; dup {
			return nil, fmt.Errorf("tokens[%d].sha256: the same hash as tokens[%d]", i, j)
		}
		index[h] = i
		if e.User == "" {
			return nil, fmt.Errorf("tokens[%d].user: missing", i)
		}
		for j, g := range e.Groups {
			if g == "" {
				return nil, fmt.Errorf("tokens[%d].groups[%d]: empty group name", i, j)
			}
		}
		set.byHash[h] = &auth.Identity{User: e.User, Groups: e.Groups, Method: auth.MethodToken}
	}
	return set, nil
}

// tidy drops the decoding layers sigs.k8s.io/yaml names in its errors.
func tidy(msg string) string {
	for _, p := range []string{"error converting YAML to JSON: ", "error unmarshaling JSON: ", "while decoding JSON: ", "yaml: ", "json: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}
