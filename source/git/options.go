package git

import (
	"log/slog"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/writes"
	"github.com/cup-dev/cup/source"
)

// Option configures a Source.
type Option func(*config)

// config is the source's own settings plus those of the write engine,
// which owns their defaults and checks.
type config struct {
	writes.Config

	branch        string
	auth          transport.AuthMethod
	cacheDir      string
	interval      time.Duration
	strict        bool
	treeCacheSize int
	blobCacheSize int64

	metrics        prometheus.Registerer
	tracerProvider trace.TracerProvider

	// cacheFS, when set, is the file system the cache directory's
	// repository is kept in instead of osfs.New(cacheDir); every write to
	// the cache, objects included, then goes through it (objects through
	// go-git's loose-object writer rather than gitfs.LooseWriter, which
	// writes straight to disk). Only tests set it (export_test.go), to
	// simulate a full disk.
	cacheFS billy.Filesystem
}

// engine turns an option of the write engine into one of the source.
func engine(o writes.Option) Option {
	return func(c *config) { o(&c.Config) }
}

func defaultConfig() config {
	return config{
		Config:        writes.DefaultConfig(),
		interval:      DefaultFetchInterval,
		treeCacheSize: gitfs.DefaultTreeCacheSize,
		blobCacheSize: gitfs.DefaultBlobCacheSize,
	}
}

// WithBranch sets the default branch: the one the revision "" names. By
// default it is the branch the remote's HEAD points to.
func WithBranch(name string) Option {
	return func(c *config) { c.branch = name }
}

// WithAuth sets the credentials for the remote; see BasicAuth, TokenAuth
// and SSHKeyAuth. By default none are sent.
func WithAuth(auth transport.AuthMethod) Option {
	return func(c *config) { c.auth = auth }
}

// WithCacheDir keeps the repository's objects and references in dir, a
// bare repository created when missing, instead of in memory (the
// default). A source started over a cache directory a previous one left
// serves it at once and fetches only what is new.
func WithCacheDir(dir string) Option {
	return func(c *config) { c.cacheDir = dir }
}

// DefaultFetchInterval is how often Run fetches unless WithFetchInterval
// says otherwise: a minute.
const DefaultFetchInterval = time.Minute

// WithFetchInterval sets how often Run fetches. Zero keeps the default,
// [DefaultFetchInterval]; less than zero turns polling off (fetches then
// happen on Fetch calls only).
func WithFetchInterval(d time.Duration) Option {
	return func(c *config) {
		if d == 0 {
			d = DefaultFetchInterval
		}
		c.interval = d
	}
}

// WithStrict makes Start fail when the remote cannot be reached, even if a
// cache directory holds an earlier state. By default (lenient) Start
// serves the cache and Run keeps trying to fetch.
func WithStrict(strict bool) Option {
	return func(c *config) { c.strict = strict }
}

// WithWriteMode sets where updates' commits go. The default is
// source.ModeDirect.
func WithWriteMode(m source.WriteMode) Option {
	return engine(writes.WithMode(m))
}

// WithBranchPrefix sets the prefix of the branches ModeBranch makes. The
// default is source.DefaultBranchPrefix ("cup/").
func WithBranchPrefix(prefix string) Option {
	return engine(writes.WithBranchPrefix(prefix))
}

// WithAuthor sets the identity the source commits as: the committer of
// every commit, and its author unless the request names one. The default
// is source.DefaultAuthorName and source.DefaultAuthorEmail, "cup
// <cup@localhost>".
func WithAuthor(name, email string) Option {
	return engine(writes.WithAuthor(name, email))
}

// WithMaxRetries sets how many times a direct update is applied again on a
// newer head when the remote rejects the push because the branch moved,
// before it fails with source.ErrConflict. The default is 5.
func WithMaxRetries(n int) Option {
	return engine(writes.WithMaxRetries(n))
}

// WithWriteGroup sets group commit: updates of a branch that queue while
// an earlier group is published are committed together, each its own
// commit, and published at once, at most max at a time (1: each on its
// own), waiting up to wait for a group to fill. The defaults are 64 and 0
// (no added wait).
func WithWriteGroup(max int, wait time.Duration) Option {
	return engine(writes.WithGroup(max, wait))
}

// WithLogger sets the logger for fetches and retried updates. By default
// nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return engine(writes.WithLogger(l))
}

// WithTreeCacheSize sets how many decoded tree entries the source keeps in
// memory. The default is gitfs.DefaultTreeCacheSize.
func WithTreeCacheSize(entries int) Option {
	return func(c *config) { c.treeCacheSize = entries }
}

// WithBlobCacheSize sets how many bytes of file content the source keeps
// in memory besides its object store. The default is
// gitfs.DefaultBlobCacheSize.
func WithBlobCacheSize(bytes int64) Option {
	return func(c *config) { c.blobCacheSize = bytes }
}

// WithClock sets the clock that dates commits. The default is time.Now.
func WithClock(now func() time.Time) Option {
	return engine(writes.WithClock(now))
}

// WithSigner signs every commit the source makes (see
// internal/signing for OpenPGP keys). By default commits are not signed.
func WithSigner(s source.Signer) Option {
	return engine(writes.WithSigner(s))
}

// WithMetrics registers the source's metrics with reg:
// cup_git_fetches_total and cup_git_pushes_total, counters labelled by
// outcome (fetches: success, unchanged, canceled, error; pushes: success,
// conflict, rejected, canceled, error), and the histograms
// cup_git_fetch_duration_seconds and cup_git_push_duration_seconds, and
// the write engine's group-commit metrics (cup_write_group_commits,
// cup_write_queue_seconds, cup_write_group_reapplied_total).
// Sources that share reg share the metrics. By default (or with a nil
// reg) nothing is registered.
func WithMetrics(reg prometheus.Registerer) Option {
	return func(c *config) { c.metrics, c.Config.Metrics = reg, reg }
}

// WithTracerProvider sets where the source's spans go: one span, of kind
// client, per fetch ("git.fetch") and per push ("git.push"), with the
// remote's redacted URL (cup.git.remote), the branch pushed
// (cup.git.branch) and the outcome (cup.git.outcome, as WithMetrics labels
// it); a failure other than a lost race sets the span's status to Error.
// By default the global provider (otel.GetTracerProvider) is used, read
// at each fetch and push, so tracing is off until a program sets one.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracerProvider = tp }
}
