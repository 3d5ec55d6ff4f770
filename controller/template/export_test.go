package template

// CacheLen returns the number of entries in c's decode cache.
func CacheLen(c *Controller) int { return c.cache.len() }

// GlobFiles is globFiles, for tests.
var GlobFiles = globFiles
