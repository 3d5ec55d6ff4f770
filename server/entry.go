package server

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/cup-dev/cup/controller"
)

// entry is one resource with its REST form encoded once. Entries are
// shared between requests and between the commits that hold the same
// resource, and never modified. Ten thousand of them are held at once for
// a large namespace, so they are kept small.
type entry struct {
	name    string
	labels  labelSet
	version [16]byte // the resourceVersion, which json also holds in hex
	json    []byte   // the REST form: the file form plus metadata.resourceVersion
	held    int32    // how many of the memo's items hold it (memo.hold); guarded by the memo's mu
}

func newEntry(r *controller.Resource) (*entry, error) {
	data, v, err := r.EncodeVersioned()
	if err != nil {
		return nil, fmt.Errorf("%w: %s/%s: %w", controller.ErrMalformed, r.Metadata.Namespace, r.Metadata.Name, err)
	}
	// Controllers that decode with controller.ParseResource refuse what is
	// not UTF-8, naming the file; one that does not could hand over bytes
	// that json.Marshal would replace (metadata) or pass on as JSON that is
	// not JSON (spec).
	if field := notUTF8(r); field != "" {
		return nil, fmt.Errorf("%w: %s/%s: %s is not UTF-8", controller.ErrMalformed, r.Metadata.Namespace, r.Metadata.Name, field)
	}
	return &entry{name: strings.Clone(r.Metadata.Name), labels: newLabelSet(r.Metadata.Labels), version: v, json: data}, nil
}

// notUTF8 names the first field of r that is not UTF-8, or is "".
func notUTF8(r *controller.Resource) string {
	for _, f := range [...]struct{ name, v string }{
		{"apiVersion", r.APIVersion}, {"kind", r.Kind},
		{"metadata.namespace", r.Metadata.Namespace}, {"metadata.name", r.Metadata.Name},
	} {
		if !utf8.ValidString(f.v) {
			return f.name
		}
	}
	for _, f := range [...]struct {
		name string
		m    map[string]string
	}{{"metadata.labels", r.Metadata.Labels}, {"metadata.annotations", r.Metadata.Annotations}} {
		for k, v := range f.m {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return f.name
			}
		}
	}
	if !utf8.Valid(r.Spec) {
		return "spec"
	}
	return ""
}

// entryOverhead is what an entry costs besides its strings: the struct (a
// 96-byte allocation) and what the interner keeps to find it again (its
// slots in two maps and a weak pointer). The sum is fitted to the heap's
// growth: 1,063 bytes a resource, of which size counts 1,064
// (TestMemoAccountsWhatTheHeapHolds).
const entryOverhead = 100

// size is what e takes: its allocations, rounded up as the allocator does
// (json's capacity is its allocation), and entryOverhead.
func (e *entry) size() int64 {
	return int64(cap(e.json)+roundAlloc(len(e.labels))+roundAlloc(len(e.name))) + entryOverhead
}

// roundAlloc is n rounded up to the allocator's smallest size classes,
// which are 16 bytes apart; 0 stays 0.
func roundAlloc(n int) int { return (n + 15) &^ 15 }

// resourceVersion is the entry's resourceVersion as the API shows it.
func (e *entry) resourceVersion() string { return hex.EncodeToString(e.version[:]) }

// etag is the entry's resourceVersion as an HTTP entity tag.
func (e *entry) etag() string {
	var b [2 + 2*len(entry{}.version)]byte
	b[0], b[len(b)-1] = '"', '"'
	hex.Encode(b[1:], e.version[:])
	return string(b[:])
}

// labelSet holds labels in one string: key-sorted pairs of key and value,
// each preceded by its length as a uvarint. It is one allocation, far
// smaller than a map for the few labels a resource has, and it implements
// labels.Labels.
type labelSet string

func newLabelSet(m map[string]string) labelSet {
	if len(m) == 0 {
		return ""
	}
	var keys [8]string // on the stack for the few labels most resources have
	sorted := keys[:0]
	size := 0
	for k, v := range m {
		sorted = append(sorted, k)
		size += uvarintLen(len(k)) + len(k) + uvarintLen(len(v)) + len(v)
	}
	slices.Sort(sorted)
	// One allocation: a listing of 10,000 made this every resource's
	// second largest cost after its encoding.
	var b strings.Builder
	b.Grow(size)
	var n [binary.MaxVarintLen64]byte
	for _, k := range sorted {
		for _, s := range [2]string{k, m[k]} {
			b.Write(binary.AppendUvarint(n[:0], uint64(len(s))))
			b.WriteString(s)
		}
	}
	return labelSet(b.String())
}

// uvarintLen returns how many bytes binary.AppendUvarint writes for n.
func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// next splits the first length-prefixed string off s.
func next(s string) (first, rest string) {
	var n uint64
	for i, shift := 0, 0; i < len(s); i, shift = i+1, shift+7 {
		c := s[i]
		n |= uint64(c&0x7f) << shift
		if c < 0x80 {
			s = s[i+1:]
			if n > uint64(len(s)) {
				return "", "" // cannot happen: newLabelSet wrote it
			}
			return s[:n], s[n:]
		}
	}
	return "", ""
}

func (l labelSet) Lookup(key string) (string, bool) {
	for s := string(l); s != ""; {
		var k, v string
		k, s = next(s)
		v, s = next(s)
		if k == key {
			return v, true
		}
	}
	return "", false
}

func (l labelSet) Has(key string) bool { _, ok := l.Lookup(key); return ok }

func (l labelSet) Get(key string) string { v, _ := l.Lookup(key); return v }

var _ labels.Labels = labelSet("")
