package writes

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cup-dev/cup/internal/changeset"
	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

// Config is what every writing source is configured with. The sources'
// public options (local.WithAuthor, git.WithMaxRetries, ...) set its
// fields; [DefaultConfig] holds the defaults they document.
type Config struct {
	// Mode says where commits go. Default source.ModeDirect.
	Mode source.WriteMode
	// BranchPrefix begins the names of change sets. Default
	// source.DefaultBranchPrefix.
	BranchPrefix string
	// AuthorName and AuthorEmail are the committer of every commit, and its
	// author unless the request names one. Default "cup <cup@localhost>".
	AuthorName, AuthorEmail string
	// MaxRetries bounds how many times an update is applied again on a
	// newer head after losing to a concurrent writer. Default 5.
	MaxRetries int
	// Logger receives debugging events such as retried updates. Default:
	// nothing is logged.
	Logger *slog.Logger
	// Clock dates commits. Default time.Now.
	Clock func() time.Time
	// Signer, when set, signs every commit. Default: none.
	Signer source.Signer
	// GroupMax bounds how many queued updates of one branch are committed
	// together, each its own commit, and published with one
	// compare-and-swap (one push): group commit. 1 publishes every update
	// on its own. Default 64.
	GroupMax int
	// GroupWait is how long a group waits for more updates before it is
	// committed, when it has fewer than GroupMax. Default 0: a group is
	// whatever queued while the previous one was published, so a lone
	// writer waits for nothing.
	GroupWait time.Duration
	// Metrics, when set, receives the group-commit metrics (see
	// metrics.go). Default: none.
	Metrics prometheus.Registerer
}

// DefaultGroupMax is the default of Config.GroupMax.
const DefaultGroupMax = 64

// MaxGroupWait bounds Config.GroupWait: a longer wait would only add
// latency.
const MaxGroupWait = time.Second

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Mode:         source.ModeDirect,
		BranchPrefix: source.DefaultBranchPrefix,
		AuthorName:   source.DefaultAuthorName,
		AuthorEmail:  source.DefaultAuthorEmail,
		MaxRetries:   5,
		GroupMax:     DefaultGroupMax,
		Logger:       slog.New(slog.DiscardHandler),
		Clock:        time.Now,
	}
}

// check validates c and sanitizes its identity.
func (c *Config) check() error {
	c.AuthorName, c.AuthorEmail = gitfs.SanitizeIdent(c.AuthorName), gitfs.SanitizeIdent(c.AuthorEmail)
	switch {
	case c.AuthorName == "" || c.AuthorEmail == "":
		return errors.New("author name and email must not be empty")
	case c.MaxRetries < 0:
		return fmt.Errorf("negative number of retries %d", c.MaxRetries)
	case c.GroupMax < 1:
		return fmt.Errorf("write group size %d: want at least 1", c.GroupMax)
	case c.GroupWait < 0 || c.GroupWait > MaxGroupWait:
		return fmt.Errorf("write group wait %v: want 0 to %v", c.GroupWait, MaxGroupWait)
	case c.Clock == nil:
		return errors.New("nil clock")
	case c.Mode != source.ModeDirect && c.Mode != source.ModeBranch:
		return fmt.Errorf("unknown write mode %d", c.Mode)
	case !changeset.ValidPrefix(c.BranchPrefix):
		return fmt.Errorf("invalid change-set branch prefix %q", c.BranchPrefix)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Option sets a field of a Config. The sources' public options are thin
// wrappers of these, so that what each option does is written once.
type Option func(*Config)

// WithMode sets Config.Mode.
func WithMode(m source.WriteMode) Option { return func(c *Config) { c.Mode = m } }

// WithBranchPrefix sets Config.BranchPrefix.
func WithBranchPrefix(prefix string) Option { return func(c *Config) { c.BranchPrefix = prefix } }

// WithAuthor sets Config.AuthorName and Config.AuthorEmail.
func WithAuthor(name, email string) Option {
	return func(c *Config) { c.AuthorName, c.AuthorEmail = name, email }
}

// WithMaxRetries sets Config.MaxRetries.
func WithMaxRetries(n int) Option { return func(c *Config) { c.MaxRetries = n } }

// WithLogger sets Config.Logger; nil logs nothing.
func WithLogger(l *slog.Logger) Option {
	return func(c *Config) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		c.Logger = l
	}
}

// WithClock sets Config.Clock.
func WithClock(now func() time.Time) Option { return func(c *Config) { c.Clock = now } }

// WithGroup sets Config.GroupMax and Config.GroupWait.
func WithGroup(max int, wait time.Duration) Option {
	return func(c *Config) { c.GroupMax, c.GroupWait = max, wait }
}

// WithMetrics sets Config.Metrics.
func WithMetrics(reg prometheus.Registerer) Option { return func(c *Config) { c.Metrics = reg } }

// WithSigner sets Config.Signer.
func WithSigner(s source.Signer) Option { return func(c *Config) { c.Signer = s } }
