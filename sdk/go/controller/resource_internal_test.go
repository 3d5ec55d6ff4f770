package controller

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestAppendJSONMatchesEncode checks that appendJSON writes encode's bytes
// where it writes any, and declines where a string needs escapes or the
// spec is not valid JSON.
func TestAppendJSONMatchesEncode(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		r    Resource
		fast bool
	}{
		{Resource{APIVersion: "flags.cup.dev/v1", Kind: "Flag", Metadata: Metadata{Name: "a"}}, true},
		{Resource{APIVersion: "v1", Kind: "Flag", Metadata: Metadata{Namespace: "prod", Name: "a", Labels: map[string]string{"z": "1", "a": "", "m": "x y"}, Annotations: map[string]string{}}, Spec: json.RawMessage(`{ "b" : [1, 2.50, "<&>"], "a": {"x": null} }`)}, true},
		{Resource{Kind: "Flag", Metadata: Metadata{Name: "a", Annotations: map[string]string{"owner": "ana@example.com", "b/c.d": "{}"}}, Spec: json.RawMessage(`null`)}, true},
		{Resource{Kind: "Flag", Metadata: Metadata{Name: "a"}, Spec: json.RawMessage("{\n\t\"s\": \"caf\\u00e9 \\\"q\\\"\"\n}")}, true},
		{Resource{Kind: "Flag", Metadata: Metadata{Name: "a", Labels: map[string]string{"k": "<b>&"}}}, true},
		{Resource{Kind: "Flag", Metadata: Metadata{Name: "a\"b"}}, false},
		{Resource{Kind: "Flag", Metadata: Metadata{Name: "a", Labels: map[string]string{"k": "café", "ø": "日本 🙂 \x7f \ufffd"}}}, true},
		{Resource{Kind: "Flag", Metadata: Metadata{Name: "a", Labels: map[string]string{"k": "a\u2028b"}}}, false},
		{Resource{Kind: "Flag", Metadata: Metadata{Name: "a", Labels: map[string]string{"k": "a\u2029b"}}}, false},
		{Resource{Kind: "Flag", Metadata: Metadata{Name: "a", Labels: map[string]string{"k": "a\xffb"}}}, false},
		{Resource{Kind: "Flag", Metadata: Metadata{Name: "a", Labels: map[string]string{"k": "\xe2\x80"}}}, false},
		{Resource{Kind: "Flag", Metadata: Metadata{Name: "a", Annotations: map[string]string{"k": "a\nb"}}}, false},
		{Resource{Kind: "Fl\\ag", Metadata: Metadata{Name: "a"}}, false},
		{Resource{Kind: "Flag", Metadata: Metadata{Name: "a"}, Spec: json.RawMessage(`{"a":`)}, false},
	} {
		want, wantErr := encode(&tt.r)
		got, ok := tt.r.appendJSON([]byte("prefix"))
		if ok != tt.fast {
			t.Errorf("appendJSON(%+v): ok = %v, want %v", tt.r, ok, tt.fast)
		}
		if ok && (wantErr != nil || !bytes.Equal(got, append([]byte("prefix"), want...))) {
			t.Errorf("appendJSON(%+v) = %s, want encode's %s (%v)", tt.r, got, want, wantErr)
		}
	}
}

// FuzzAppendJSON checks appendJSON against encode on resources of any
// strings and spec: where appendJSON writes, it writes encode's bytes.
func FuzzAppendJSON(f *testing.F) {
	f.Add("prod", "a", "team", "growth", `{"a": [1, "<&>"]}`)
	f.Add("", "café", "ø", "日本 🙂 \u2028", "null")
	f.Add("ns", "a\"b", "k", "a\xffb", `{"a":`)
	f.Fuzz(func(t *testing.T, namespace, name, key, value, spec string) {
		r := Resource{APIVersion: "example.com/v1", Kind: "Flag", Metadata: Metadata{
			Namespace: namespace, Name: name,
			Labels: map[string]string{key: value, "z": name}, Annotations: map[string]string{value: key},
		}}
		if spec != "" {
			r.Spec = json.RawMessage(spec)
		}
		got, ok := r.appendJSON(nil)
		if !ok {
			return
		}
		want, err := encode(&r)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("appendJSON(%+v) = %q, encode = %q, %v", r, got, want, err)
		}
	})
}

// FuzzCompactJSON: compactJSON writes what json.Compact does, and declines
// what json.Compact refuses; it may decline more only past its depth.
func FuzzCompactJSON(f *testing.F) {
	for _, s := range []string{
		`{"a": [1, -2.5e+3, "x\"y\\u00e9", true, false, null], "b" : {}}`,
		" [ ] ", `"\ud800"`, "01", "1.", "-", `{"a":1,}`, "[1 2]", "\"a\x01\"", "\"\xff\"",
		strings.Repeat("[", 600) + strings.Repeat("]", 600),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		got, ok := compactJSON([]byte("x"), []byte(src))
		var want bytes.Buffer
		want.WriteString("x")
		err := json.Compact(&want, []byte(src))
		switch {
		case ok && err != nil:
			t.Fatalf("compactJSON(%q) = %q, json.Compact refuses it: %v", src, got, err)
		case ok && !bytes.Equal(got, want.Bytes()):
			t.Fatalf("compactJSON(%q) = %q, json.Compact %q", src, got, want.Bytes())
		case !ok && err == nil && strings.Count(src, "[")+strings.Count(src, "{") <= maxCompactDepth:
			t.Fatalf("compactJSON(%q) declined; json.Compact wrote %q", src, want.Bytes())
		case !ok && string(got) != "x":
			t.Fatalf("compactJSON(%q) declined, and changed dst to %q", src, got)
		}
	})
}
