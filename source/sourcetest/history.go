package sourcetest

import (
	"errors"
	"io/fs"
	"slices"
	"testing"

	"github.com/cup-dev/cup/source"
)

// testHistory: a source with the History ability reads the fixture's
// commits (parents, author, message) and the paths that differ between
// them, including from the empty tree, and refuses ids it does not hold or
// that are not full commit ids.
func testHistory(t *testing.T, f *fixture) {
	h, ok := f.src.(source.History)
	if !ok {
		t.Skip("sourcetest: the source has no History ability")
	}
	ctx := t.Context()
	c2, err := h.Commit(ctx, f.c2)
	must(t, err)
	if c2.ID != f.c2 || !slices.Equal(c2.Parents, []string{f.c1}) || c2.Message != "second\n" || c2.Author.Name == "" || c2.Committer.When.IsZero() {
		t.Fatalf("Commit(c2) = %+v, want c2 with parent c1 and message \"second\\n\"", c2)
	}
	c1, err := h.Commit(ctx, f.c1)
	must(t, err)
	if len(c1.Parents) != 0 {
		t.Fatalf("Commit(c1).Parents = %v, want none", c1.Parents)
	}
	paths, err := h.ChangedPaths(ctx, f.c1, f.c2)
	must(t, err)
	if !slices.Equal(paths, []string{"NEW.md", appPath}) {
		t.Fatalf("ChangedPaths(c1, c2) = %q, want [NEW.md %s]", paths, appPath)
	}
	paths, err = h.ChangedPaths(ctx, f.c2, f.c1)
	must(t, err)
	if !slices.Equal(paths, []string{"NEW.md", appPath}) {
		t.Fatalf("ChangedPaths(c2, c1) = %q, want the same paths", paths)
	}
	paths, err = h.ChangedPaths(ctx, "", f.c1)
	must(t, err)
	if !slices.Equal(paths, []string{"README.md", appPath, "config/db.yaml", "docs/guide/intro.md"}) {
		t.Fatalf("ChangedPaths(\"\", c1) = %q, want every file of c1", paths)
	}
	if paths, err = h.ChangedPaths(ctx, f.c2, f.c2); err != nil || len(paths) != 0 {
		t.Fatalf("ChangedPaths(c2, c2) = %q, %v; want none", paths, err)
	}
	ids := map[string]string{}
	for _, c := range []string{f.c1, f.c2} {
		for _, p := range []string{"README.md", appPath} {
			id, err := h.ContentID(ctx, c, p)
			if err != nil || id == "" {
				t.Fatalf("ContentID(%s, %s) = %q, %v; want an id", c, p, id, err)
			}
			ids[c+" "+p] = id
		}
	}
	if ids[f.c1+" README.md"] != ids[f.c2+" README.md"] || ids[f.c1+" "+appPath] == ids[f.c2+" "+appPath] || ids[f.c1+" README.md"] == ids[f.c1+" "+appPath] {
		t.Fatalf("ContentID: %q; want README.md's the same in c1 and c2, %s's different", ids, appPath)
	}
	if _, err := h.ContentID(ctx, f.c1, "NEW.md"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ContentID(c1, NEW.md) = %v, want fs.ErrNotExist", err)
	}
	if _, err := h.ContentID(ctx, f.c1, "config"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("ContentID(c1, config) = %v, want fs.ErrInvalid", err)
	}
	for _, id := range []string{"0123456789abcdef0123456789abcdef01234567"} {
		if _, err := h.ContentID(ctx, id, "README.md"); !errors.Is(err, source.ErrRevisionNotFound) {
			t.Errorf("ContentID(%s, README.md) = %v, want ErrRevisionNotFound", id, err)
		}
		if _, err := h.Commit(ctx, id); !errors.Is(err, source.ErrRevisionNotFound) {
			t.Errorf("Commit(%s) = %v, want ErrRevisionNotFound", id, err)
		}
		if _, err := h.ChangedPaths(ctx, f.c1, id); !errors.Is(err, source.ErrRevisionNotFound) {
			t.Errorf("ChangedPaths(c1, %s) = %v, want ErrRevisionNotFound", id, err)
		}
	}
	for _, id := range []string{"main", f.c2[:12], "", f.c2 + "0"} {
		if _, err := h.Commit(ctx, id); !errors.Is(err, source.ErrInvalidRevision) {
			t.Errorf("Commit(%q) = %v, want ErrInvalidRevision", id, err)
		}
	}
}
