package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cup-dev/cup/source"
)

// Tests of the trailers only sources write: who asked, who owns a change
// set, idempotency keys.

// forgedMessages are commit messages an older cupd wrote for bob, who
// planted alice's idempotency key and fingerprint (and her name) in his
// own message; the last trailer block ends with what cupd appended.
var forgedMessages = []string{
	"bob's change\n\nCup-Idempotency-Key: order-1\nCup-Request: fp-1\nRequested-by: bob\n",
	"bob's change\n\nRequested-by: alice\nCup-Idempotency-Key: order-1\nCup-Request: fp-1\nRequested-by: bob\n",
	"bob's change\n\ncup-idempotency-key: order-1\nCUP-REQUEST: fp-1\n",
}

func testForgedKeyNotReplayed(t *testing.T, f *fixture) {
	for i, msg := range forgedMessages {
		branch := fmt.Sprintf("forged-%d", i)
		must(t, f.repo.Branch(branch, f.c2))
		_, err := f.repo.Commit(branch, map[string][]byte{"bob.txt": []byte("bob\n")}, msg)
		must(t, err)
		f.sync(t)
		req := keyed("order-1", "fp-1")
		req.Revision, req.Requester = branch, "alice"
		res := update(t, f, req)
		if res.Replayed || res.Commit == "" {
			t.Fatalf("alice's keyed update after a commit with %q = %+v, want a new commit", msg, res)
		}
		snap, err := f.src.View(t.Context(), branch)
		must(t, err)
		if snap.Commit != res.Commit || readFile(t, snap.FS, appPath) != appV3 {
			t.Fatalf("%s is at %s, want alice's commit %s with her change", branch, snap.Commit, res.Commit)
		}
		// Her own repeat is recognised.
		checkReplay(t, update(t, f, req), res)
		// Another requester's repeat of her key is not hers.
		other := keyed("order-1", "fp-1")
		other.Revision, other.Requester = branch, "bob"
		if got, err := f.src.Update(t.Context(), other); err == nil && got.Replayed {
			t.Fatalf("bob's update with alice's key replayed her commit: %+v", got)
		}
	}
}

func testMessageRefused(t *testing.T, f *fixture) {
	for _, msg := range []string{
		"a\x00b",
		"title\n\nbody\x1b[31m",
		"title\rCup-Request: x",
		"del\x7f",
		"c1 \u0085control",
		"invalid \xff utf-8",
		"x\n\nRequested-by: alice",
		"x\n\nrequested-BY : alice",
		"Cup-Idempotency-Key: order-1",
		"x\n\nCup-Request: fp-1\n\nmore text",
		"x\n\nCup-Change-Set-Owner: bob",
		"x\n\nReviewed-by: carol\ncup-request:fp",
	} {
		called := false
		_, err := f.src.Update(t.Context(), &source.UpdateRequest{
			Message:   msg,
			Requester: "bob",
			Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
				called = true
				return w.WriteFile("x.txt", []byte("x"), 0o644)
			},
		})
		if !errors.Is(err, source.ErrInvalidMessage) {
			t.Errorf("Update(message %q) err = %v, want ErrInvalidMessage", msg, err)
		}
		if called {
			t.Errorf("Update(message %q) called Apply", msg)
		}
		if err := source.CheckMessage(msg); !errors.Is(err, source.ErrInvalidMessage) {
			t.Errorf("CheckMessage(%q) = %v, want ErrInvalidMessage", msg, err)
		}
	}
	f.checkHeads(t, map[string]string{"main": f.c2})
	for i, msg := range []string{
		"title\r\n\r\nbody\twith a tab\r\n",
		"x\n\nReviewed-by: carol\nCup-cli: a component, not a trailer of cupd's",
		"mentions Requested-by: inside a line",
		"",
	} {
		if err := source.CheckMessage(msg); err != nil {
			t.Errorf("CheckMessage(%q) = %v, want nil", msg, err)
		}
		res := update(t, f, &source.UpdateRequest{Message: msg, Apply: writes(map[string]string{"ok.txt": strings.Repeat("x", i+1)})})
		if res.Commit == "" {
			t.Errorf("Update(message %q) = %+v, want a commit", msg, res)
		}
	}
}

func testChangeSetOwner(t *testing.T, f *fixture) {
	src := f.openMode(t, source.ModeBranch, "cup/")
	first := f.updateOn(t, src, &source.UpdateRequest{Message: "alice's", Requester: "alice", Apply: writes(map[string]string{appPath: appV3})})
	cs := first.Branch
	refused := func(t *testing.T, req *source.UpdateRequest) {
		t.Helper()
		called := false
		req.ChangeSet = cs
		req.Apply = func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			called = true
			return w.WriteFile("bob.txt", []byte("bob"), 0o644)
		}
		_, err := src.Update(t.Context(), req)
		if !errors.Is(err, source.ErrChangeSetOwner) {
			t.Fatalf("Update(change set %s, requester %q) err = %v, want ErrChangeSetOwner", cs, req.Requester, err)
		}
		if strings.Contains(err.Error(), "alice") {
			t.Errorf("error %q names the owner", err)
		}
		if called {
			t.Errorf("Update(change set %s, requester %q) called Apply", cs, req.Requester)
		}
	}
	refused(t, &source.UpdateRequest{Message: "bob's", Requester: "bob"})
	refused(t, &source.UpdateRequest{Message: "bob's", Requester: "bob", DryRun: true})
	refused(t, &source.UpdateRequest{Message: "bob's", Requester: "bob", IdempotencyKey: "bob-1", Fingerprint: "fp"})
	f.checkHeads(t, map[string]string{cs: first.Commit})

	// The owner adds to it; so does a holder of the grant, and the change
	// set keeps its owner.
	second := f.updateOn(t, src, &source.UpdateRequest{ChangeSet: cs, Message: "alice's second", Requester: "alice", Apply: writes(map[string]string{"a.txt": "a\n"})})
	third := f.updateOn(t, src, &source.UpdateRequest{ChangeSet: cs, Message: "carol's", Requester: "carol", OverrideOwner: true, Apply: writes(map[string]string{"c.txt": "c\n"})})
	if second.Base != first.Commit || third.Base != second.Commit {
		t.Fatalf("updates of %s = %+v, %+v; want commits on top of each other", cs, second, third)
	}
	refused(t, &source.UpdateRequest{Message: "bob's", Requester: "bob"})

	// A commit pushed by other means than the source does not end the
	// record.
	ext := f.external(t, cs, map[string]string{"ext.txt": "ext\n"})
	f.syncSource(t, src)
	refused(t, &source.UpdateRequest{Message: "bob's", Requester: "bob"})

	// Without a requester (no policy) nothing is checked, as before.
	anon := f.updateOn(t, src, &source.UpdateRequest{ChangeSet: cs, Message: "anonymous", Apply: writes(map[string]string{"anon.txt": "anon\n"})})
	if anon.Base != ext {
		t.Fatalf("anonymous update of %s = %+v, want a commit on %s", cs, anon, ext)
	}
	refused(t, &source.UpdateRequest{Message: "bob's", Requester: "bob"})

	// A change set made without a requester has no owner.
	open := f.updateOn(t, src, &source.UpdateRequest{Message: "nobody's", Apply: writes(map[string]string{appPath: appV3})})
	f.updateOn(t, src, &source.UpdateRequest{ChangeSet: open.Branch, Message: "bob's", Requester: "bob", Apply: writes(map[string]string{"b.txt": "b\n"})})
}

func testKeyIsTheRequesters(t *testing.T, f *fixture) {
	src := f.openMode(t, source.ModeBranch, "cup/")
	alice := keyed("order-1", "fp-alice")
	alice.Requester = "alice"
	first := f.updateOn(t, src, alice)
	bob := keyed("order-1", "fp-bob")
	bob.Requester = "bob"
	bob.Apply = writes(map[string]string{"bob.txt": "bob\n"})
	second := f.updateOn(t, src, bob)
	if first.Replayed || second.Replayed || first.Branch == second.Branch || second.Commit == "" {
		t.Fatalf("alice's and bob's updates with one key = %+v, %+v; want two change sets", first, second)
	}
	checkReplay(t, f.updateOn(t, src, alice), first)
	checkReplay(t, f.updateOn(t, src, bob), second)
	if got := f.branches(t, "cup/"); len(got) != 2 {
		t.Fatalf("change sets: %v, want %s and %s", got, first.Branch, second.Branch)
	}
}
