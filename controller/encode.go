package controller

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
)

// EncodeVersioned returns r's ContentVersion, as the 16 bytes its hex
// spells, and r's JSON with that version as metadata.resourceVersion, byte
// for byte what json.Marshal gives. It compacts the spec once for both,
// where ContentVersion and json.Marshal compact it once each and Marshal
// reflects over r.
func (r *Resource) EncodeVersioned() (data []byte, version [16]byte, err error) {
	var spec []byte
	if len(r.Spec) > 0 {
		// json.Marshal refuses a spec of only whitespace, which
		// ContentVersion takes for none.
		if spec, err = compact(r.Spec); err != nil {
			return nil, version, err
		}
	}
	m := &r.Metadata
	labels, annotations := sortedKeys(m.Labels), sortedKeys(m.Annotations)
	scratch := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(scratch)
	version = r.contentSum(scratch, spec, labels, annotations)
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
	b = appendStrings(b, `,"labels":`, m.Labels, labels)
	b = appendStrings(b, `,"annotations":`, m.Annotations, annotations)
	b = append(b, `,"resourceVersion":"`...)
	b = hex.AppendEncode(b, version[:])
	b = append(b, '"')
	b = append(b, '}')
	if len(spec) > 0 {
		b = append(b, `,"spec":`...)
		if needsHTMLEscape(spec) {
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

// needsHTMLEscape reports whether b holds '<', '>' or '&', or U+2028 or
// U+2029 (0xE2 0x80 0xA8 or 0xA9): bytes.ContainsAny decodes runes to find
// those two, which made it most of the check.
func needsHTMLEscape(b []byte) bool {
	for i, c := range b {
		switch {
		case c == '<' || c == '>' || c == '&':
			return true
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8:
			return true
		}
	}
	return false
}

// appendStrings appends name and m as json.Marshal encodes a map with
// omitempty: nothing when it is empty, keys in order (keys, sorted).
func appendStrings(b []byte, name string, m map[string]string, keys []string) []byte {
	if len(m) == 0 {
		return b
	}
	b = append(b, name...)
	for i, k := range keys {
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
