package template

// DefaultCacheSize is the number of decoded files a Controller keeps unless
// [WithCacheSize] says otherwise: enough for a few namespaces of ten thousand
// resources each.
const DefaultCacheSize = 32768

// config holds what options set.
type config struct {
	cacheSize int
}

// Option configures a Controller built by [New].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithCacheSize bounds the controller's decode cache to about n files.
//
// The cache maps the SHA-256 of a file's bytes to the resource decoded from
// them, so it is never stale and is shared by every commit: after a commit
// that changes one file, listing its namespace decodes that one file again and
// no other. Each entry costs roughly the size of the decoded resource (about
// 2 KiB for a 500-byte file). When more distinct contents are read than fit,
// the least recently used are dropped.
//
// Zero disables the cache; New rejects a negative n. The default is
// [DefaultCacheSize] (32,768).
func WithCacheSize(n int) Option {
	return optionFunc(func(c *config) { c.cacheSize = n })
}
