package document_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cup-dev/cup/internal/document"
)

func TestCheckDepth(t *testing.T) {
	t.Parallel()
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tc := range []struct {
		name  string
		data  string
		limit int
		ok    bool
	}{
		{"flat", `{"a":1,"b":"x"}`, 1, true},
		{"at the limit", deep(64), 64, true},
		{"past the limit", deep(65), 64, false},
		{"objects and arrays count alike", `{"a":[{"b":[1]}]}`, 3, false},
		{"brackets in strings do not count", `{"a":"[[[[{{{{"}`, 1, true},
		{"escaped quotes stay in the string", `{"a":"\"[[[["}`, 1, true},
		{"an escaped backslash ends the escape", `{"a":"\\"}`, 1, true},
		{"after an escaped backslash the quote closes", `["\\",[[]]]`, 2, false},
		{"ten thousand deep", deep(10000), 64, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := document.CheckDepth([]byte(tc.data), tc.limit)
			var de *document.DepthError
			if tc.ok != (err == nil) || (err != nil && !errors.As(err, &de)) {
				t.Fatalf("CheckDepth(%.40s, %d) = %v, want ok=%v", tc.data, tc.limit, err, tc.ok)
			}
			if de != nil && de.Limit != tc.limit {
				t.Fatalf("DepthError.Limit = %d, want %d", de.Limit, tc.limit)
			}
		})
	}
}

// TestDecodeRefusesDeepDocuments: configuration files past MaxDepth are
// refused before they are decoded.
func TestDecodeRefusesDeepDocuments(t *testing.T) {
	t.Parallel()
	n := document.MaxDepth + 1
	_, err := document.Decode([]byte(strings.Repeat("[", n) + strings.Repeat("]", n)))
	var de *document.DepthError
	if !errors.As(err, &de) {
		t.Fatalf("Decode of a document %d deep = %v, want a DepthError", n, err)
	}
}
