package git

import "github.com/go-git/go-billy/v5"

// WithCacheFilesystem keeps the cache directory's repository in fsys, a
// file system over the directory WithCacheDir names, instead of
// osfs.New(dir): every write to the cache goes through fsys, so that a
// test can make them fail (a full disk). WithCacheDir must be set too; the
// repository is created there, when missing, on the operating system's
// file system. By default the cache is kept with osfs.
func WithCacheFilesystem(fsys billy.Filesystem) Option {
	return func(c *config) { c.cacheFS = fsys }
}
