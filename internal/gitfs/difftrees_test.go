package gitfs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

func TestDiffTrees(t *testing.T) {
	t.Parallel()
	base := regular(map[string]string{
		"README.md":          "readme\n",
		"a/b.txt":            "b\n",
		"a/c/d.txt":          "d\n",
		"a.txt":              "a\n",
		"config/app.yaml":    "app\n",
		"config/db/db.yaml":  "db\n",
		"config/db/old.yaml": "old\n",
	})
	with := func(m map[string]file, set map[string]file, remove ...string) map[string]file {
		m = maps.Clone(m)
		maps.Copy(m, set)
		for _, p := range remove {
			delete(m, p)
		}
		return m
	}
	tests := []struct {
		name     string
		from, to map[string]file // nil: the zero id
		empty    bool            // from is gitfs.EmptyTree
		want     []change
	}{
		{name: "identical", from: base, to: base},
		{name: "both zero"},
		{
			name: "empty from",
			to:   regular(map[string]string{"z.txt": "z", "a/b": "b", "a.txt": "a"}),
			want: []change{
				{"a.txt", source.OpCreate, filemode.Regular, "a"},
				{"a/b", source.OpCreate, filemode.Regular, "b"},
				{"z.txt", source.OpCreate, filemode.Regular, "z"},
			},
		},
		{
			name:  "from the empty tree object",
			empty: true,
			to:    regular(map[string]string{"x": "x"}),
			want:  []change{{"x", source.OpCreate, filemode.Regular, "x"}},
		},
		{
			name: "to nothing",
			from: regular(map[string]string{"d/e/f": "f", "g": "g"}),
			want: []change{
				{"d/e/f", source.OpDelete, 0, ""},
				{"g", source.OpDelete, 0, ""},
			},
		},
		{
			name: "nested create, update and delete",
			from: base,
			to: with(base, regular(map[string]string{
				"config/db/db.yaml":   "db2\n",
				"config/cache/c.yaml": "c\n",
			}), "config/db/old.yaml"),
			want: []change{
				{"config/cache/c.yaml", source.OpCreate, filemode.Regular, "c\n"},
				{"config/db/db.yaml", source.OpUpdate, filemode.Regular, "db2\n"},
				{"config/db/old.yaml", source.OpDelete, 0, ""},
			},
		},
		{
			name: "directory becomes file",
			from: base,
			to:   with(base, regular(map[string]string{"a": "now a file\n"}), "a/b.txt", "a/c/d.txt"),
			want: []change{
				{"a", source.OpCreate, filemode.Regular, "now a file\n"},
				{"a/b.txt", source.OpDelete, 0, ""},
				{"a/c/d.txt", source.OpDelete, 0, ""},
			},
		},
		{
			name: "file becomes directory",
			from: base,
			to:   with(base, regular(map[string]string{"a.txt/inner": "i"}), "a.txt"),
			want: []change{
				{"a.txt", source.OpDelete, 0, ""},
				{"a.txt/inner", source.OpCreate, filemode.Regular, "i"},
			},
		},
		{
			name: "mode changes",
			from: map[string]file{"run": {data: "r"}, "link": {data: "run", mode: filemode.Symlink}},
			to:   map[string]file{"run": {data: "r", mode: filemode.Executable}, "link": {data: "run"}},
			want: []change{
				{"link", source.OpUpdate, filemode.Regular, "run"},
				{"run", source.OpUpdate, filemode.Executable, "r"},
			},
		},
		{
			name: "submodules are not files",
			from: map[string]file{"m": {data: "one", mode: filemode.Submodule}, "n": {data: "n"}},
			to:   map[string]file{"m": {data: "two", mode: filemode.Submodule}, "n": {data: "n"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := newMemStore()
			var from, to plumbing.Hash
			if tt.from != nil {
				from = buildTree(t, st, tt.from)
			}
			if tt.empty {
				from = gitfs.EmptyTree
			}
			if tt.to != nil {
				to = buildTree(t, st, tt.to)
			}
			changes, err := st.DiffTrees(t.Context(), from, to)
			if err != nil {
				t.Fatal(err)
			}
			var got []change
			for _, c := range changes {
				got = append(got, change{c.Path, c.Op, c.Mode, string(c.Data)})
				checkOldSide(t, c, tt.from)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("changes:\n got %v\nwant %v", got, tt.want)
			}
			// Applying the changes to from gives to.
			if tt.to != nil && !hasSubmodule(tt.to) {
				base := from
				if tt.empty {
					base = plumbing.ZeroHash // BuildTree reads its base, and the store has no empty tree
				}
				rebuilt, err := st.BuildTree(t.Context(), base, changes)
				if err != nil {
					t.Fatal(err)
				}
				if rebuilt != to {
					t.Fatalf("BuildTree(from, DiffTrees(from, to)) = %s, want %s", rebuilt, to)
				}
			}
		})
	}
}

// checkOldSide checks the old mode, id and content of c against the files
// of the tree it was made from.
func checkOldSide(t *testing.T, c gitfs.Change, from map[string]file) {
	t.Helper()
	old, ok := from[c.Path]
	if c.Op == source.OpCreate {
		if c.OldMode != 0 || !c.OldHash.IsZero() || c.OldData != nil {
			t.Errorf("%s: create with an old side: %+v", c.Path, c)
		}
		return
	}
	mode := old.mode
	if mode == 0 {
		mode = filemode.Regular
	}
	if !ok || c.OldMode != mode || string(c.OldData) != old.data || c.OldHash != gitfs.HashObject(plumbing.BlobObject, []byte(old.data)) {
		t.Errorf("%s: old side %v %s %q, want %v %q", c.Path, c.OldMode, c.OldHash, c.OldData, mode, old.data)
	}
	if c.Op == source.OpDelete && (c.Mode != 0 || !c.Hash.IsZero() || c.Data != nil) {
		t.Errorf("%s: delete with a new side: %+v", c.Path, c)
	}
}

func hasSubmodule(files map[string]file) bool {
	for _, f := range files {
		if f.mode == filemode.Submodule {
			return true
		}
	}
	return false
}

// TestDiffTreesMatchesOverlay checks that diffing the trees before and
// after a change gives what the overlay that made the change reported.
func TestDiffTreesMatchesOverlay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		writes map[string]string // "" removes; removals come first
	}{
		{"modify deep", map[string]string{"dir/sub/y.txt": "yy\n"}},
		{"create deep", map[string]string{"n1/n2/n3.txt": "3"}},
		{"replace link and executable", map[string]string{"link": "file now", "exec.sh": "#!/bin/bash\n"}},
		{"delete everything in dir", map[string]string{"dir/sub/y.txt": "", "dir/x.txt": ""}},
		{"directory becomes file", map[string]string{"only/child.txt": "", "only": "o"}},
		{"names in git order", map[string]string{"dir-x": "1", "dir.x": "2", "dir0": "3", "dir/x-y": "4"}},
		{"binary", map[string]string{"a.txt": "\x00\x01"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st, ov := newOverlay(t)
			for _, removals := range []bool{true, false} {
				for _, p := range slices.Sorted(maps.Keys(tt.writes)) {
					var err error
					switch d := tt.writes[p]; {
					case d == "" && removals:
						err = ov.Remove(p)
					case d != "" && !removals:
						err = ov.WriteFile(p, []byte(d), 0o644)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			want, err := ov.Changes()
			if err != nil {
				t.Fatal(err)
			}
			to, err := st.BuildTree(t.Context(), ov.Base().Root(), want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := st.DiffTrees(t.Context(), ov.Base().Root(), to)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, want, sameChange) {
				t.Fatalf("DiffTrees:\n got %s\nwant %s", describe(got), describe(want))
			}
		})
	}
}

func sameChange(a, b gitfs.Change) bool {
	return a.Path == b.Path && a.Op == b.Op &&
		a.Mode == b.Mode && a.Hash == b.Hash && bytes.Equal(a.Data, b.Data) &&
		a.OldMode == b.OldMode && a.OldHash == b.OldHash && bytes.Equal(a.OldData, b.OldData) &&
		a.Diff() == b.Diff()
}

func describe(changes []gitfs.Change) string {
	var b strings.Builder
	for _, c := range changes {
		fmt.Fprintf(&b, "\n  %s %s %v→%v %s→%s %q→%q", c.Op, c.Path, c.OldMode, c.Mode, c.OldHash, c.Hash, c.OldData, c.Data)
	}
	return b.String()
}

// countingStorer counts the objects read through it.
type countingStorer struct {
	storer.EncodedObjectStorer
	reads atomic.Int64
}

func (c *countingStorer) EncodedObject(typ plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	c.reads.Add(1)
	return c.EncodedObjectStorer.EncodedObject(typ, h)
}

func TestDiffTreesReadsOnlyChangedSubtrees(t *testing.T) {
	t.Parallel()
	objects := newMemStoreObjects()
	st := gitfs.NewStore(objects)
	files := make(map[string]file)
	for d := range 50 {
		for f := range 20 {
			files[fmt.Sprintf("dir-%02d/file-%02d.yaml", d, f)] = file{data: fmt.Sprintf("%d/%d\n", d, f)}
		}
	}
	files["a/b/c/d.txt"] = file{data: "d\n"}
	from := buildTree(t, st, files)
	to, err := st.BuildTree(t.Context(), from, []gitfs.Change{
		{Path: "a/b/c/d.txt", Op: source.OpUpdate, Mode: filemode.Regular, Data: []byte("d2\n")},
	})
	if err != nil {
		t.Fatal(err)
	}

	counter := &countingStorer{EncodedObjectStorer: objects}
	fresh := gitfs.NewStore(counter) // nothing cached
	changes, err := fresh.DiffTrees(t.Context(), from, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Path != "a/b/c/d.txt" || changes[0].Diff() == "" {
		t.Fatalf("changes = %s", describe(changes))
	}
	// Two roots, two each of a, a/b and a/b/c, and two blobs.
	if n := counter.reads.Load(); n > 10 {
		t.Fatalf("DiffTrees read %d objects for a change of one file, want at most 10", n)
	}
}

func TestDiffTreesErrors(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	tree := buildTree(t, st, regular(map[string]string{"a/b": "b"}))
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := st.DiffTrees(canceled, plumbing.ZeroHash, tree); !errors.Is(err, context.Canceled) {
		t.Errorf("DiffTrees with a canceled context: err = %v, want context.Canceled", err)
	}
	missing := plumbing.NewHash(strings.Repeat("ab", 20))
	if _, err := st.DiffTrees(t.Context(), missing, tree); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("DiffTrees from a missing tree: err = %v, want ErrObjectNotFound", err)
	}
}
