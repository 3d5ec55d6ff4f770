package document

import "fmt"

// MaxDepth is how deeply the JSON cup reads from a repository or from a
// controller may nest objects and arrays: configuration files, resource
// files and WASM controllers' answers. Deeper documents are refused before
// they are decoded. Request bodies have a lower limit of their own
// (cupd --max-json-depth), which may not exceed this one.
const MaxDepth = 512

// DepthError says that a JSON document nests objects and arrays more
// deeply than a limit.
type DepthError struct {
	// Limit is the depth allowed.
	Limit int
	// Offset is the byte offset of the bracket that went past it.
	Offset int
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("objects and arrays nested more than %d deep (at byte %d)", e.Limit, e.Offset)
}

// CheckDepth returns a [*DepthError] when data, as JSON, nests objects and
// arrays more than limit deep; the outermost object is at depth 1. It
// looks only at brackets outside strings, in one pass with no allocation,
// so it can run before any decoder: malformed JSON is left for the decoder
// to report.
func CheckDepth(data []byte, limit int) error {
	var err error
	Structure(data, func(i int, c byte, depth int) bool {
		if depth > limit {
			err = &DepthError{Limit: limit, Offset: i}
			return false
		}
		return true
	})
	return err
}

// Structure calls fn, in order, for each byte of the JSON data outside
// strings that is one of { } [ ] , and :, with the depth of nesting after
// it (an opening bracket counts itself). It stops when fn returns false.
// It allocates nothing and does not check that data is valid JSON.
func Structure(data []byte, fn func(i int, c byte, depth int) bool) {
	depth := 0
	outsideStrings(data, func(i int) int {
		switch c := data[i]; c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',', ':':
		default:
			return i + 1
		}
		if !fn(i, data[i], depth) {
			return -1
		}
		return i + 1
	})
}

// outsideStrings calls fn with the index of each byte of the JSON data
// that is not part of a string, in order; fn returns the index to go on
// from, or -1 to stop.
func outsideStrings(data []byte, fn func(i int) (next int)) {
	for i := 0; i >= 0 && i < len(data); {
		if data[i] != '"' {
			i = fn(i)
			continue
		}
		for i++; i < len(data) && data[i] != '"'; i++ {
			if data[i] == '\\' {
				i++
			}
		}
		i++ // past the closing quote
	}
}
