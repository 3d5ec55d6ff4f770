package gitfs

import (
	"io/fs"

	"github.com/go-git/go-git/v5/plumbing"
)

// ObjectID returns the id of the object at name, a tree for a directory
// ("." is the root) and a blob otherwise, without reading a blob. A
// symbolic link is not followed: a path through one does not exist.
func (f *FS) ObjectID(name string) (plumbing.Hash, error) {
	if !fs.ValidPath(name) {
		return plumbing.ZeroHash, &fs.PathError{Op: "objectid", Path: name, Err: fs.ErrInvalid}
	}
	e, link, err := f.walk(name, false, true)
	if err == nil && link != nil {
		err = fs.ErrNotExist // a symbolic link on the way
	}
	if err != nil {
		return plumbing.ZeroHash, &fs.PathError{Op: "objectid", Path: name, Err: err}
	}
	return e.hash, nil
}
