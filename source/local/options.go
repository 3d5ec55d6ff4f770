package local

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	treeCacheSize int
	blobCacheSize int64
}

// engine turns an option of the write engine into one of the source.
func engine(o writes.Option) Option {
	return func(c *config) { o(&c.Config) }
}

func defaultConfig() config {
	return config{
		Config:        writes.DefaultConfig(),
		treeCacheSize: gitfs.DefaultTreeCacheSize,
		blobCacheSize: gitfs.DefaultBlobCacheSize,
	}
}

// WithBranch sets the default branch: the one the revision "" names. By
// default it is the branch the repository's HEAD points to, read afresh on
// every use.
func WithBranch(name string) Option {
	return func(c *config) { c.branch = name }
}

// WithAuthor sets the identity the source commits as: the committer of
// every commit, and its author unless the request names one. The default
// is source.DefaultAuthorName and source.DefaultAuthorEmail, "cup
// <cup@localhost>".
func WithAuthor(name, email string) Option {
	return engine(writes.WithAuthor(name, email))
}

// WithMaxRetries sets how many times an update is applied again on a newer
// head when another writer moved the branch, before it fails with
// source.ErrConflict. The default is 5.
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

// WithMetrics registers the write engine's group-commit metrics
// (cup_write_group_commits, cup_write_queue_seconds,
// cup_write_group_reapplied_total) and those of the objects commits write
// (cup_local_objects_written_total, cup_local_write_objects_seconds,
// cup_local_packs, cup_local_pack_merges_total,
// cup_local_pack_merge_seconds) with reg; sources that share reg share
// them. By default there are none.
func WithMetrics(reg prometheus.Registerer) Option {
	return engine(writes.WithMetrics(reg))
}

// WithLogger sets the logger for debugging events such as retried updates.
// By default nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return engine(writes.WithLogger(l))
}

// WithTreeCacheSize sets how many decoded tree entries the source keeps in
// memory (a tree of n entries counts n+1). Zero disables the cache. The
// default is gitfs.DefaultTreeCacheSize (65,536 entries, about 6 MB).
func WithTreeCacheSize(entries int) Option {
	return func(c *config) { c.treeCacheSize = entries }
}

// WithBlobCacheSize sets how many bytes of file content the source keeps in
// memory; files over 1 MiB are never kept. Zero disables the cache. The
// default is gitfs.DefaultBlobCacheSize (1 MiB).
func WithBlobCacheSize(bytes int64) Option {
	return func(c *config) { c.blobCacheSize = bytes }
}

// WithClock sets the clock that dates commits, for reproducible commit ids
// in tests. The default is time.Now.
func WithClock(now func() time.Time) Option {
	return engine(writes.WithClock(now))
}

// WithWriteMode sets where updates commit: on their target branch
// (source.ModeDirect) or on a new change-set branch made from its head
// (source.ModeBranch); see Source.Update. The default is source.ModeDirect.
func WithWriteMode(mode source.WriteMode) Option {
	return engine(writes.WithMode(mode))
}

// WithBranchPrefix sets the prefix of the names of change-set branches:
// the branches updates make in source.ModeBranch, and the only ones
// UpdateRequest.ChangeSet may name. It must not be empty, and prefix
// followed by an id must be a valid branch name. The default is
// source.DefaultBranchPrefix ("cup/").
func WithBranchPrefix(prefix string) Option {
	return engine(writes.WithBranchPrefix(prefix))
}

// WithSigner signs every commit the source makes (see
// internal/signing for OpenPGP keys). By default commits are not signed.
func WithSigner(s source.Signer) Option {
	return engine(writes.WithSigner(s))
}
