package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestGetApplyKeepsNumbers: cup speaks Connect, whose Struct holds numbers
// as float64s; `cup get -o yaml | cup apply -f -` with no edits committed
// 9007199254740993 as 9007199254740992. Through spec_json it commits
// nothing.
func TestGetApplyKeepsNumbers(t *testing.T) {
	t.Parallel()
	url := newServer(t)
	path := url + "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/big"
	req, err := http.NewRequestWithContext(t.Context(), "PUT", path,
		strings.NewReader(`{"spec":{"enabled":true,"variants":[{"key":"a","weight":9007199254740993},{"key":"b","weight":12345678901234567890}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("PUT = %d", res.StatusCode)
	}
	for _, format := range []string{"yaml", "json"} {
		got := ok(t, url, "get", "fl", "big", "-o", format)
		for _, n := range []string{"9007199254740993", "12345678901234567890"} {
			if !strings.Contains(got, n) {
				t.Fatalf("get -o %s lost %s:\n%s", format, n, got)
			}
		}
		if strings.Contains(got, "specJson") {
			t.Fatalf("get -o %s shows specJson:\n%s", format, got)
		}
		r := cup(t, url, got, "apply", "-f", "-")
		if r.code != 0 || r.stdout != "flags.flags.cup.dev/big unchanged\n" {
			t.Fatalf("get -o %s | apply -f - = %d %q %q, want unchanged", format, r.code, r.stdout, r.stderr)
		}
	}
	// An edit keeps the numbers it does not touch.
	in := strings.Replace(ok(t, url, "get", "fl", "big", "-o", "yaml"), "enabled: true", "enabled: false", 1)
	if r := cup(t, url, in, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply = %d %s", r.code, r.stderr)
	}
	res, err = http.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(b), `"enabled":false`) || !strings.Contains(string(b), `"weight":9007199254740993`) || !strings.Contains(string(b), `"weight":12345678901234567890`) {
		t.Fatalf("after an edit, GET = %s", b)
	}
}

// TestYAMLRefusesWhatItWouldRound: YAML holds numbers as int64, uint64 or
// float64; -o yaml refuses a number none of them holds rather than print it
// rounded, and names it.
func TestYAMLRefusesWhatItWouldRound(t *testing.T) {
	t.Parallel()
	v := map[string]any{"spec": json.RawMessage(`{"a":[{"b":123456789012345678901234567890}]}`)}
	var out bytes.Buffer
	if err := encode(&out, v, "yaml"); err == nil || !strings.Contains(err.Error(), "spec.a[0].b") || !strings.Contains(err.Error(), "-o json") {
		t.Fatalf("encode -o yaml = %v, %q; want an error naming spec.a[0].b", err, out.String())
	}
	if err := encode(&out, v, "json"); err != nil || !strings.Contains(out.String(), "123456789012345678901234567890") {
		t.Fatalf("encode -o json = %v, %q", err, out.String())
	}
}
