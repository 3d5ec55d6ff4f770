// Package writepath states which paths a write may name in a repository
// tree. It is a leaf: the controller contract (controller.CheckWritePath)
// and the Git tree overlay (internal/gitfs) both ask it, so that neither
// imports the other and the rule is written once.
package writepath

import (
	"io/fs"
	"strings"
)

// Check returns nil if name is a path a write may create or remove a file
// at, and otherwise an error saying why not, which wraps [fs.ErrInvalid] and
// whose message is the reason alone, e.g. "has a .git element". Such a path
// is valid for [fs.ValidPath], is not the root ".", holds no NUL byte and no
// backslash, and has no element that is ".git" in any case (Git keeps its
// own files there, and case-insensitive file systems read .GIT as .git).
func Check(name string) error {
	switch {
	case name == ".":
		return errNamesRoot
	case !fs.ValidPath(name):
		return errNotValid
	case strings.IndexByte(name, 0) >= 0:
		return errNUL
	case strings.IndexByte(name, '\\') >= 0:
		return errBackslash
	}
	for elem := range strings.SplitSeq(name, "/") {
		if strings.EqualFold(elem, ".git") {
			return errDotGit
		}
	}
	return nil
}

// The reasons Check gives.
var (
	errNamesRoot = pathError("names the root directory")
	errNotValid  = pathError("not a relative slash-separated path without empty, . or .. elements")
	errNUL       = pathError("contains a NUL byte")
	errBackslash = pathError("contains a backslash")
	errDotGit    = pathError("has a .git element")
)

// pathError is why Check refuses a path. It matches fs.ErrInvalid.
type pathError string

func (e pathError) Error() string { return string(e) }

func (e pathError) Is(target error) bool { return target == fs.ErrInvalid }
