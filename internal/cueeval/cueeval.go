package cueeval

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Layer is one piece of configuration to unify.
type Layer struct {
	// Ref names the resource for messages, e.g. "ConfigLayer default/base".
	Ref string
	// Path is the repository file holding the layer, e.g.
	// "configlayers/default/base.yaml"; positions in errors are in it.
	Path string
	// File is the content of that file (a YAML or JSON document holding the
	// resource), when known.
	File []byte
	// Field is where in File the layer's content sits: "spec.values" (plain
	// YAML or JSON data) or "spec.cue" (a string of CUE source). When empty,
	// it is "spec.values" for a layer with Values and "spec.cue" otherwise.
	Field string
	// Values is the plain data (JSON) and CUE the CUE source, as read from
	// the resource; at most one is set, and a layer without Values is a CUE
	// layer (an empty one constrains nothing). They are what is evaluated:
	// File only places positions, and only when the field in it holds data
	// of the same shape (for Values) or the same string (for CUE).
	// Otherwise positions are relative to the field, with Path still
	// named.
	Values []byte
	CUE    string
}

// Options bound and complete one evaluation. The zero Options evaluates
// without a schema within the default bounds.
type Options struct {
	// Schema is optional CUE source the result must satisfy, unified with
	// all layers. When it declares exactly one definition and no regular
	// field or embedding (e.g. `#Config: {...}`), that definition is
	// applied to the whole result, which closes it: a field the definition
	// does not declare is an error. Otherwise the schema's fields are
	// constraints on the result's fields (a schema that embeds a
	// definition, `#Config`, applies it too); a schema of several
	// definitions and nothing else is a problem.
	Schema string
	// SchemaPath is the file name positions in the schema are reported
	// under (default "<inline>").
	SchemaPath string
	// Timeout is the wall-clock bound of one evaluation, process start
	// included (default 5s).
	Timeout time.Duration
	// MaxMemory bounds the evaluating process's heap and stacks (default
	// 256 MiB), which hold what the program's packages allocate when they
	// are initialised too: a few MiB.
	MaxMemory int64
	// MaxSourceBytes bounds the total size of all layers' content (Values
	// or CUE) and the schema, checked before any work (default 1 MiB).
	// The files given for positions are bounded by it separately; when
	// they are larger together, positions are relative.
	MaxSourceBytes int
	// MaxResultBytes bounds the size of the result's JSON (default 4 MiB).
	MaxResultBytes int
	// MaxNesting bounds how deeply brackets (structs, lists, parentheses,
	// calls, indexes, comprehensions, interpolations) nest in each layer
	// and the schema (default 100).
	MaxNesting int
}

// The defaults of Options.
const (
	defaultTimeout        = 5 * time.Second
	defaultMaxMemory      = 256 << 20
	defaultMaxSourceBytes = 1 << 20
	defaultMaxResultBytes = 4 << 20
	defaultMaxNesting     = 100
	defaultSchemaPath     = "<inline>"
)

// withDefaults returns o with its zero fields set to their defaults.
func (o Options) withDefaults() Options {
	if o.SchemaPath == "" {
		o.SchemaPath = defaultSchemaPath
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.MaxMemory <= 0 {
		o.MaxMemory = defaultMaxMemory
	}
	if o.MaxSourceBytes <= 0 {
		o.MaxSourceBytes = defaultMaxSourceBytes
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = defaultMaxResultBytes
	}
	if o.MaxNesting <= 0 {
		o.MaxNesting = defaultMaxNesting
	}
	return o
}

// Result is the unified configuration.
type Result struct {
	// JSON is canonical JSON: object keys sorted, no insignificant
	// whitespace, no HTML escaping, numbers exactly as CUE holds them
	// (never through float64). The same layers in any order give the same
	// bytes.
	JSON []byte
}

// ErrLimit is wrapped by the errors of evaluations that exceeded a bound:
// time, memory, source or result size, or nesting. The message says which.
var ErrLimit = errors.New("CUE evaluation exceeded a limit")

// limitError is an error wrapping ErrLimit with its own message.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }
func (e *limitError) Unwrap() error { return ErrLimit }

// limitf returns an error wrapping ErrLimit whose message is the format's.
func limitf(format string, args ...any) error {
	return &limitError{msg: fmt.Sprintf(format, args...)}
}

// Error is a configuration that does not unify, does not compile or is not
// concrete: the user's to fix.
type Error struct {
	// Problems are CUE's problems, ordered by path, then message.
	Problems []Problem
}

// Problem is one of CUE's problems with the configuration.
type Problem struct {
	// Message is CUE's message, prefixed with the path when there is one,
	// e.g. "replicas: conflicting values 3 and 2".
	Message string
	// Path is the field path, e.g. "replicas" or "resources.limits.cpu"
	// ("" for the root or for a syntax error).
	Path string
	// Positions are every position CUE gives (for a conflict, both
	// layers'), ordered by layer, with the schema last. CUE gives none for
	// some problems, e.g. an unresolved disjunction.
	Positions []Position
}

// Position is a place in a layer or the schema.
type Position struct {
	// Ref is the layer's Ref, or "schema".
	Ref string
	// File is the repository path (Layer.Path, or Options.SchemaPath).
	File string
	// Field is empty when Line and Column are in File. Otherwise it names
	// the layer's field (e.g. "spec.values") and Line and Column are
	// relative to the field's content, because File was not given or did
	// not hold the same content.
	Field string
	// Line and Column count from 1; Column counts bytes.
	Line, Column int
}

// String formats p as "Ref at file:line:column", or
// "Ref at file[field]:line:column" for a relative position.
func (p Position) String() string {
	var b strings.Builder
	if p.Ref != "" {
		b.WriteString(p.Ref)
		b.WriteString(" at ")
	}
	b.WriteString(p.File)
	if p.Field != "" {
		fmt.Fprintf(&b, "[%s]", p.Field)
	}
	fmt.Fprintf(&b, ":%d:%d", p.Line, p.Column)
	return b.String()
}

// String formats p as its message followed by its positions in
// parentheses.
func (p Problem) String() string {
	if len(p.Positions) == 0 {
		return p.Message
	}
	pos := make([]string, len(p.Positions))
	for i, q := range p.Positions {
		pos[i] = q.String()
	}
	return p.Message + " (" + strings.Join(pos, ", ") + ")"
}

// Error formats e as one line per problem, e.g. `replicas: conflicting
// values 3 and 2 (ConfigLayer default/env at
// configlayers/default/env.yaml:7:13, ConfigLayer default/web at
// configlayers/default/web.yaml:8:13)`.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
