package git

import (
	"log/slog"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

// Option configures a Source.
type Option func(*config)

type config struct {
	branch        string
	auth          transport.AuthMethod
	cacheDir      string
	interval      time.Duration
	strict        bool
	mode          source.WriteMode
	prefix        string
	authorName    string
	authorEmail   string
	maxRetries    int
	logger        *slog.Logger
	treeCacheSize int
	blobCacheSize int64
	clock         func() time.Time
	signer        source.Signer

	// cacheFS, when set, is the file system the cache directory's
	// repository is kept in instead of osfs.New(cacheDir); every write to
	// the cache, objects included, then goes through it (objects through
	// go-git's loose-object writer rather than gitfs.LooseWriter, which
	// writes straight to disk). Only tests set it (export_test.go), to
	// simulate a full disk.
	cacheFS billy.Filesystem
}

func defaultConfig() config {
	return config{
		interval:      DefaultFetchInterval,
		mode:          source.ModeDirect,
		prefix:        source.DefaultBranchPrefix,
		authorName:    source.DefaultAuthorName,
		authorEmail:   source.DefaultAuthorEmail,
		maxRetries:    5,
		logger:        slog.New(slog.DiscardHandler),
		treeCacheSize: gitfs.DefaultTreeCacheSize,
		blobCacheSize: gitfs.DefaultBlobCacheSize,
		clock:         time.Now,
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
	return func(c *config) { c.mode = m }
}

// WithBranchPrefix sets the prefix of the branches ModeBranch makes. The
// default is source.DefaultBranchPrefix ("cup/").
func WithBranchPrefix(prefix string) Option {
	return func(c *config) { c.prefix = prefix }
}

// WithAuthor sets the identity the source commits as: the committer of
// every commit, and its author unless the request names one. The default
// is source.DefaultAuthorName and source.DefaultAuthorEmail, "cup
// <cup@localhost>".
func WithAuthor(name, email string) Option {
	return func(c *config) { c.authorName, c.authorEmail = name, email }
}

// WithMaxRetries sets how many times a direct update is applied again on a
// newer head when the remote rejects the push because the branch moved,
// before it fails with source.ErrConflict. The default is 5.
func WithMaxRetries(n int) Option {
	return func(c *config) { c.maxRetries = n }
}

// WithLogger sets the logger for fetches and retried updates. By default
// nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		c.logger = l
	}
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
	return func(c *config) { c.clock = now }
}

// WithSigner signs every commit the source makes (see
// internal/signing for OpenPGP keys). By default commits are not signed.
func WithSigner(s source.Signer) Option {
	return func(c *config) { c.signer = s }
}
