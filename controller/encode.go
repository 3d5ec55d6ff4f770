package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// EncodeVersioned returns r's ContentVersion and r's JSON with that
// version as metadata.resourceVersion, byte for byte what json.Marshal
// gives. It compacts the spec once for both, where ContentVersion and
// json.Marshal compact it once each and Marshal reflects over r.
func (r *Resource) EncodeVersioned() (data []byte, version string, err error) {
	var spec []byte
	if len(r.Spec) > 0 {
		// json.Marshal refuses a spec of only whitespace, which
		// ContentVersion takes for none.
		if spec, err = compact(r.Spec); err != nil {
			return nil, "", err
		}
	}
	version = r.contentVersion(spec)
	m := &r.Metadata
	scratch := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(scratch)
	b := append((*scratch)[:0], `{"apiVersion":`...)
	b = appendString(b, r.APIVersion)
	b = append(b, `,"kind":`...)
	b = appendString(b, r.Kind)
	b = append(b, `,"metadata":{`...)
	if m.Namespace != "" {
		b = append(b, `"namespace":`...)
		b = appendString(b, m.Namespace)
		b = append(b, ',')
	}
	b = append(b, `"name":`...)
	b = appendString(b, m.Name)
	b = appendStrings(b, `,"labels":`, m.Labels)
	b = appendStrings(b, `,"annotations":`, m.Annotations)
	b = append(b, `,"resourceVersion":`...)
	b = appendString(b, version)
	b = append(b, '}')
	if len(spec) > 0 {
		b = append(b, `,"spec":`...)
		if bytes.ContainsAny(spec, "<>&\u2028\u2029") {
			// json.Marshal escapes these in a RawMessage as it does in
			// strings; they occur only in strings.
			var e bytes.Buffer
			json.HTMLEscape(&e, spec)
			spec = e.Bytes()
		}
		b = append(b, spec...)
	}
	b = append(b, '}')
	if cap(b) <= maxScratch {
		*scratch = b
	}
	// The caller keeps the JSON: it gets an allocation of its size.
	return bytes.Clone(b), version, nil
}

// scratchPool holds EncodeVersioned's buffers, up to maxScratch bytes.
var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

const maxScratch = 64 << 10

// appendStrings appends name and m as json.Marshal encodes a map with
// omitempty: nothing when it is empty, keys in order.
func appendStrings(b []byte, name string, m map[string]string) []byte {
	if len(m) == 0 {
		return b
	}
	b = append(b, name...)
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, m[k])
	}
	return append(b, '}')
}

// appendString appends s as json.Marshal encodes it: as it is when every
// byte is printable ASCII that needs no escape, else through json.Marshal.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := json.Marshal(s)
			if err != nil { // a string always encodes
				panic(fmt.Sprintf("encoding a string: %v", err))
			}
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
