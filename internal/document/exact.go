package document

import (
	"bytes"
	"encoding/json"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// InexactNumber returns the path of the first number in the JSON value data
// (keys in sorted order) that a float64 cannot hold exactly, and whether
// there is one. A number is held exactly when the float64 nearest to it,
// written as briefly as it reads back (as protojson writes it), has the same
// value: 0.1 and 1.0 are; 9007199254740993 (2^53+1), 12345678901234567890,
// 1e400 and 0.1000000000000000055 are not. Such numbers cannot travel in a
// google.protobuf.Struct, which holds every number as a float64. Data that
// is not JSON has none.
func InexactNumber(data []byte) (path string, found bool) {
	return findNumber(data, func(n string) bool { return !ExactFloat(n) })
}

// HasInexactNumber reports whether InexactNumber finds a number in the
// JSON value data, in one pass over its bytes without decoding it: for
// callers that need only the answer, such as every first read of a
// resource over the proto forms.
func HasInexactNumber(data []byte) bool {
	found := false
	outsideStrings(data, func(i int) int {
		if c := data[i]; c != '-' && (c < '0' || c > '9') {
			return i + 1
		}
		j := i + 1
		for j < len(data) && strings.IndexByte("0123456789+-.eE", data[j]) >= 0 {
			j++
		}
		if !ExactFloat(string(data[i:j])) {
			found = true
			return -1
		}
		return j
	})
	return found && json.Valid(data)
}

// InexactInYAML is InexactNumber for JSONToYAML, which keeps integers that
// fit an int64 or a uint64 as they are and turns other numbers into
// float64s: it finds the first number that JSONToYAML would change.
func InexactInYAML(data []byte) (path string, found bool) {
	return findNumber(data, func(n string) bool {
		if _, err := strconv.ParseInt(n, 10, 64); err == nil {
			return false
		}
		if _, err := strconv.ParseUint(n, 10, 64); err == nil {
			return false
		}
		return !ExactFloat(n)
	})
}

// findNumber returns the path of the first number in the JSON value data
// (keys in sorted order) that match reports.
func findNumber(data []byte, match func(n string) bool) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", false
	}
	return find(v, "", match)
}

func find(v any, path string, match func(string) bool) (string, bool) {
	switch v := v.(type) {
	case json.Number:
		if match(string(v)) {
			return path, true
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if p, ok := find(v[k], JoinPath(path, k), match); ok {
				return p, true
			}
		}
	case []any:
		for i, e := range v {
			if p, ok := find(e, IndexPath(path, i), match); ok {
				return p, true
			}
		}
	}
	return "", false
}

// ExactFloat reports whether the JSON number n survives a float64: the
// float64 nearest to it, written as briefly as it reads back, has n's
// value.
func ExactFloat(n string) bool {
	// Integers of up to 15 digits are exact; they are most numbers.
	if len(n) <= 15 && !strings.ContainsAny(n, ".eE") {
		return true
	}
	f, err := strconv.ParseFloat(n, 64)
	if err != nil { // out of range
		return false
	}
	short := strconv.FormatFloat(f, 'g', -1, 64)
	if short == n {
		return true
	}
	var a, b big.Rat
	if _, ok := a.SetString(n); !ok {
		return false
	}
	if _, ok := b.SetString(short); !ok {
		return false
	}
	return a.Cmp(&b) == 0
}
