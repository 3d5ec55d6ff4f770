package template

import "github.com/cup-dev/cup/controller"

// CacheLen returns the number of entries in c's decode cache.
func CacheLen(c *Controller) int { return c.cache.len() }

// GlobFiles is globFiles, for tests.
var GlobFiles = globFiles

// PatchYAML edits old, a YAML file, to hold r, as Put does but without
// recovering from panics or checking the result, for tests.
func PatchYAML(old []byte, r *controller.Resource) ([]byte, error) {
	want, err := fileValue(r)
	if err != nil {
		return nil, err
	}
	return patchYAML(old, want)
}
