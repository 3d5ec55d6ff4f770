package changeset_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/cup-dev/cup/internal/changeset"
	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

// history is a chain of commits in a store.
type history struct {
	t     *testing.T
	store *gitfs.Store
	head  plumbing.Hash
	tree  plumbing.Hash
}

func newHistory(t *testing.T) *history {
	return &history{t: t, store: gitfs.NewStore(memory.NewStorage())}
}

// commit adds a commit on top of the head writing files ("" removes) with
// message msg, and returns it.
func (h *history) commit(msg string, files map[string]string) plumbing.Hash {
	h.t.Helper()
	var changes []gitfs.Change
	for _, p := range slices.Sorted(maps.Keys(files)) {
		c := gitfs.Change{Path: p, Op: source.OpCreate, Mode: filemode.Regular, Data: []byte(files[p])}
		if files[p] == "" {
			c = gitfs.Change{Path: p, Op: source.OpDelete}
		}
		changes = append(changes, c)
	}
	tree, err := h.store.BuildTree(h.t.Context(), h.tree, changes)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.commitTree(msg, tree, h.head)
}

func (h *history) commitTree(msg string, tree plumbing.Hash, parents ...plumbing.Hash) plumbing.Hash {
	h.t.Helper()
	sig := source.Signature{Name: "t", Email: "t@localhost", When: time.Unix(1700000000, 0).UTC()}
	c := &gitfs.Commit{Tree: tree, Author: sig, Committer: sig, Message: msg}
	for _, p := range parents {
		if !p.IsZero() {
			c.Parents = append(c.Parents, p)
		}
	}
	id, err := h.store.WriteCommit(c)
	if err != nil {
		h.t.Fatal(err)
	}
	h.head, h.tree = id, tree
	return id
}

func TestFind(t *testing.T) {
	t.Parallel()
	h := newHistory(t)
	c1 := h.commit("initial\n", map[string]string{"a.txt": "a\n"})
	c2 := h.commit(changeset.Message("keyed\n", changeset.Trailers{IdempotencyKey: "k-1", Fingerprint: "fp"}), map[string]string{"b.txt": "b\n"})
	h.commit("mentions k-2 in its body only\n\nCup-Idempotency-Key: k-2 is not here\n\nthe end\n", map[string]string{"c.txt": "c\n"})
	c4 := h.commit(changeset.Message("keyed again\n", changeset.Trailers{IdempotencyKey: "k-1", Fingerprint: "other"}), map[string]string{"d.txt": "d\n"})
	head := h.commit("latest\n", map[string]string{"e.txt": "e\n"})
	alice := h.commit(changeset.Message("alice's\n", changeset.Trailers{RequestedBy: "alice", IdempotencyKey: "k-4", Fingerprint: "fp"}), map[string]string{"f.txt": "f\n"})
	// What an older cupd wrote for bob, who planted alice's key (and her
	// name) in his message.
	h.commit("bob's\n\nCup-Idempotency-Key: k-4\nCup-Request: fp\nRequested-by: bob\n", map[string]string{"g.txt": "g\n"})
	forged := h.commit("bob's\n\nRequested-by: alice\nCup-Idempotency-Key: k-4\nCup-Request: fp\nRequested-by: bob\n", map[string]string{"h.txt": "h\n"})
	// A commit whose parent is missing, as at the edge of a shallow clone.
	shallow := h.commitTree(changeset.Message("shallow\n", changeset.Trailers{IdempotencyKey: "k-3"}), h.tree, plumbing.NewHash(strings.Repeat("ab", 20)))

	tests := []struct {
		name      string
		head      plumbing.Hash
		key       string
		requester string
		limit     int
		want      plumbing.Hash // zero: not found
	}{
		{"newest wins", head, "k-1", "", 200, c4},
		{"from an older head", c2, "k-1", "", 200, c2},
		{"limit reaches it", head, "k-1", "", 2, c4},
		{"limit stops short", head, "k-1", "", 1, plumbing.ZeroHash},
		{"only in a body", head, "k-2", "", 200, plumbing.ZeroHash},
		{"absent", head, "nope", "", 200, plumbing.ZeroHash},
		{"prefix of a key", head, "k-", "", 200, plumbing.ZeroHash},
		{"empty key", head, "", "", 200, plumbing.ZeroHash},
		{"root reached", c1, "k-1", "", 200, plumbing.ZeroHash},
		{"zero head", plumbing.ZeroHash, "k-1", "", 200, plumbing.ZeroHash},
		{"head is it, parent missing", shallow, "k-3", "", 200, shallow},
		{"parent missing ends the walk", shallow, "k-1", "", 200, plumbing.ZeroHash},
		{"another requester's key", head, "k-1", "alice", 200, plumbing.ZeroHash},
		{"the requester's own key", forged, "k-4", "alice", 200, alice},
		{"forged keys pass unnoticed", forged, "k-4", "bob", 200, plumbing.ZeroHash},
		{"forged keys without a requester", forged, "k-4", "", 200, plumbing.ZeroHash},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, ok, err := changeset.Find(t.Context(), h.store, tt.head, tt.key, tt.requester, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if ok != !tt.want.IsZero() || ok && c.Hash != tt.want {
				t.Fatalf("Find = %+v, %v; want %s", c, ok, tt.want)
			}
		})
	}
}

func TestFindErrors(t *testing.T) {
	t.Parallel()
	h := newHistory(t)
	head := h.commit(changeset.Message("keyed\n", changeset.Trailers{IdempotencyKey: "k-1", Fingerprint: "fp"}), map[string]string{"a": "a"})
	if _, _, err := changeset.Find(t.Context(), h.store, plumbing.NewHash(strings.Repeat("ab", 20)), "k-1", "", 10); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("Find from a missing head: err = %v, want ErrObjectNotFound", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := changeset.Find(ctx, h.store, head, "k-1", "", 10); !errors.Is(err, context.Canceled) {
		t.Errorf("Find with a canceled context: err = %v, want context.Canceled", err)
	}
}

func TestOwner(t *testing.T) {
	t.Parallel()
	h := newHistory(t)
	direct := h.commit(changeset.Message("on main\n", changeset.Trailers{RequestedBy: "carol"}), map[string]string{"a": "a"})
	anonymous := h.commit("a change set made without a requester\n", map[string]string{"b": "b"})
	base := h.commit("the base\n", map[string]string{"c": "c"})
	first := h.commit(changeset.Message("alice's\n", changeset.Trailers{RequestedBy: "alice", ChangeSetOwner: "alice"}), map[string]string{"d": "d"})
	granted := h.commit(changeset.Message("carol's\n", changeset.Trailers{RequestedBy: "carol", ChangeSetOwner: "alice"}), map[string]string{"e": "e"})
	pushed := h.commit("pushed by other means\n\nSigned-off-by: dave\n", map[string]string{"f": "f"})
	forged := h.commit("bob's, from an older cupd\n\nCup-Change-Set-Owner: bob\nRequested-by: bob\n", map[string]string{"g": "g"})
	tests := []struct {
		name  string
		head  plumbing.Hash
		limit int
		want  string
	}{
		{"first commit", first, 200, "alice"},
		{"kept by a granted write", granted, 200, "alice"},
		{"foreign commits passed over", pushed, 200, "alice"},
		{"limit stops short", pushed, 1, ""},
		{"forged in a caller's trailers", forged, 200, ""},
		{"no owner recorded", direct, 200, ""},
		{"the first recording commit decides", anonymous, 200, ""},
		{"nothing recorded", base, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := changeset.Owner(t.Context(), h.store, tt.head, tt.limit)
			if err != nil || got != tt.want {
				t.Fatalf("Owner = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestReplay(t *testing.T) {
	t.Parallel()
	h := newHistory(t)
	c1 := h.commit("initial\n", map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n"})
	c2 := h.commit(changeset.Message("keyed\n", changeset.Trailers{IdempotencyKey: "k-1", Fingerprint: "fp"}), map[string]string{"a.txt": "a\nmore\n", "dir/b.txt": "", "new.txt": "new\n"})
	commit, err := h.store.ReadCommit(c2)
	if err != nil {
		t.Fatal(err)
	}
	wantChanges := []source.FileChange{
		{Path: "a.txt", Op: source.OpUpdate, Diff: "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n a\n+more\n"},
		{Path: "dir/b.txt", Op: source.OpDelete, Diff: "--- a/dir/b.txt\n+++ b/dir/b.txt\n@@ -1 +0,0 @@\n-b\n"},
		{Path: "new.txt", Op: source.OpCreate, Diff: "--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n"},
	}
	for _, branch := range []string{"main", "refs/heads/main"} {
		res, err := changeset.Replay(t.Context(), h.store, branch, commit, "fp")
		if err != nil {
			t.Fatal(err)
		}
		if res.Branch != "main" || res.Base != c1.String() || res.Commit != c2.String() || !res.Replayed || res.Unchanged {
			t.Fatalf("Replay(%q) = %+v", branch, res)
		}
		if !slices.Equal(res.Changes, wantChanges) {
			t.Fatalf("changes:\n got %+v\nwant %+v", res.Changes, wantChanges)
		}
	}
	for _, fp := range []string{"", "other", "fp2"} {
		if _, err := changeset.Replay(t.Context(), h.store, "main", commit, fp); !errors.Is(err, source.ErrIdempotencyKeyReused) {
			t.Errorf("Replay with fingerprint %q: err = %v, want ErrIdempotencyKeyReused", fp, err)
		}
	}
	// A fingerprint is compared as Message records it.
	c3 := h.commit(changeset.Message("odd fingerprint\n", changeset.Trailers{IdempotencyKey: "k-2", Fingerprint: " f\np "}), map[string]string{"x": "x"})
	if commit, err = h.store.ReadCommit(c3); err != nil {
		t.Fatal(err)
	}
	if _, err := changeset.Replay(t.Context(), h.store, "main", commit, " f\np "); err != nil {
		t.Errorf("Replay with the fingerprint the commit was made with: %v", err)
	}
}

func TestReplayRootCommit(t *testing.T) {
	t.Parallel()
	h := newHistory(t)
	root := h.commit(changeset.Message("root\n", changeset.Trailers{IdempotencyKey: "k-1"}), map[string]string{"a": "a\n"})
	commit, err := h.store.ReadCommit(root)
	if err != nil {
		t.Fatal(err)
	}
	res, err := changeset.Replay(t.Context(), h.store, "main", commit, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []source.FileChange{{Path: "a", Op: source.OpCreate, Diff: "--- a/a\n+++ b/a\n@@ -0,0 +1 @@\n+a\n"}}
	if res.Base != "" || res.Commit != root.String() || !slices.Equal(res.Changes, want) {
		t.Fatalf("Replay = %+v", res)
	}
}

func TestFileChanges(t *testing.T) {
	t.Parallel()
	if got := changeset.FileChanges(nil); got != nil {
		t.Fatalf("FileChanges(nil) = %v, want nil", got)
	}
	got := changeset.FileChanges([]gitfs.Change{{Path: "p", Op: source.OpCreate, Data: []byte("x\n")}})
	want := []source.FileChange{{Path: "p", Op: source.OpCreate, Diff: "--- a/p\n+++ b/p\n@@ -0,0 +1 @@\n+x\n"}}
	if !slices.Equal(got, want) {
		t.Fatalf("FileChanges = %+v, want %+v", got, want)
	}
}

// TestFileChangesBoundsDiffs: a diff costs at most MaxDiffBytes an answer,
// however large the files: a 200 MB blob once came back as a 200 MB diff.
func TestFileChangesBoundsDiffs(t *testing.T) {
	t.Parallel()
	big := []byte(strings.Repeat("line\n", changeset.MaxFileDiffInput/5+1))
	half := []byte(strings.Repeat("x\n", changeset.MaxFileDiffInput/5))
	var changes []gitfs.Change
	changes = append(changes, gitfs.Change{Path: "big", Op: source.OpCreate, Data: big})
	for i := range 20 {
		changes = append(changes, gitfs.Change{Path: fmt.Sprintf("f%02d", i), Op: source.OpCreate, Data: half})
	}
	got := changeset.FileChanges(changes)
	total := 0
	for _, c := range got {
		total += len(c.Diff)
		if c.Diff == "" || !strings.Contains(c.Diff, c.Path) {
			t.Fatalf("change of %s has diff %.80q, want a diff or a line naming the file", c.Path, c.Diff)
		}
	}
	if !strings.Contains(got[0].Diff, "omitted") {
		t.Fatalf("the diff of a file past MaxFileDiffInput was computed: %.80q", got[0].Diff)
	}
	if !strings.HasPrefix(got[1].Diff, "--- a/f00") {
		t.Fatalf("a small file's diff was omitted: %.80q", got[1].Diff)
	}
	if !strings.Contains(got[len(got)-1].Diff, "omitted") {
		t.Fatalf("diffs past MaxDiffBytes were kept: the last is %.80q", got[len(got)-1].Diff)
	}
	if total > changeset.MaxDiffBytes+len(got)*256 {
		t.Fatalf("the diffs hold %d bytes, more than MaxDiffBytes %d", total, changeset.MaxDiffBytes)
	}
}

func TestCheckOwner(t *testing.T) {
	t.Parallel()
	h := newHistory(t)
	h.commit(changeset.Message("José's\n", changeset.Trailers{RequestedBy: "José", ChangeSetOwner: "José"}), map[string]string{"a": "a"})
	// A granted write keeps the owner, recorded the same way.
	head := h.commit(changeset.Message("carol's\n", changeset.Trailers{RequestedBy: "carol", ChangeSetOwner: "José"}), map[string]string{"b": "b"})
	if msg := changeset.Message("", changeset.Trailers{ChangeSetOwner: "José"}); !strings.HasSuffix(msg, "Cup-Change-Set-Owner: Jos%C3%A9\n") {
		t.Fatalf("Message records the owner José as %q", msg)
	}
	tests := []struct {
		requester string
		override  bool
		ok        bool
	}{
		{"José", false, true},
		{"", false, true},
		{"Jos", true, true},
		{"Jos", false, false},       // names are compared as recorded, not with bytes dropped
		{"Jos%C3%A9", false, false}, // nor can one spell another's recorded form
		{"José ", false, false},
		{" José", false, false},
	}
	for _, tt := range tests {
		req := &source.UpdateRequest{ChangeSet: "cup/x", Requester: tt.requester, OverrideOwner: tt.override}
		owner, err := changeset.CheckOwner(t.Context(), h.store, head, req)
		if tt.ok && (err != nil || owner != "José") {
			t.Errorf("CheckOwner(requester %q, override %v) = %q, %v; want the owner", tt.requester, tt.override, owner, err)
		}
		if !tt.ok && !errors.Is(err, source.ErrChangeSetOwner) {
			t.Errorf("CheckOwner(requester %q) err = %v, want ErrChangeSetOwner", tt.requester, err)
		}
	}
}

// TestFileChangesSkipsOnlyDiffsPastTheBudget: diffs known to be past the
// budget are not computed, and the answer is the same as computing every
// diff: deleted, created, modified, binary and unchanged files, with the
// budget running out part way.
func TestFileChangesSkipsOnlyDiffsPastTheBudget(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("0123456789abcdef", 63) + "\n" // 1 KiB
	var changes []gitfs.Change
	for i := range 5000 {
		p := fmt.Sprintf("d/%04d", i)
		switch i % 5 {
		case 0:
			changes = append(changes, gitfs.Change{Path: p, Op: source.OpDelete, OldData: []byte(line)})
		case 1:
			changes = append(changes, gitfs.Change{Path: p, Op: source.OpCreate, Data: []byte(line)})
		case 2:
			changes = append(changes, gitfs.Change{Path: p, Op: source.OpUpdate, OldData: []byte(line + "a\n"), Data: []byte(line + "b\n")})
		case 3:
			changes = append(changes, gitfs.Change{Path: p, Op: source.OpCreate, Data: []byte("\x00binary")})
		case 4:
			changes = append(changes, gitfs.Change{Path: p, Op: source.OpUpdate, OldData: []byte("same\n"), Data: []byte("same\n")})
		}
	}
	// What every diff computed gives.
	want := make([]source.FileChange, len(changes))
	budget := changeset.MaxDiffBytes
	for i := range changes {
		c := &changes[i]
		want[i] = source.FileChange{Path: c.Path, Op: c.Op}
		d := c.Diff()
		if len(d) > budget {
			want[i].Diff = fmt.Sprintf("diff of %s omitted: the answer's diffs would pass %d bytes; read the file at the commit\n", c.Path, changeset.MaxDiffBytes)
			continue
		}
		budget -= len(d)
		want[i].Diff = d
	}
	got := changeset.FileChanges(changes)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("change %d (%s): got %.100q, want %.100q", i, want[i].Path, got[i].Diff, want[i].Diff)
		}
	}
	if !strings.Contains(got[len(got)-5].Diff, "omitted") || !strings.HasPrefix(got[0].Diff, "--- a/d/0000") {
		t.Fatalf("the budget did not run out part way: the first diff %.40q, a last one %.80q", got[0].Diff, got[len(got)-5].Diff)
	}
}
