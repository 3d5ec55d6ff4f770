package config

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/cup-dev/cup/internal/document"
)

// ErrInvalid is wrapped by every [*Error]: errors.Is(err, ErrInvalid) tells a
// configuration that is wrong from one that could not be read.
var ErrInvalid = errors.New("invalid configuration")

// Location is where a resource, or a problem with one, was found.
type Location struct {
	// File is the slash-separated path of the file within the fs.FS it was
	// loaded from, e.g. ".cup/flags.yaml".
	File string
	// Document is the 1-based position of the resource within a file holding
	// several documents (a multi-document YAML file, empty documents
	// included, or a JSON array), and 0 when the file holds only one.
	Document int
}

// String returns "file" or "file (document N)".
func (l Location) String() string {
	if l.Document == 0 {
		return l.File
	}
	return fmt.Sprintf("%s (document %d)", l.File, l.Document)
}

// compare orders locations by file, then document.
func (l Location) compare(o Location) int {
	return cmp.Or(strings.Compare(l.File, o.File), cmp.Compare(l.Document, o.Document))
}

// Problem is one thing wrong with the configuration.
type Problem struct {
	Location
	// Message says what is wrong, starting with the resource it is about,
	// e.g. `Controller "x": spec.type "lambda" is not one of template, wasm`.
	Message string
}

// String returns the location and the message.
func (p Problem) String() string { return p.Location.String() + ": " + p.Message }

// Error is returned by [Load], [Parse] and [Set.Merge] when the configuration
// is invalid. It lists every problem found, not only the first.
type Error struct {
	// Problems are sorted by file, document and message.
	Problems []Problem
}

// Error returns all problems, one per line after the first.
func (e *Error) Error() string { return document.ErrorText(ErrInvalid, e.Problems) }

// Unwrap returns [ErrInvalid].
func (e *Error) Unwrap() error { return ErrInvalid }

// problems collects problems while loading.
type problems []Problem

func (ps *problems) add(loc Location, format string, args ...any) {
	*ps = append(*ps, Problem{Location: loc, Message: fmt.Sprintf(format, args...)})
}

// err returns nil or an *Error holding the sorted, de-duplicated problems.
func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &Error{Problems: document.SortProblems(ps, func(a, b Problem) int {
		return cmp.Or(a.Location.compare(b.Location), strings.Compare(a.Message, b.Message))
	})}
}
