package controller

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cup-dev/cup/internal/benchrepo"
	"github.com/cup-dev/cup/internal/document"
)

// FuzzParseCommon checks parseCommon against encoding/json: whatever it
// accepts, encoding/json accepts too and decodes to the same resource;
// and for whatever either accepts, EncodeVersioned gives what json.Marshal
// and ContentVersion give.
func FuzzParseCommon(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion": "flags.cup.dev/v1", "kind": "Flag", "metadata": {"name": "a"}}`,
		`{"apiVersion": "flags.cup.dev/v1", "kind": "Flag", "metadata": {"namespace": "default", "name": "a", "labels": {"team": "web", "team": "app"}, "annotations": {"note": "<&>"}, "resourceVersion": "ff"}, "spec": {"enabled": true, "rollout": 1.50, "n": [1, 2e3, -0], "s": "\u00e9\ud83d\ude00 \u2028 <b>"}}`,
		"{\n  \"apiVersion\": \"a/v1\",\n  \"kind\": \"K\",\n  \"metadata\": {\n    \"name\": \"é\u2028\",\n    \"labels\": {}\n  },\n  \"spec\": {\"a\": \"}]\\\"\"}\n}\n",
		`{"apiVersion": "", "kind": "", "metadata": {"name": ""}, "spec": null}`,
		`{"metadata": {"labels": {}}, "spec": {}}`,
		`{"spec": {"big": 9007199254740993, "deep": {"a": {"b": {"c": [[[]]]}}}}}`,
		`{"spec": {"a": [}]}`,
		`{"spec": {"a": 1}}}`,
		`{"spec": []}`,
		`{"spec": nullx}`,
		`{"kind": "a", "kind": "b"}`,
		`{"Kind": "a"}`,
		`{"kind": "a\tb"}`,
		`{"kind": "a\"b"}`,
		`{"metadata": {"name": "a"}} {}`,
		`{"metadata": {"name": "a"}} }`,
		`{"metadata": null}`,
		`{"metadata": {"labels": null}}`,
		`{"status": {}}`,
		`{"kind": "a",}`,
		`null`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Add(nestedSpec(document.MaxDepth - 2)) // 512 deep
	f.Add(nestedSpec(document.MaxDepth - 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		if CheckUTF8(data) != nil {
			return
		}
		common, ok := parseCommon(data)
		if document.CheckDepth(data, document.MaxDepth) != nil {
			if ok {
				t.Fatalf("parseCommon accepted what nests more than %d deep: %q", document.MaxDepth, data)
			}
			return
		}
		r, err := parseJSON(data)
		if ok {
			if err != nil {
				t.Fatalf("parseCommon accepted what encoding/json refuses (%v): %q", err, data)
			}
			if !reflect.DeepEqual(common, r) {
				t.Fatalf("parseCommon and encoding/json differ on %q:\n%#v\n%#v", data, common, r)
			}
		}
		if err != nil {
			return
		}
		r.Metadata.ResourceVersion = "ignored"
		got, sum, err := r.EncodeVersioned()
		version := hex.EncodeToString(sum[:])
		want, werr := r.ContentVersion()
		if (err != nil) != (werr != nil) || version != want {
			t.Fatalf("EncodeVersioned's version %q (%v), ContentVersion's %q (%v)", version, err, want, werr)
		}
		if err != nil {
			return
		}
		r.Metadata.ResourceVersion = want
		marshaled, merr := json.Marshal(r)
		if merr != nil || !bytes.Equal(got, marshaled) {
			t.Fatalf("EncodeVersioned gave\n%s\njson.Marshal\n%s (%v)", got, marshaled, merr)
		}
	})
}

// nestedSpec is a resource whose spec holds arrays depth levels deep, so
// that the resource nests depth+2 deep.
func nestedSpec(depth int) []byte {
	return []byte(`{"kind": "K", "spec": {"a": ` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}}`)
}

// TestParseResourceDepth: the nesting a resource may have is the same
// whether the one-pass reader or encoding/json decodes it, and the same
// error refuses more.
func TestParseResourceDepth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"read in one pass", nestedSpec(document.MaxDepth - 2)},
		{"decoded by encoding/json", []byte(strings.Replace(string(nestedSpec(document.MaxDepth-2)), `"kind": "K"`, `"kind": "K\u0041"`, 1))},
	} {
		r, err := ParseResource(tc.data)
		if err != nil || r.Kind == "" {
			t.Fatalf("%s: %d deep: %v", tc.name, document.MaxDepth, err)
		}
		deeper := bytes.Replace(tc.data, []byte("[]"), []byte("[[]]"), 1)
		_, err = ParseResource(deeper)
		var de *document.DepthError
		if !errors.As(err, &de) || de.Limit != document.MaxDepth || !strings.Contains(err.Error(), "nested more than 512 deep") {
			t.Fatalf("%s: %d deep: %v, want the depth error", tc.name, document.MaxDepth+1, err)
		}
	}
	// The one-pass reader takes the first and refuses the second itself.
	if _, ok := parseCommon(nestedSpec(document.MaxDepth - 2)); !ok {
		t.Fatal("parseCommon refused a resource 512 deep")
	}
	if _, ok := parseCommon(nestedSpec(document.MaxDepth - 1)); ok {
		t.Fatal("parseCommon took a resource 513 deep")
	}
}

// TestEncodeVersionedMatchesMarshal covers what files cannot hold but
// controllers can hand over: strings json.Marshal escapes, empty and
// whitespace specs, maps empty but not nil.
func TestEncodeVersionedMatchesMarshal(t *testing.T) {
	for _, r := range []Resource{
		{APIVersion: "a/v1", Kind: "K", Metadata: Metadata{Name: "n"}},
		{APIVersion: "a/v1", Kind: "K", Metadata: Metadata{Name: "n", Labels: map[string]string{}, Annotations: map[string]string{"a<": "\x00\x7f\u2028\"\\&"}}},
		{Metadata: Metadata{Namespace: "ns", Name: "\xff"}, Spec: json.RawMessage(" { \"a\" : \"<\u2029>\" } ")},
		{Spec: json.RawMessage("null")},
		{Spec: json.RawMessage("{}")},
		{Spec: json.RawMessage(" ")},
		{Spec: json.RawMessage("{")},
	} {
		got, sum, err := r.EncodeVersioned()
		version := hex.EncodeToString(sum[:])
		want, werr := r.ContentVersion()
		if werr == nil && err == nil && version != want {
			t.Errorf("%+v: version %q, ContentVersion %q", r, version, want)
		}
		r.Metadata.ResourceVersion = version
		marshaled, merr := json.Marshal(r)
		if (err != nil) != (merr != nil) || !bytes.Equal(got, marshaled) {
			t.Errorf("%+v: EncodeVersioned %s (%v), json.Marshal %s (%v)", r, got, err, marshaled, merr)
		}
	}
}

// TestParseCommonTakesFilesAsCupWritesThem: the shape cup writes (and
// hand-written files of the same shape) never needs encoding/json.
func TestParseCommonTakesFilesAsCupWritesThem(t *testing.T) {
	r := Resource{APIVersion: "bench.cup.dev/v1", Kind: "Item", Metadata: Metadata{
		Namespace: "default", Name: "item-1", Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "é <b>"},
	}, Spec: json.RawMessage(`{"owner": "a@example.com", "n": [1, 2.50], "s": "\"quoted\"\n"}`)}
	file, err := r.MarshalFile()
	if err != nil {
		t.Fatal(err)
	}
	got, ok := parseCommon(file)
	if !ok {
		t.Fatalf("parseCommon refused %s", file)
	}
	want, err := parseJSON(file)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("parseCommon %#v, encoding/json %#v (%v)", got, want, err)
	}
}

// FuzzCompactJSON checks compactJSON and prefixJSON against encoding/json:
// compactJSON takes what json.Compact takes and compacts it to the same
// bytes; prefixJSON takes a value json.Valid takes, and all of one.
func FuzzCompactJSON(f *testing.F) {
	for _, s := range []string{
		` { "a" : [ 1 , -0.5e+3 , true , false , null , "x\"\\\/\b\f\n\r\t\u00e9" , { } , [ ] ] } `,
		`{"a":1,}`, `[1,]`, `01`, `-`, `1.`, `1e`, `1E-7`, `"\u12"`, `"\x"`, "\"\x01\"", "\"\xff\"",
		`{"a" 1}`, `{1:2}`, `[}`, `{]`, `tru`, `nul`, `[1 2]`, ``, ` `, `"a" "b"`, `{"a":{"b":[[[]]]}}`,
		"\"\u2028<>&\"",
	} {
		f.Add([]byte(s))
	}
	f.Add(bytes.Repeat([]byte("["), maxJSONDepth+1))
	f.Add(append(bytes.Repeat([]byte("["), maxJSONDepth), bytes.Repeat([]byte("]"), maxJSONDepth)...))
	f.Fuzz(func(t *testing.T, src []byte) {
		var want bytes.Buffer
		err := json.Compact(&want, src)
		got, ok := compactJSON([]byte("prefix"), src)
		if ok != (err == nil) {
			t.Fatalf("compactJSON says %v, json.Compact %v, of %q", ok, err, src)
		}
		if ok && string(got) != "prefix"+want.String() {
			t.Fatalf("compactJSON gave %q, json.Compact %q, of %q", got, want.Bytes(), src)
		}
		if !ok && string(got) != "prefix" {
			t.Fatalf("compactJSON changed dst to %q on %q", got, src)
		}
		n, ok := prefixJSON(src, 0)
		if ok && (n == 0 || !json.Valid(src[:n])) {
			t.Fatalf("prefixJSON takes %q of %q, which json.Valid refuses", src[:n], src)
		}
		if json.Valid(src) && (!ok || len(bytes.TrimSpace(src[n:])) > 0) {
			t.Fatalf("prefixJSON takes %d bytes (%v) of %q, which json.Valid takes whole", n, ok, src)
		}
	})
}

// BenchmarkCompactSpec compacts a spec of benchrepo's shape (indented, 180
// bytes) with encoding/json and with compactJSON.
func BenchmarkCompactSpec(b *testing.B) {
	spec := []byte("{\n    \"owner\": \"owner-42@example.com\",\n    \"replicas\": 2,\n    \"enabled\": true,\n    \"note\": \"" + strings.Repeat("x", 80) + "\"\n  }")
	b.Run("encoding/json", func(b *testing.B) {
		b.SetBytes(int64(len(spec)))
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if err := json.Compact(&buf, spec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("compactJSON", func(b *testing.B) {
		b.SetBytes(int64(len(spec)))
		dst := make([]byte, 0, len(spec))
		for b.Loop() {
			var ok bool
			if dst, ok = compactJSON(dst[:0], spec); !ok {
				b.Fatal("refused")
			}
		}
	})
}

// BenchmarkParseResource decodes a file of benchrepo's items (510 bytes),
// as a listing does for each.
func BenchmarkParseResource(b *testing.B) {
	data := benchrepo.Item(42, strings.Repeat("n", 200))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseResource(data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPlainWord: plainWord finds each byte that ends a string, starts an
// escape or is a control character, in every place of a word, beside any
// other byte.
func TestPlainWord(t *testing.T) {
	t.Parallel()
	for b := range 256 {
		for other := range 256 {
			for pos := range 8 {
				w := bytes.Repeat([]byte{byte(other)}, 8)
				w[pos] = byte(b)
				want := true
				for _, c := range w {
					if c == '"' || c == '\\' || c < 0x20 {
						want = false
					}
				}
				if got := plainWord(binary.LittleEndian.Uint64(w)); got != want {
					t.Fatalf("plainWord(%x) = %v, want %v", w, got, want)
				}
			}
		}
	}
}
