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
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", false
	}
	return inexact(v, "")
}

func inexact(v any, path string) (string, bool) {
	switch v := v.(type) {
	case json.Number:
		if !ExactFloat(string(v)) {
			return path, true
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if p, ok := inexact(v[k], JoinPath(path, k)); ok {
				return p, true
			}
		}
	case []any:
		for i, e := range v {
			if p, ok := inexact(e, IndexPath(path, i)); ok {
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
