package rbac

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cup-dev/cup/internal/auth"
)

// DefaultInterval is how often [File.Run] checks the policy files when it
// is given an interval of zero or less.
const DefaultInterval = 5 * time.Second

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
	return func(o *options) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		o.logger = l
	}
}

// File is the policy loaded from a file or directory, kept up to date by
// [File.Reload] and [File.Run]. It is an [auth.Authorizer] that answers
// with the policy in force. Its methods are safe for concurrent use.
type File struct {
	path   string
	logger *slog.Logger

	policy atomic.Pointer[Policy]

	reloadMu sync.Mutex // serialises Reload and Run's checks; guards the rest
	// sum is the hash of the files last read, whether they loaded or not,
	// so that Run does not parse a broken policy again until it changes.
	sum [sha256.Size]byte
	// readErr is the last error reading the files, so that Run reports it
	// once rather than at every check.
	readErr string
}

var _ auth.Authorizer = (*File)(nil)

// LoadFile loads the policy at path, as [Load] does, and returns a File
// holding it, or Load's error. Call [File.Run] to follow changes.
func LoadFile(path string, opts ...Option) (*File, error) {
	o := options{logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	f := &File{path: path, logger: o.logger}
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
func (f *File) Reload() error {
	f.reloadMu.Lock()
	defer f.reloadMu.Unlock()
	files, err := readFiles(f.path)
	if err != nil {
		return err
	}
	f.readErr = ""
	return f.load(files)
}

// load parses files and puts the policy in force. Callers hold reloadMu.
func (f *File) load(files []file) error {
	f.sum = hashFiles(files)
	p, err := parse(files)
	if err != nil {
		return err
	}
	f.policy.Store(p)
	return nil
}

// Run checks every interval (DefaultInterval if interval is zero or less)
// whether the policy files changed (their names or content), and reloads
// them if so. Failures are logged (see [WithLogger]) and keep the policy in
// force; invalid files are read again once they change again. Run returns
// nil when ctx is done.
func (f *File) Run(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		f.check(ctx)
	}
}

// check reloads the policy if the files changed, and logs the outcome.
func (f *File) check(ctx context.Context) {
	f.reloadMu.Lock()
	defer f.reloadMu.Unlock()
	files, err := readFiles(f.path)
	if err != nil {
		// Perhaps the moment of a replacement: keep the policy and look
		// again next time.
		if err.Error() != f.readErr {
			f.readErr = err.Error()
			f.logger.WarnContext(ctx, "reading the RBAC policy failed; keeping the previous policy", "path", f.path, "error", err)
		}
		return
	}
	f.readErr = ""
	if hashFiles(files) == f.sum {
		return
	}
	if err := f.load(files); err != nil {
		f.logger.WarnContext(ctx, "the changed RBAC policy is not valid; keeping the previous policy", "path", f.path, "error", err)
		return
	}
	p := f.policy.Load()
	f.logger.InfoContext(ctx, "reloaded the RBAC policy", "path", f.path, "roles", p.roles, "bindings", p.bindings)
}

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
