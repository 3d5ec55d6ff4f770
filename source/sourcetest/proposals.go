package sourcetest

import (
	"testing"

	"github.com/cup-dev/cup/source"
)

// Tests of proposal mode (Harness.Proposals).

// testProposalPerChangeSet: in proposal mode every write makes a change
// set reviewed by one proposal; adding to the change set, and repeating a
// keyed write, answer with that same proposal; a dry run opens none.
func testProposalPerChangeSet(t *testing.T, f *fixture) {
	if !f.h.Proposals {
		t.Skip("sourcetest: the harness does not write in proposal mode")
	}
	flag := []source.ResourceRef{{Group: "example.com", Version: "v1", Kind: "App", Plural: "apps", Namespace: "default", Name: "app"}}
	first := update(t, f, &source.UpdateRequest{Message: "scale", Resources: flag, Apply: writes(map[string]string{appPath: appV3})})
	if first.Branch == "main" || first.Branch == "" || first.Proposal == nil {
		t.Fatalf("write in proposal mode = %+v, want a change set and its proposal", first)
	}
	f.checkHeads(t, map[string]string{"main": f.c2, first.Branch: first.Commit})
	f.sync(t)
	snap, err := f.src.View(t.Context(), first.Branch)
	must(t, err)
	if snap.Commit != first.Commit || readFile(t, snap.FS, appPath) != appV3 {
		t.Fatalf("View(%q) = %s, want the write's commit %s", first.Branch, snap.Commit, first.Commit)
	}

	more := update(t, f, &source.UpdateRequest{ChangeSet: first.Branch, Message: "and more", Resources: flag,
		Apply: writes(map[string]string{"more.txt": "more\n"})})
	if more.Branch != first.Branch || more.Base != first.Commit || more.Proposal == nil || more.Proposal.ID != first.Proposal.ID {
		t.Fatalf("write into %s = %+v, want a commit over %s under proposal %s", first.Branch, more, first.Commit, first.Proposal.ID)
	}

	req := keyed("order-1", "fp-1")
	req.Message = "keyed"
	keyedFirst := update(t, f, req)
	again := update(t, f, req)
	if !again.Replayed || again.Commit != keyedFirst.Commit || again.Branch != keyedFirst.Branch ||
		again.Proposal == nil || again.Proposal.ID != keyedFirst.Proposal.ID {
		t.Fatalf("repeat of a keyed write = %+v, want %+v replayed under the same proposal", again, keyedFirst)
	}
	if keyedFirst.Proposal.ID == first.Proposal.ID {
		t.Fatalf("a new write was answered with the proposal %s of another change set", first.Proposal.ID)
	}

	dry := update(t, f, &source.UpdateRequest{DryRun: true, Message: "dry", Apply: writes(map[string]string{"dry.txt": "dry\n"})})
	if dry.Commit != "" || dry.Proposal != nil {
		t.Fatalf("dry run in proposal mode = %+v, want no commit and no proposal", dry)
	}
	if got := f.branches(t, source.DefaultBranchPrefix); len(got) != 2 {
		t.Fatalf("change sets: %v, want the two the writes made", got)
	}
}
