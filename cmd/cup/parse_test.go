package main

import (
	"strings"
	"testing"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

func TestParseResources(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     []string // names
		err      string
	}{
		{name: "one yaml", in: "kind: Flag\nmetadata: {name: a}\n", want: []string{"a"}},
		{name: "documents", in: "---\nkind: Flag\nmetadata: {name: a}\n--- # next\nkind: Flag\nmetadata: {name: b}\n---\n", want: []string{"a", "b"}},
		{name: "comments only", in: "# nothing\n---\n", want: nil},
		{name: "json object", in: `{"kind": "Flag", "metadata": {"name": "a"}}`, want: []string{"a"}},
		{name: "json array", in: ` [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]`, want: []string{"a", "b"}},
		{name: "list", in: "apiVersion: v1\nkind: List\nitems:\n- metadata: {name: a}\n- metadata: {name: b}\n", want: []string{"a", "b"}},
		{name: "unknown field", in: "kind: Flag\nmetadata: {name: a}\nstate: {}\n", err: "document 1"},
		// What cup get prints of a reconciler's primary: derived, never written.
		{name: "status left out", in: "kind: Flag\nmetadata: {name: a}\nspec: {n: 12345678901234567890}\nstatus: {conditions: [{type: Ready}]}\n", want: []string{"a"}},
		{name: "bad yaml", in: "kind: [\n", err: "in.yaml"},
		{name: "duplicate yaml key", in: "kind: Flag\n---\nkind: Flag\nmetadata: {name: a}\nkind: Flag\n", err: `in.yaml: unmarshal errors: line 5: key "kind" already set in map`},
		{name: "duplicate json key", in: "[{\"metadata\": {\"name\": \"a\"}},\n {\"kind\": \"Flag\", \"kind\": \"Flag\"}]", err: `in.yaml: line 2: duplicate key "[1].kind"`},
		{name: "error in a later document", in: "kind: Flag\nmetadata: {name: a}\n---\n\nstate: {}\n", err: "document 2 (line 3)"},
		{name: "json holding DEL and NEL", in: "{\"metadata\": {\"name\": \"a\", \"labels\": {\"x\": \"\x7f\u0085\"}}}", want: []string{"a"}},
		{name: "yaml flow mapping", in: "{kind: Flag, metadata: {name: a}}", want: []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rs, err := parseResources("in.yaml", []byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rs {
				got = append(got, r.GetMetadata().GetName())
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDescribeResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		res  *cupv1alpha1.WriteResult
		want string
	}{
		{&cupv1alpha1.WriteResult{Outcome: cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED}, "unchanged"},
		{&cupv1alpha1.WriteResult{Outcome: cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED, Commit: "0123456789abcdef"}, "committed 0123456"},
		{&cupv1alpha1.WriteResult{Outcome: cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED, Commit: "0123456789", Replayed: true}, "committed 0123456 (replayed)"},
		{&cupv1alpha1.WriteResult{Outcome: cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED, Proposal: &cupv1alpha1.Proposal{Url: "https://x/pull/1"}}, "proposed https://x/pull/1"},
		{&cupv1alpha1.WriteResult{Outcome: cupv1alpha1.WriteOutcome_WRITE_OUTCOME_DRY_RUN, Changes: make([]*cupv1alpha1.FileChange, 2)}, "dry run: 2 files"},
	} {
		if got := describeResult(tc.res); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
