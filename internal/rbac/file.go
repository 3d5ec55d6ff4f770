package rbac

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"log/slog"
	"time"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/internal/filewatch"
)

// DefaultInterval is how often [File.Run] checks the policy files when it
// is given an interval of zero or less.
const DefaultInterval = filewatch.DefaultInterval

// Option configures a File.
type Option func(*options)

type options struct {
	logger *slog.Logger
}

// WithLogger sets where [File.Run] reports reloads: each successful one at
// level Info, each failed one (the previous policy stays in force) at level
// Warn, with the error, which lists every problem. Nothing else logs. By
// default nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// File is the policy loaded from a file or directory, kept up to date by
// [File.Reload] and [File.Run]. It is an [auth.Authorizer] that answers
// with the policy in force. Its methods are safe for concurrent use.
type File struct {
	policy *filewatch.Value[policyFiles, Policy]
}

var _ auth.Authorizer = (*File)(nil)

// LoadFile loads the policy at path, as [Load] does, and returns a File
// holding it, or Load's error. Call [File.Run] to follow changes.
func LoadFile(path string, opts ...Option) (*File, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	f := &File{policy: filewatch.New(policySource{path: path}, filewatch.Log[Policy]{
		Logger:     o.logger,
		Attrs:      []any{"path", path},
		ReadFailed: "reading the RBAC policy failed; keeping the previous policy",
		Invalid:    "the changed RBAC policy is not valid; keeping the previous policy",
		Reloaded:   "reloaded the RBAC policy",
		ReloadedAttrs: func(p *Policy) []any {
			return []any{"roles", p.roles, "bindings", p.bindings}
		},
	})}
	if err := f.Reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// Allowed implements [auth.Authorizer] with the policy in force; see
// [Policy.Allowed].
func (f *File) Allowed(id *auth.Identity, a auth.Attributes) bool {
	return f.policy.Load().Allowed(id, a)
}

// Visible implements [auth.Authorizer] with the policy in force; see
// [Policy.Visible].
func (f *File) Visible(id *auth.Identity, group, plural string) bool {
	return f.policy.Load().Visible(id, group, plural)
}

// Reload reads the policy files now, whether or not they changed. If they
// cannot be read or the policy is not valid, Reload returns the error (an
// [*Error] for an invalid policy) and the policy in force stays as it was;
// otherwise the new policy replaces it at once.
func (f *File) Reload() error { return f.policy.Reload() }

// Run checks every interval (DefaultInterval if interval is zero or less)
// whether the policy files changed (their names or content), and reloads
// them if so. Failures are logged (see [WithLogger]) and keep the policy in
// force; invalid files are read again once they change again. Run returns
// nil when ctx is done.
func (f *File) Run(ctx context.Context, interval time.Duration) error {
	return f.policy.Run(ctx, interval)
}

// policySource reads the policy files at path: a file, or the policy files
// of a directory. A change is one of their names or contents; a failure to
// read them is logged once until it changes.
type policySource struct {
	path string
}

var _ filewatch.Source[policyFiles, Policy] = policySource{}

// policyFiles are the policy files as read, and their hash.
type policyFiles struct {
	files []file
	sum   [sha256.Size]byte
}

func (s policySource) Read() (policyFiles, error) {
	files, err := readFiles(s.path)
	if err != nil {
		return policyFiles{}, err
	}
	return policyFiles{files: files, sum: hashFiles(files)}, nil
}

func (policySource) Same(prev, cur policyFiles) bool { return prev.sum == cur.sum }

func (policySource) Parse(pf policyFiles) (*Policy, error) { return parse(pf.files) }

// hashFiles returns a hash of the files' names and contents.
func hashFiles(files []file) [sha256.Size]byte {
	h := sha256.New()
	for _, f := range files {
		for _, b := range [][]byte{[]byte(f.path), f.data} {
			_ = binary.Write(h, binary.BigEndian, uint64(len(b)))
			h.Write(b)
		}
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
