package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/source"
)

// TestMergeSet: the packs merged are those whose sizes break a progression
// of ratio 2, smallest first, and those merged leave one.
func TestMergeSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sizes []int64
		merge []int64
	}{
		{nil, nil},
		{[]int64{5}, nil},
		{[]int64{1, 1}, []int64{1, 1}},
		{[]int64{2, 1}, nil},
		{[]int64{1, 2, 1}, []int64{1, 1, 2}},
		{[]int64{8, 4, 2, 1}, nil},
		{[]int64{8, 4, 2, 1, 1}, []int64{1, 1, 2, 4, 8}},
		{[]int64{100, 3, 1}, nil},
		{[]int64{100, 3, 2}, []int64{2, 3}},
		{[]int64{100, 60, 3, 2}, []int64{2, 3, 60, 100}},
	} {
		packs := make([]ownPack, len(tc.sizes))
		for i, s := range tc.sizes {
			packs[i] = ownPack{name: string(rune('a' + i)), size: s}
		}
		var got []int64
		for _, p := range mergeSet(packs) {
			got = append(got, p.size)
		}
		if !slices.Equal(got, tc.merge) {
			t.Errorf("sizes %v: merge %v, want %v", tc.sizes, got, tc.merge)
		}
	}
	// One pack of a group at a time, merged as they come: the packs left
	// stay a progression, O(log n) of them.
	var packs []ownPack
	for i := range 1000 {
		packs = append(packs, ownPack{name: string(rune(i)), size: 10})
		for set := mergeSet(packs); len(set) >= 2; set = mergeSet(packs) {
			var sum int64
			for _, p := range set {
				sum += p.size
				packs = slices.DeleteFunc(packs, func(q ownPack) bool { return q.name == p.name })
			}
			packs = append(packs, ownPack{name: set[0].name, size: sum})
		}
		if len(packs) > 11 {
			t.Fatalf("%d packs after %d groups", len(packs), i+1)
		}
	}
}

// TestAdoptable: a packer takes on the small packs it finds, but none git
// is told to keep, no cruft pack, none with a bitmap, none too large, and
// none at all beside a multi-pack-index.
func TestAdoptable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pack := func(name string, size int, also ...string) {
		for _, ext := range append([]string{".idx"}, also...) {
			if err := os.WriteFile(filepath.Join(dir, name+ext), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// Sparse: the size is what counts.
		if err := os.WriteFile(filepath.Join(dir, name+".pack"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(filepath.Join(dir, name+".pack"), int64(size)); err != nil {
			t.Fatal(err)
		}
	}
	pack("pack-a", 100)
	pack("pack-b", 200, ".rev")
	pack("pack-kept", 100, ".keep")
	pack("pack-promised", 100, ".promisor")
	pack("pack-cruft", 100, ".mtimes")
	pack("pack-bitmap", 100, ".bitmap")
	pack("pack-large", adoptMaxBytes+1)
	var got []string
	for _, p := range adoptable(dir) {
		got = append(got, filepath.Base(p.name))
	}
	if !slices.Equal(got, []string{"pack-a", "pack-b"}) {
		t.Errorf("adopted %v, want pack-a and pack-b", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "multi-pack-index"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := adoptable(dir); len(got) != 0 {
		t.Errorf("beside a multi-pack-index: adopted %v", got)
	}
}

// looseCount returns how many loose objects the repository at dir holds.
func looseCount(t *testing.T, dir string) int {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "objects", "[0-9a-f][0-9a-f]", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

// TestLooseObjectsArePackedPastGCAuto: once lone writes leave more loose
// objects than the repository's gc.auto, the source moves them into a
// pack in the background, as git gc --auto would, and every commit reads
// as before; with gc.auto = 0 they stay loose.
func TestLooseObjectsArePackedPastGCAuto(t *testing.T) {
	t.Parallel()
	for _, auto := range []int{10, 0} {
		t.Run(fmt.Sprintf("gc.auto=%d", auto), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if _, err := gitrepo.Init(dir, "main", gitrepo.Generate("items", 300), "initial\n"); err != nil {
				t.Fatal(err)
			}
			if err := appendConfig(dir, fmt.Sprintf("[gc]\n\tauto = %d\n", auto)); err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			src, err := Open(dir, WithMetrics(reg), WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			// Three commits of four loose objects each (the file, two
			// trees, the commit): the third passes 10.
			var commits []string
			for i := range 3 {
				name := fmt.Sprintf("items/new-%d.yaml", i)
				res, err := src.Update(t.Context(), &source.UpdateRequest{Message: name, Apply: func(_ context.Context, _ *source.Snapshot, w source.Writer) error {
					return w.WriteFile(name, []byte(name), 0o644)
				}})
				if err != nil {
					t.Fatal(err)
				}
				commits = append(commits, res.Commit)
			}
			r := src.opened.Load()
			r.packer.wg.Wait() // the packing started by the third write
			packed := testutil.ToFloat64(r.packer.metrics.loose)
			if auto == 0 {
				if packed != 0 || looseCount(t, dir) != 12 {
					t.Fatalf("gc.auto = 0: %v objects packed, %d loose; want 0 and 12", packed, looseCount(t, dir))
				}
				return
			}
			if packed != 12 || looseCount(t, dir) != 0 {
				t.Fatalf("%v objects packed, %d loose; want 12 and 0", packed, looseCount(t, dir))
			}
			if runs := testutil.ToFloat64(r.packer.metrics.looseRuns.WithLabelValues("success")); runs != 1 {
				t.Errorf("%v successful runs, want 1", runs)
			}
			for i, c := range commits {
				snap, err := src.View(t.Context(), c)
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("items/new-%d.yaml", i)
				if data, err := fs.ReadFile(snap.FS, name); err != nil || string(data) != name {
					t.Fatalf("%s at %s: %q, %v", name, c, data, err)
				}
			}
			if out, err := exec.Command("git", "-C", dir, "fsck", "--strict", "--no-dangling").CombinedOutput(); err != nil {
				t.Fatalf("git fsck: %v\n%s", err, out)
			}
		})
	}
}

// TestLooseObjectsArePackedAtOpen: a repository that holds more loose
// objects than its gc.auto when the source opens it has them packed before
// the first read returns, and reads them from the pack.
func TestLooseObjectsArePackedAtOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := gitrepo.Init(dir, "main", gitrepo.Generate("items", 50), "initial\n"); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(gitrepo.Unpack(dir), appendConfig(dir, "[gc]\n\tauto = 10\n")); err != nil {
		t.Fatal(err)
	}
	// The estimate counts objects/17 only: one object there makes 256.
	w := gitfs.NewLooseWriter(filepath.Join(dir, "objects"))
	for i := 0; ; i++ {
		data := fmt.Appendf(nil, "blob %d\n", i)
		if h := gitfs.HashObject(plumbing.BlobObject, data); h[0] == 0x17 {
			if _, err := w.WriteObject(plumbing.BlobObject, data); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	loose := looseCount(t, dir)
	src, err := Open(dir, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	snap, err := src.View(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if left := looseCount(t, dir); left != 0 {
		t.Fatalf("%d of %d loose objects left after the first read", left, loose)
	}
	files, err := fs.ReadDir(snap.FS, "items")
	if err != nil || len(files) != 50 {
		t.Fatalf("items holds %d files, %v; want 50", len(files), err)
	}
	for _, f := range files {
		if _, err := fs.ReadFile(snap.FS, "items/"+f.Name()); err != nil {
			t.Fatal(err)
		}
	}
}

// appendConfig appends text to the configuration of the repository at dir.
func appendConfig(dir, text string) error {
	f, err := os.OpenFile(filepath.Join(dir, "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
}
