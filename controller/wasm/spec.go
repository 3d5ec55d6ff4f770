package wasm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// The limits a Spec gets for the fields it leaves out.
const (
	// DefaultMemoryLimitPages is the default memory limit: 256 pages of
	// 64 KiB, 16 MiB.
	DefaultMemoryLimitPages = 256
	// DefaultTimeout is the default time limit of one call.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxOutputBytes is the default bound of what one call may write
	// to stdout, and separately to stderr: 16 MiB.
	DefaultMaxOutputBytes = 16 << 20
)

// MaxMemoryLimitPages is the largest memory limit a Spec may set: 65535
// pages, 64 KiB short of 4 GiB, the most a 32-bit WebAssembly memory can
// address.
const MaxMemoryLimitPages = 65535

// Spec is a wasm Controller's configuration: the spec of a Controller
// configuration resource of type wasm, without the type. Its JSON form, as
// written for the original Cup:
//
//	{"path": "flags.wasm", "memoryLimitPages": 512, "timeout": "5s", "maxOutputBytes": 1048576}
//
// and cup's own field getCostsList (true or false). Only path is required. [ParseSpec] fills in the defaults of the others;
// [New] takes zero values for the defaults too.
type Spec struct {
	// Path is the module file ("path"). Where it is resolved from is the
	// caller's business: New takes the module's bytes.
	Path string
	// MemoryLimitPages bounds the module's linear memory, in 64 KiB pages
	// ("memoryLimitPages"). The default is [DefaultMemoryLimitPages].
	MemoryLimitPages uint32
	// Timeout bounds the wall time of one call ("timeout", a Go duration
	// string such as "5s"). A caller's earlier deadline wins. The default is
	// [DefaultTimeout].
	Timeout time.Duration
	// MaxOutputBytes bounds what one call may write to stdout, and
	// separately to stderr ("maxOutputBytes"). The default is
	// [DefaultMaxOutputBytes].
	MaxOutputBytes int64
	// GetCostsList says that the module's get reads as much as its list
	// of the namespace ("getCostsList"), as a module keeping each
	// namespace in one file does: the controller then reports
	// [controller.GetCostsList], and cupd answers the gets of a namespace
	// from one listing of it. The module's get must agree with its list.
	// The default is false.
	GetCostsList bool
}

// ParseSpec decodes a Spec from JSON and fills in the defaults. It is strict:
// a missing or empty path, unknown or repeated fields, values of the wrong
// type, durations that do not parse and limits that are zero, negative or too
// large are errors naming the field. A field given as null takes its default.
func ParseSpec(raw json.RawMessage) (*Spec, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New(`wasm spec: field "path" is required: name the module file, e.g. {"path": "controller.wasm"}`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("wasm spec: %w", err)
	}
	if tok != json.Delim('{') {
		return nil, fmt.Errorf(`wasm spec: want a JSON object with at least "path", got %v`, tok)
	}
	var s Spec
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("wasm spec: %w", err)
		}
		key := tok.(string) // object keys are strings
		if seen[key] {
			return nil, fmt.Errorf("wasm spec: field %q given twice", key)
		}
		seen[key] = true
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("wasm spec: field %q: %w", key, err)
		}
		if err := s.set(key, v); err != nil {
			return nil, fmt.Errorf("wasm spec: field %q: %w", key, err)
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, fmt.Errorf("wasm spec: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("wasm spec: unexpected data after the object")
	}
	if s.Path == "" {
		return nil, errors.New(`wasm spec: field "path" is required: name the module file, e.g. {"path": "controller.wasm"}`)
	}
	out, err := s.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("wasm spec: %w", err)
	}
	return &out, nil
}

// set sets the field named key from its decoded JSON value v. Numbers arrive
// as json.Number.
func (s *Spec) set(key string, v any) error {
	if v == nil {
		return nil // null: the default
	}
	switch key {
	case "path":
		p, ok := v.(string)
		if !ok {
			return fmt.Errorf("want a string, got %s", jsonType(v))
		}
		s.Path = p
	case "memoryLimitPages":
		n, err := wholeNumber(v, 1, MaxMemoryLimitPages)
		if err != nil {
			return fmt.Errorf("want the number of 64 KiB pages, from 1 to %d: %w", MaxMemoryLimitPages, err)
		}
		s.MemoryLimitPages = uint32(n)
	case "timeout":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf(`want a duration string such as "5s", got %s`, jsonType(v))
		}
		d, err := time.ParseDuration(str)
		if err != nil {
			return fmt.Errorf(`want a duration string such as "5s": %w`, err)
		}
		if d <= 0 {
			return fmt.Errorf("want a positive duration, got %q", str)
		}
		s.Timeout = d
	case "maxOutputBytes":
		n, err := wholeNumber(v, 1, 1<<62)
		if err != nil {
			return fmt.Errorf("want a number of bytes of at least 1: %w", err)
		}
		s.MaxOutputBytes = int64(n)
	case "getCostsList":
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("want true or false, got %s", jsonType(v))
		}
		s.GetCostsList = b
	default:
		return errors.New("unknown field (known: path, memoryLimitPages, timeout, maxOutputBytes, getCostsList)")
	}
	return nil
}

// wholeNumber returns v, a decoded JSON value, as an integer in [lo, hi].
func wholeNumber(v any, lo, hi uint64) (uint64, error) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("got %s", jsonType(v))
	}
	n, err := strconv.ParseUint(num.String(), 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("got %s", num)
	}
	return n, nil
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	default:
		return "an object"
	}
}

// withDefaults returns s with zero limits set to their defaults, or an error
// for limits out of range.
func (s Spec) withDefaults() (Spec, error) {
	if s.MemoryLimitPages == 0 {
		s.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.MaxOutputBytes == 0 {
		s.MaxOutputBytes = DefaultMaxOutputBytes
	}
	switch {
	case s.MemoryLimitPages > MaxMemoryLimitPages:
		return s, fmt.Errorf("memoryLimitPages %d is more than %d", s.MemoryLimitPages, MaxMemoryLimitPages)
	case s.Timeout < 0:
		return s, fmt.Errorf("timeout %s is negative", s.Timeout)
	case s.MaxOutputBytes < 0:
		return s, fmt.Errorf("maxOutputBytes %d is negative", s.MaxOutputBytes)
	}
	return s, nil
}
