package gitfs_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

func TestReadCommit(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	tree := buildTree(t, st, regular(map[string]string{"f": "f"}))
	p1 := plumbing.NewHash(strings.Repeat("1", 40))
	p2 := plumbing.NewHash(strings.Repeat("2", 40))
	tests := []struct {
		name   string
		commit gitfs.Commit
	}{
		{"root", gitfs.Commit{
			Tree:      tree,
			Author:    source.Signature{Name: "A U Thor", Email: "a@example.com", When: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)},
			Committer: source.Signature{Name: "cup", Email: "cup@localhost", When: time.Date(2024, 1, 2, 3, 4, 6, 0, time.UTC)},
			Message:   "subject\n",
		}},
		{"time zones", gitfs.Commit{
			Tree:      tree,
			Parents:   []plumbing.Hash{p1},
			Author:    source.Signature{Name: "East", Email: "e@x", When: time.Date(2024, 5, 6, 7, 8, 9, 0, time.FixedZone("", 5*3600+30*60))},
			Committer: source.Signature{Name: "West", Email: "w@x", When: time.Date(2024, 5, 6, 7, 8, 9, 0, time.FixedZone("", -8*3600))},
			Message:   "subject\n\nbody\n\nKey: value\n",
		}},
		{"merge without message", gitfs.Commit{
			Tree:      gitfs.EmptyTree,
			Parents:   []plumbing.Hash{p1, p2},
			Author:    source.Signature{Name: "a", Email: "a", When: time.Unix(0, 0).UTC()},
			Committer: source.Signature{Name: "c", Email: "c", When: time.Unix(1, 0).UTC()},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, err := st.WriteCommit(&tt.commit)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // the second read comes from the cache
				got, err := st.ReadCommit(h)
				if err != nil {
					t.Fatal(err)
				}
				want := tt.commit
				if got.Hash != h || got.Tree != want.Tree || !slices.Equal(got.Parents, want.Parents) || got.Message != want.Message {
					t.Fatalf("ReadCommit = %+v, want %+v", got, want)
				}
				checkSignature(t, "author", got.Author, want.Author)
				checkSignature(t, "committer", got.Committer, want.Committer)
				if len(want.Parents) > 0 && got.FirstParent() != want.Parents[0] || len(want.Parents) == 0 && !got.FirstParent().IsZero() {
					t.Fatalf("FirstParent = %s, want the first of %v", got.FirstParent(), want.Parents)
				}
				// The caller owns the result.
				for i := range got.Parents {
					got.Parents[i] = plumbing.ZeroHash
				}
			}
		})
	}
}

func checkSignature(t *testing.T, what string, got, want source.Signature) {
	t.Helper()
	_, gotOff := got.When.Zone()
	_, wantOff := want.When.Zone()
	if got.Name != want.Name || got.Email != want.Email || !got.When.Equal(want.When) || gotOff != wantOff {
		t.Fatalf("%s = %+v (offset %d), want %+v (offset %d)", what, got, gotOff, want, wantOff)
	}
}

func TestReadCommitSkipsOtherHeaders(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	raw := "tree " + gitfs.EmptyTree.String() + "\n" +
		"parent " + strings.Repeat("3", 40) + "\n" +
		"author Some One <one@example.com> 1700000000 +0100\n" +
		"committer Some One <one@example.com> 1700000001 -0000\n" +
		"encoding ISO-8859-1\n" +
		"gpgsig -----BEGIN PGP SIGNATURE-----\n \n parent " + strings.Repeat("4", 40) + "\n -----END PGP SIGNATURE-----\n" +
		"\nsubject\n\nbody\n"
	h, err := st.WriteObject(plumbing.CommitObject, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.ReadCommit(h)
	if err != nil {
		t.Fatal(err)
	}
	if c.Tree != gitfs.EmptyTree || !slices.Equal(c.Parents, []plumbing.Hash{plumbing.NewHash(strings.Repeat("3", 40))}) || c.Message != "subject\n\nbody\n" {
		t.Fatalf("ReadCommit = %+v", c)
	}
	checkSignature(t, "author", c.Author, source.Signature{Name: "Some One", Email: "one@example.com", When: time.Unix(1700000000, 0).In(time.FixedZone("", 3600))})
	checkSignature(t, "committer", c.Committer, source.Signature{Name: "Some One", Email: "one@example.com", When: time.Unix(1700000001, 0).UTC()})
}

func TestReadCommitErrors(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	blob, err := st.WriteObject(plumbing.BlobObject, []byte("not a commit"))
	if err != nil {
		t.Fatal(err)
	}
	noTree, err := st.WriteObject(plumbing.CommitObject, []byte("author a <a> 1 +0000\n\nmsg\n"))
	if err != nil {
		t.Fatal(err)
	}
	badParent, err := st.WriteObject(plumbing.CommitObject, []byte("tree "+gitfs.EmptyTree.String()+"\nparent xyz\n\nmsg\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		id   plumbing.Hash
		want error // nil: any error
	}{
		{"missing", plumbing.NewHash(strings.Repeat("ab", 20)), plumbing.ErrObjectNotFound},
		{"blob", blob, gitfs.ErrNotCommit},
		{"no tree", noTree, nil},
		{"malformed parent", badParent, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := st.ReadCommit(tt.id)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("ReadCommit = %+v, %v; want an error wrapping %v", c, err, tt.want)
			}
		})
	}
}

func TestReadCommitOnDisk(t *testing.T) {
	t.Parallel()
	_, st, commit := diskRepo(t, map[string][]byte{"f": []byte("f")})
	c, err := st.ReadCommit(commit)
	if err != nil {
		t.Fatal(err)
	}
	_, tree, err := st.Peel(commit)
	if err != nil {
		t.Fatal(err)
	}
	if c.Tree != tree || len(c.Parents) != 0 || c.Message != "initial\n" || c.Author.Name != "gitrepo" {
		t.Fatalf("ReadCommit = %+v, want the tree %s of the initial commit", c, tree)
	}
}
