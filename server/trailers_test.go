package server_test

import (
	"net/url"
	"os"
	"strings"
	"testing"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/changeset"
	"github.com/cup-dev/cup/source"
)

// refusedMessages are commit messages a caller may not send, with what the
// error must say besides the field.
var refusedMessages = []struct{ message, says string }{
	{"a\x00b", "control character"},
	{"escape \x1b[31m", "control character"},
	{"carriage\rreturn", "control character"},
	{"x\n\nRequested-by: alice", "Requested-by"},
	{"x\n\ncup-idempotency-key: alice-1\nCup-Request: 0123", "Cup-Idempotency-Key"},
	{"x\n\nCup-Change-Set-Owner: bob", "Cup-Change-Set-Owner"},
}

func TestMessageRefused(t *testing.T) {
	t.Parallel()
	eachProtocol(t, func(t *testing.T, f *fixture, p protocol) {
		rs, _ := f.clients(p)
		head := f.head(t)
		for _, tt := range refusedMessages {
			put := putReq(flag(t, "beta-banner", true, nil))
			put.Message = tt.message
			_, err := rs.Put(t.Context(), connect.NewRequest(put))
			wantCode(t, err, connect.CodeInvalidArgument)
			if !strings.Contains(err.Error(), "message") || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Put(message %q) err = %v, want it to name the field message and say %q", tt.message, err, tt.says)
			}
			del := deleteReq("dark-mode")
			del.Message = tt.message
			_, err = rs.Delete(t.Context(), connect.NewRequest(del))
			wantCode(t, err, connect.CodeInvalidArgument)
		}
		if f.head(t) != head {
			t.Fatal("a refused message made a commit")
		}
	})
}

func TestMessageRefusedREST(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head := f.head(t)
	for _, tt := range refusedMessages {
		q := "?message=" + url.QueryEscape(tt.message)
		for _, res := range []restResponse{
			f.do(t, "PUT", flagsPath+"/beta-banner"+q, `{"spec": {"enabled": true}}`),
			f.do(t, "DELETE", flagsPath+"/dark-mode"+q, ""),
		} {
			m := res.json(t)
			msg, _ := m["message"].(string)
			if res.status != 400 || m["code"] != "invalid_argument" || !strings.Contains(msg, "message") || !strings.Contains(msg, tt.says) {
				t.Errorf("write with ?message=%q = %d %s, want 400 naming the field message and saying %q", tt.message, res.status, res.body, tt.says)
			}
		}
	}
	if f.head(t) != head {
		t.Fatal("a refused message made a commit")
	}
}

// TestForgedKeyNotReplayed: a commit whose message carries alice's
// idempotency key and fingerprint, but that another user's write made
// (as an older cupd let callers write), does not answer alice's write.
func TestForgedKeyNotReplayed(t *testing.T) {
	t.Parallel()
	req := flagIn(t, "staging")
	req.DryRun = false
	req.IdempotencyKey = "alice-1"

	// The fingerprint is predictable: alice's request made anywhere
	// records the same one.
	elsewhere := newAuthFixture(t)
	rs, _, _ := elsewhere.clientsAs(protocols[0], tokenOf("alice"))
	res, err := rs.Put(t.Context(), connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	log, err := elsewhere.repo.Log(res.Msg.Result.Commit)
	if err != nil {
		t.Fatal(err)
	}
	fp, ok := changeset.Trailer(log[0].Message, source.TrailerRequest)
	if !ok {
		t.Fatalf("commit message %q records no fingerprint", log[0].Message)
	}

	f := newAuthFixture(t)
	forged := "dave's change\n\nCup-Idempotency-Key: alice-1\nCup-Request: " + fp + "\nRequested-by: dave\n"
	planted, err := f.repo.Commit("main", map[string][]byte{"dave.txt": []byte("dave\n")}, forged)
	if err != nil {
		t.Fatal(err)
	}
	rs, _, _ = f.clientsAs(protocols[0], tokenOf("alice"))
	got, err := rs.Put(t.Context(), connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	r := got.Msg.Result
	if r.Replayed || r.Commit == planted || r.Outcome != cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED || f.head(t) != r.Commit {
		t.Fatalf("alice's keyed write after a forged commit = %v, want a new commit", r)
	}
	if _, err := rs.Get(t.Context(), connect.NewRequest(&cupv1alpha1.GetRequest{
		Group: req.Group, Version: req.Version, Plural: req.Plural, Namespace: "staging", Name: req.Name,
	})); err != nil {
		t.Fatalf("alice's resource was not written: %v", err)
	}
}

// changeSetEditor grants dave put on changesets.cup.dev: adding to
// change sets that other users started.
const changeSetEditor = `
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRole
metadata: {name: changeset-editor}
rules:
- apiGroups: [cup.dev]
  resources: [changesets]
  verbs: [put]
---
apiVersion: cup.dev/v1alpha1
kind: ClusterRoleBinding
metadata: {name: dave-changesets}
subjects: [{kind: User, name: dave}]
roleRef: {kind: ClusterRole, name: changeset-editor}
`

// TestChangeSetOwnership: a change set belongs to the user whose write
// made it; another user may add to it only with put on
// changesets.cup.dev, over Connect and REST.
func TestChangeSetOwnership(t *testing.T) {
	t.Parallel()
	for _, granted := range []bool{false, true} {
		t.Run(map[bool]string{false: "refused", true: "granted"}[granted], func(t *testing.T) {
			t.Parallel()
			testChangeSetOwnership(t, granted)
		})
	}
}

func testChangeSetOwnership(t *testing.T, daveGranted bool) {
	policy, tokens := writeAuthFiles(t)
	if daveGranted {
		b, err := os.ReadFile(policy)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(policy, append(b, changeSetEditor...), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f := newAppFixture(t, func(o *app.Options) {
		o.Auth = app.Auth{PolicyPath: policy, TokensFile: tokens}
		o.WriteMode = "branch"
	})
	rs, _, _ := f.clientsAs(protocols[0], tokenOf("alice"))
	mine := flagIn(t, "staging")
	mine.DryRun = false
	res, err := rs.Put(t.Context(), connect.NewRequest(mine))
	if err != nil {
		t.Fatal(err)
	}
	cs := res.Msg.Result.Branch
	if cs == "" {
		t.Fatalf("alice's write made no change set: %v", res.Msg.Result)
	}
	head := f.resolve(t, cs)

	// dave may put new-checkout in default, but into alice's change set
	// only with the grant; carol holds it (every verb on everything).
	theirs := flagIn(t, "default")
	theirs.DryRun, theirs.ChangeSet = false, cs
	rs, _, _ = f.clientsAs(protocols[0], tokenOf("dave"))
	granted := "carol"
	if daveGranted {
		granted = "dave"
	} else {
		_, err = rs.Put(t.Context(), connect.NewRequest(theirs))
		wantCode(t, err, connect.CodePermissionDenied)
		if !strings.Contains(err.Error(), cs) || strings.Contains(err.Error(), "alice") {
			t.Fatalf("dave's write into alice's change set: %v; want it to name the change set, not its owner", err)
		}
		rest := f.do(t, "PUT", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/new-checkout?changeSet="+url.QueryEscape(cs),
			`{"spec": {"enabled": true}}`, "Authorization", "Bearer "+tokenOf("dave"))
		if rest.status != 403 {
			t.Fatalf("dave's REST write into alice's change set = %d %s, want 403", rest.status, rest.body)
		}
		if f.resolve(t, cs) != head {
			t.Fatal("a refused write moved the change set")
		}
	}
	rs, _, _ = f.clientsAs(protocols[0], tokenOf(granted))
	got, err := rs.Put(t.Context(), connect.NewRequest(theirs))
	if err != nil {
		t.Fatalf("%s's write into alice's change set: %v", granted, err)
	}
	if r := got.Msg.Result; r.Branch != cs || r.BaseCommit != head || f.resolve(t, cs) != r.Commit {
		t.Fatalf("%s's write into alice's change set = %v, want a commit on %s", granted, r, cs)
	}
	// alice still owns it.
	rs, _, _ = f.clientsAs(protocols[0], tokenOf("alice"))
	if _, err := rs.Delete(t.Context(), connect.NewRequest(&cupv1alpha1.DeleteRequest{
		Group: mine.Group, Version: mine.Version, Plural: mine.Plural, Namespace: "staging", Name: mine.Name, ChangeSet: cs,
	})); err != nil {
		t.Fatalf("alice's write into her change set after %s's: %v", granted, err)
	}
}
