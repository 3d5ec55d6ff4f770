package gitfs

import (
	"bytes"
	"fmt"

	"github.com/aymanbagabas/go-udiff"
)

// Diff returns a unified diff from a/path holding old to b/path holding
// new, or "" when they are equal. A side that looks binary (a NUL byte in
// its first 8000 bytes, as Git decides) gives a one-line summary instead.
func Diff(path string, old, new []byte) string {
	if bytes.Equal(old, new) {
		return ""
	}
	if binary(old) || binary(new) {
		return fmt.Sprintf("Binary files a/%s and b/%s differ\n", path, path)
	}
	return udiff.Unified("a/"+path, "b/"+path, string(old), string(new))
}

func binary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0
}
