package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/cup-dev/cup/internal/document"
)

// applyJSONPatch applies a JSON patch to doc as RFC 6902 says: the library
// applies add, remove, replace, move and copy, and a test is evaluated
// here, where numbers compare by value (1, 1.0 and 10e-1 are equal), as
// section 4.6 asks; the library compares their text. The runs between
// tests are applied one after another, and doc may grow at most limit
// bytes in all (copies double it).
func applyJSONPatch(doc []byte, ops jsonpatch.Patch, opts *jsonpatch.ApplyOptions, limit int64) ([]byte, error) {
	bound := int64(len(doc)) + limit
	run := func(part jsonpatch.Patch) error {
		if len(part) == 0 {
			return nil
		}
		out, err := part.ApplyWithOptions(doc, opts)
		if err != nil {
			return err
		}
		if int64(len(out)) > bound {
			return fmt.Errorf("the patch makes the resource more than %d bytes larger (cupd --max-resource-bytes)", limit)
		}
		doc = out
		return nil
	}
	start := 0
	for i, op := range ops {
		if op.Kind() != "test" {
			continue
		}
		if err := run(ops[start:i]); err != nil {
			return nil, err
		}
		if err := testOp(doc, op); err != nil {
			return nil, err
		}
		start = i + 1
	}
	if err := run(ops[start:]); err != nil {
		return nil, err
	}
	return doc, nil
}

// testOp evaluates a test operation on doc.
func testOp(doc []byte, op jsonpatch.Operation) error {
	path, err := op.Path()
	if err != nil {
		return err
	}
	raw := op["value"]
	if raw == nil {
		return fmt.Errorf("testing value %s failed: the test has no value", path)
	}
	want, err := document.Decode(*raw)
	if err != nil {
		return fmt.Errorf("testing value %s failed: %w", path, err)
	}
	all, err := document.Decode(doc)
	if err != nil {
		return err
	}
	got, ok := document.Pointer(all, path)
	if !ok {
		return fmt.Errorf("testing value %s failed: no value at that path", path)
	}
	if !jsonEqual(got, want) {
		return fmt.Errorf("testing value %s failed: test failed", path)
	}
	return nil
}

// jsonEqual compares JSON values as RFC 6902's test does: numbers by
// value, objects regardless of key order, arrays element by element.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		return ok && numberEqual(x, y)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	default: // string, bool, nil
		return a == b
	}
}

// errHugeExponent refuses numbers whose exponent would make big.Rat
// allocate without bound (1e1000000000).
var errHugeExponent = errors.New("exponent out of range")

// numberEqual compares two JSON numbers exactly, by value.
func numberEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, errX := exactRat(string(a))
	y, errY := exactRat(string(b))
	return errX == nil && errY == nil && x.Cmp(y) == 0
}

func exactRat(s string) (*big.Rat, error) {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		if e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+")); err != nil || e > 10_000 || e < -10_000 {
			return nil, errHugeExponent
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, errHugeExponent
	}
	return r, nil
}
