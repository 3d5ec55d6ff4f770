package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"
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

func (l Location) less(o Location) bool {
	if l.File != o.File {
		return l.File < o.File
	}
	return l.Document < o.Document
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
func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		return ErrInvalid.Error() + ": " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problems:", ErrInvalid, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n\t")
		b.WriteString(p.String())
	}
	return b.String()
}

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
	out := append([]Problem(nil), ps...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Location != out[j].Location {
			return out[i].Location.less(out[j].Location)
		}
		return out[i].Message < out[j].Message
	})
	dedup := out[:1]
	for _, p := range out[1:] {
		if p != dedup[len(dedup)-1] {
			dedup = append(dedup, p)
		}
	}
	return &Error{Problems: dedup}
}
