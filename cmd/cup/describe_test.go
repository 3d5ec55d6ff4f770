package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// TestDescribeLayout: describe prints the metadata, the spec as YAML, the
// conditions, the history and the proposals in kubectl's layout, with
// control characters and bidirectional controls from the repository
// escaped wherever they are printed.
func TestDescribeLayout(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	spec, err := structpb.NewStruct(map[string]any{"description": "line one\nline two \x1b[2J", "selector": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	res := &cupv1alpha1.GetResponse{
		Commit: "8744ac5711f7eb5af2568e7b418e4dc978bf3053",
		Resource: &cupv1alpha1.Resource{
			ApiVersion: "flags.cup.dev/v1alpha1", Kind: "Bundle",
			Metadata: &cupv1alpha1.ObjectMeta{Namespace: "staging", Name: "staging", ResourceVersion: "0f3a9c2e",
				Labels:      map[string]string{"team": "web", "tier": "edge"},
				Annotations: map[string]string{"note": "evil\x1b]0;pwned\x07 \u202eright-to-left"}},
			Spec: spec,
		},
		Status: &cupv1alpha1.ResourceStatus{Conditions: []*cupv1alpha1.Condition{
			{Reconciler: "flag-bundles", Type: "Ready", Status: "True", Reason: "Converged", Message: "the outputs match the inputs",
				ObservedRevision: "8744ac5711f7eb5af2568e7b418e4dc978bf3053", LastTransitionTime: "2026-11-28T11:57:00Z"},
			{Reconciler: "flag-bundles", Type: "Conflict", Status: "False", LastTransitionTime: "2026-11-28T11:57:00Z"},
		}},
		Proposals: []*cupv1alpha1.Proposal{{Id: "42", State: cupv1alpha1.ProposalState_PROPOSAL_STATE_OPEN, Branch: "cup/5f2c81d0a4",
			Title: "Put Flag staging/dark-mode\r", Url: "https://git.example.com/acme/config/pulls/42"}},
	}
	history := []*cupv1alpha1.HistoryEntry{
		{Commit: "8744ac5711f7eb5af2568e7b418e4dc978bf3053", Time: "2026-11-28T11:57:00Z", AuthorName: "cup", Requester: "reconciler:flag-bundles",
			Subject: "Reconcile flag-bundles: 1 output(s) for staging/staging", Change: cupv1alpha1.ChangeType_CHANGE_TYPE_MODIFIED},
		{Commit: "1c9d0b7e55aa43e1c0ffee0000000000000000aa", Time: "2026-11-20T12:00:00Z", AuthorName: "Ada\tLovelace",
			Subject: "demo \x1b[31mred", Change: cupv1alpha1.ChangeType_CHANGE_TYPE_CREATED},
	}
	var out bytes.Buffer
	if err := describe(&out, now, res, history, nil); err != nil {
		t.Fatal(err)
	}
	golden(t, "describe.golden", out.String())
	if strings.ContainsAny(out.String(), "\x1b\x07\r\t\u202e") {
		t.Errorf("a control character was printed as it is:\n%q", out.String())
	}

	// Without status (no reconciler has the type as its primary) there is
	// no Conditions section; a history that cannot be read says why.
	res.Status, res.Proposals = nil, nil
	out.Reset()
	if err := describe(&out, now, res, nil, errors.New("permission_denied: history of bundles")); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"History:      <cannot be read: permission_denied: history of bundles>\n", "Proposals:    <none>\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("describe printed\n%s\nwithout %q", got, want)
		}
	}
	if strings.Contains(got, "Conditions") {
		t.Errorf("describe printed conditions for a type no reconciler has:\n%s", got)
	}
}

// TestDescribeAgainstAServer: cup describe of a reconciler's primary shows
// its conditions as the server derives them, and its history; of a type
// no reconciler has as its primary, no conditions; a missing resource
// fails as get does.
func TestDescribeAgainstAServer(t *testing.T) {
	t.Parallel()
	url := newReconciledServer(t)
	var got string
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = ok(t, url, "describe", "bundle", "web")
		if strings.Contains(got, "Converged") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{
		"Name:         web\n", "Namespace:    default\n", "Kind:         Bundle\n", "API Version:  flags.cup.dev/v1alpha1\n",
		"Spec:\n  selector:\n    matchLabels:\n      team: web\n",
		"Conditions:\n  RECONCILER     TYPE", "flag-bundles   Ready ", " True ",
		"History:\n  REVISION       AGE", " created   demo\n",
		"Proposals:    <none>\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("cup describe bundle web printed\n%s\nwithout %q", got, want)
		}
	}
	flag := ok(t, url, "describe", "flag/dark-mode")
	if !strings.Contains(flag, "Labels:       team=web\n") || !strings.Contains(flag, "\n  audit        Ready ") {
		t.Errorf("cup describe flag/dark-mode printed\n%s\nwant its labels and the conditions of audit", flag)
	}
	svc := ok(t, url, "describe", "service", "api")
	if strings.Contains(svc, "Conditions") || !strings.Contains(svc, "Kind:         Service\n") {
		t.Errorf("cup describe service api printed\n%s\nwant no conditions: no reconciler has services as its primary", svc)
	}
	fails(t, url, "not found", "describe", "flag", "no-such-flag")
	fails(t, url, "name the resource", "describe", "flags")
}

// TestCellEscapes: text from a repository prints as itself unless it holds
// what would drive a terminal or break a table.
func TestCellEscapes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain text, ünïcödé ✓": "plain text, ünïcödé ✓",
		"a\tb\nc\r":             `a\tb\nc\r`,
		"\x1b]0;title\x07":      `\x1b]0;title\x07`,
		"\x7f\u0085":            `\x7f\u0085`,
		"abc\u202edcba":         `abc\u202edcba`,
		"\xff\xfe ok":           `\xff\xfe ok`,
		"\ufffd":                `\ufffd`,
	} {
		if got := cell(in); got != want {
			t.Errorf("cell(%q) = %q, want %q", in, got, want)
		}
	}
	if got := escapeControls("one\ntwo\x1b\n"); got != "one\ntwo\\x1b\n" {
		t.Errorf("escapeControls kept or escaped the wrong characters: %q", got)
	}
}
