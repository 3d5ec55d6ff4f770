package rbac

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/cup-dev/cup/internal/document"
)

// ErrInvalid is wrapped by every [*Error]: errors.Is(err, ErrInvalid) tells
// a policy that is wrong from one that could not be read.
var ErrInvalid = errors.New("invalid RBAC policy")

// Problem is one thing wrong with a policy.
type Problem struct {
	// File is the file's path: the path given to [Load], joined with the
	// file's name when that is a directory.
	File string
	// Line is the 1-based line of the offending field, or of the nearest
	// enclosing one that could be found; 0 when the problem is with the
	// file as a whole.
	Line int
	// Message says what is wrong, starting with the resource and the field
	// it is about, e.g.
	// `RoleBinding "production/editors": roleRef.name: no Role "editor" in namespace "production"`.
	Message string
}

// String returns "file:line: message", or "file: message" without a line.
func (p Problem) String() string {
	if p.Line == 0 {
		return p.File + ": " + p.Message
	}
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
}

// Error is returned by [Load] and [File.Reload] when a policy is invalid.
// It lists every problem found, not only the first.
type Error struct {
	// Problems are sorted by file and line.
	Problems []Problem
}

// Error returns all problems, one per line after the first.
func (e *Error) Error() string { return document.ErrorText(ErrInvalid, e.Problems) }

// Unwrap returns [ErrInvalid].
func (e *Error) Unwrap() error { return ErrInvalid }

// problemList collects problems while loading.
type problemList []Problem

// err returns nil or an *Error holding the problems, sorted by file and
// line (keeping the order they were found in on one line), without
// repetitions.
func (ps problemList) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &Error{Problems: document.SortProblems(ps, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})}
}
