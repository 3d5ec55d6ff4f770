package document

import (
	"fmt"
	"strconv"
	"strings"
)

// JoinPath appends an object's key to a field path.
func JoinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// IndexPath appends an array's index to a field path.
func IndexPath(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// ParentPath drops the last segment of a field path: the key or the index.
func ParentPath(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

// orRoot names the field at path in a message: "document" for "".
func orRoot(path string) string {
	if path == "" {
		return "document"
	}
	return path
}

// pathSegment is one step of a field path: an object's key, or an array's
// index when key is empty.
type pathSegment struct {
	key   string
	index int
}

// splitPath splits a field path into its segments.
func splitPath(path string) []pathSegment {
	var segs []pathSegment
	for part := range strings.SplitSeq(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			segs = append(segs, pathSegment{key: key})
		}
		for rest != "" {
			n, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(n)
			if !ok || err != nil {
				return segs
			}
			segs = append(segs, pathSegment{index: i})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return segs
}
