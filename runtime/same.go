package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"maps"
	"reflect"
	"sync"

	"github.com/cup-dev/cup/controller"
)

// sameSpecs remembers the pairs of a stored output (by resource version)
// and a spec a transform computed for it that were found to be the same
// JSON value, so that a resync with nothing changed compares the outputs
// of the last reconcile without decoding them again. Equality of the two
// is a pure function of the pair, so the memo never needs invalidating;
// it is bounded by clearing it when full. The zero value is ready; a nil
// *sameSpecs remembers nothing. It is safe for concurrent use.
type sameSpecs struct {
	mu   sync.Mutex
	seen map[specPair]struct{}
}

// specPair is a stored resource version and the digest of a spec.
type specPair struct {
	version string
	spec    [sha256.Size]byte
}

// maxSameSpecs bounds the memo: ten times a large reconciler's outputs.
const maxSameSpecs = 1 << 17

// sameContent reports whether a stored output already holds what a
// reconcile wants: the same labels, annotations and spec (compared as
// JSON values, so a controller's spelling of the file does not count).
func (m *sameSpecs) sameContent(have, want *controller.Resource) bool {
	if !maps.Equal(nonNil(have.Metadata.Labels), nonNil(want.Metadata.Labels)) ||
		!maps.Equal(nonNil(have.Metadata.Annotations), nonNil(want.Metadata.Annotations)) {
		return false
	}
	if bytes.Equal(have.Spec, want.Spec) {
		return true
	}
	if m == nil || have.Metadata.ResourceVersion == "" {
		return sameSpec(have.Spec, want.Spec)
	}
	p := specPair{version: have.Metadata.ResourceVersion, spec: sha256.Sum256(want.Spec)}
	m.mu.Lock()
	_, ok := m.seen[p]
	m.mu.Unlock()
	if ok {
		return true
	}
	if !sameSpec(have.Spec, want.Spec) {
		return false
	}
	m.mu.Lock()
	if m.seen == nil || len(m.seen) >= maxSameSpecs {
		m.seen = map[specPair]struct{}{}
	}
	m.seen[p] = struct{}{}
	m.mu.Unlock()
	return true
}

// sameSpec compares two specs as JSON values.
func sameSpec(a, b json.RawMessage) bool {
	return reflect.DeepEqual(jsonValue(a), jsonValue(b))
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// jsonValue decodes a spec exactly (numbers as their text); no spec,
// null and {} are the same.
func jsonValue(b json.RawMessage) any {
	if len(bytes.TrimSpace(b)) == 0 {
		return map[string]any{}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(b)
	}
	if v == nil {
		return map[string]any{}
	}
	return v
}
