package controller_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"

	"github.com/cup-dev/cup/controller"
)

// FuzzParseResource decodes fuzzed bytes as a resource file. Whatever the
// bytes, ParseResource does not panic; and anything it accepts survives
// MarshalFile and ParseResource unchanged (but for resourceVersion, which
// files do not hold), encodes to the same bytes again, and keeps its
// ContentVersion.
func FuzzParseResource(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion": "flags.cup.dev/v1", "kind": "Flag", "metadata": {"name": "a"}}`,
		`{"apiVersion": "flags.cup.dev/v1", "kind": "Flag", "metadata": {"namespace": "default", "name": "a", "labels": {"team": "web"}, "annotations": {"note": "<&>"}, "resourceVersion": "ff"}, "spec": {"enabled": true, "rollout": 1.50, "n": [1, 2e3, -0], "s": "\u00e9\ud83d\ude00"}}`,
		`{"apiVersion": "", "kind": "", "metadata": {"name": ""}, "spec": null}`,
		`{"metadata": {"labels": {}}, "spec": {}}`,
		`{"spec": {"big": 9007199254740993, "deep": {"a": {"b": {"c": [[[]]]}}}}}`,
		`{"spec": []}`,
		`{"kind": "a", "kind": "b"}`,
		`{"metadata": {"name": "a"}} {}`,
		`{"status": {}}`,
		"{\"metadata\": {\"name\": \"\xff\"}, \"spec\": {\"k\": \"\xfe\"}}",
		`null`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := controller.ParseResource(data)
		if err != nil {
			return
		}
		file, err := r.MarshalFile()
		if err != nil {
			t.Fatalf("MarshalFile of an accepted resource: %v", err)
		}
		back, err := controller.ParseResource(file)
		if err != nil {
			t.Fatalf("ParseResource of MarshalFile's %q: %v", file, err)
		}
		if !sameResource(back, r) {
			t.Fatalf("round trip changed the resource:\n%+v\n%+v", r, back)
		}
		again, err := back.MarshalFile()
		if err != nil || !bytes.Equal(again, file) {
			t.Fatalf("MarshalFile is not stable: %q, then %q (%v)", file, again, err)
		}
		v1, err1 := r.ContentVersion()
		v2, err2 := back.ContentVersion()
		if err1 != nil || err2 != nil || v1 != v2 {
			t.Fatalf("ContentVersion changed in the round trip: %s (%v), %s (%v)", v1, err1, v2, err2)
		}
	})
}

// sameResource compares everything a file holds; specs as JSON values.
func sameResource(a, b *controller.Resource) bool {
	if a.APIVersion != b.APIVersion || a.Kind != b.Kind || a.Metadata.Namespace != b.Metadata.Namespace ||
		a.Metadata.Name != b.Metadata.Name || !maps.Equal(a.Metadata.Labels, b.Metadata.Labels) ||
		!maps.Equal(a.Metadata.Annotations, b.Metadata.Annotations) {
		return false
	}
	var ca, cb bytes.Buffer
	if len(a.Spec) == 0 || len(b.Spec) == 0 {
		return len(a.Spec) == len(b.Spec)
	}
	if json.Compact(&ca, a.Spec) != nil || json.Compact(&cb, b.Spec) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
