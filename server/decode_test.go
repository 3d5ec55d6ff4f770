package server

import (
	"strings"
	"testing"
)

// TestDecodeResource checks the REST form's decoding of a resource
// straight into the core's terms: what protojson took is taken, and what
// it refused is refused, naming the field as the caller wrote it.
func TestDecodeResource(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		// want is a part of the error, or for a body that decodes, the
		// resource's fields as "apiVersion kind namespace name labels rv spec specField".
		want string
		ok   bool
	}{
		{"JSON names", `{"apiVersion": "a/v1", "kind": "K", "metadata": {"namespace": "ns", "name": "n", "labels": {"k": "v"}, "resourceVersion": "0f"}, "spec": {"x": 1}}`,
			`a/v1 K ns n map[k:v] 0f {"x": 1} resource.spec`, true},
		{"proto names", `{"api_version": "a/v1", "metadata": {"resource_version": "0f"}}`, `a/v1    map[] 0f  resource.spec`, true},
		{"nulls", `{"apiVersion": null, "metadata": {"labels": null}, "spec": null}`, `    map[]  null resource.spec`, true},
		{"spec_json", `{"specJson": "{\"x\": 1}"}`, `    map[]  {"x": 1} resource.spec_json`, true},
		{"unknown field", `{"status": {}}`, `unknown field "status"`, false},
		{"unknown metadata field", `{"metadata": {"uid": "x"}}`, `unknown field "metadata.uid"`, false},
		{"given twice", `{"kind": "A", "kind": "B"}`, `field "kind" is given twice`, false},
		{"given twice by both names", `{"apiVersion": "a/v1", "api_version": "a/v1"}`, `field "api_version" is given twice`, false},
		{"label given twice", `{"metadata": {"labels": {"k": "a", "k": "b"}}}`, `key "k" is given twice`, false},
		{"number for a string", `{"kind": 5}`, `field "kind" must be a string`, false},
		{"labels not strings", `{"metadata": {"labels": {"k": 1}}}`, `field "metadata.labels" must map strings to strings`, false},
		{"metadata not an object", `{"metadata": []}`, `field "metadata" must be a JSON object`, false},
		{"not UTF-8", "{\"kind\": \"\xff\"}", `field "kind" holds bytes that are not UTF-8`, false},
		{"spec and spec_json", `{"spec": {}, "spec_json": "{}"}`, `not both`, false},
		{"not an object", `[]`, `must be a JSON object`, false},
		{"trailing data", `{} {}`, `unexpected data after the resource`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := decodeResource([]byte(tc.body))
			if !tc.ok {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := in.resource
			got := strings.Join([]string{r.APIVersion, r.Kind, r.Metadata.Namespace, r.Metadata.Name,
				fmtMap(r.Metadata.Labels), r.Metadata.ResourceVersion, string(r.Spec), in.specField}, " ")
			if got != tc.want {
				t.Fatalf("decoded %q, want %q", got, tc.want)
			}
		})
	}
}

func fmtMap(m map[string]string) string {
	var b strings.Builder
	b.WriteString("map[")
	first := true
	for k, v := range m {
		if !first {
			b.WriteByte(' ')
		}
		first = false
		b.WriteString(k + ":" + v)
	}
	return b.String() + "]"
}
