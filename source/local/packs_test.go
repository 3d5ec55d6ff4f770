package local_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/local"
)

// TestGroupsWritePacksAndMergeThem: concurrent writers in groups write
// each group's objects as one pack, the source merges those packs as
// they come, and every write lands, readable by git.
func TestGroupsWritePacksAndMergeThem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := gitrepo.Generate("items", 1000)
	if _, err := gitrepo.Init(dir, "main", files, "initial\n"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	// A wait for each group to fill makes groups of several commits
	// whatever the machine's speed.
	src, err := local.Open(dir, local.WithLogger(testLogger(t)), local.WithMetrics(reg), local.WithWriteGroup(64, 5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 16, 12
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				name := fmt.Sprintf("items/w%02d-%02d.yaml", w, i)
				if _, err := src.Update(t.Context(), &source.UpdateRequest{Message: name, Apply: write(map[string]string{name: name})}); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		})
	}
	wg.Wait()
	packed := counter(t, reg, "cup_local_objects_written_total", "as", "pack")
	if packed == 0 {
		t.Fatal("no group of commits was written as a pack")
	}
	if err := src.Close(); err != nil { // waits for a merge under way
		t.Fatal(err)
	}
	got, err := gitrepo.Files(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if want := len(files) + writers*each; len(got) != want {
		t.Fatalf("main holds %d files, want %d", len(got), want)
	}
	log, err := gitrepo.Log(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + writers*each; len(log) != want {
		t.Fatalf("main has %d commits, want %d", len(log), want)
	}
	git(t, dir, "fsck", "--strict", "--no-dangling")
	packs, err := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	merges := counter(t, reg, "cup_local_pack_merges_total", "outcome", "success")
	t.Logf("%v objects written in packs, %d packs now, %v merges", packed, len(packs), merges)
	if merges == 0 {
		t.Error("no merge of packs")
	}
	// The initial pack, and at most one a size of the progression.
	if len(packs) > 8 {
		t.Errorf("%d packs after %d writes", len(packs), writers*each)
	}
}

// counter returns the value of the counter called name with label =
// value, 0 when there is none.
func counter(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestPacksOfEarlierRunsAreMerged: a source merges the packs an earlier
// one left with its own, so that packs do not pile up over restarts, and
// leaves alone a pack git is told to keep.
func TestPacksOfEarlierRunsAreMerged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := gitrepo.Init(dir, "main", gitrepo.Generate("items", 200), "initial\n"); err != nil {
		t.Fatal(err)
	}
	packDir := filepath.Join(dir, "objects", "pack")
	initial, err := filepath.Glob(filepath.Join(packDir, "*.pack"))
	if err != nil || len(initial) != 1 {
		t.Fatalf("initial packs %v, %v", initial, err)
	}
	kept := strings.TrimSuffix(initial[0], ".pack")
	if err := os.WriteFile(kept+".keep", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(r int) {
		src, err := local.Open(dir, local.WithLogger(testLogger(t)), local.WithWriteGroup(64, 5*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 4 {
					name := fmt.Sprintf("items/r%d-w%d-%d.yaml", r, w, i)
					if _, err := src.Update(t.Context(), &source.UpdateRequest{Message: name, Apply: write(map[string]string{name: name})}); err != nil {
						t.Errorf("%s: %v", name, err)
					}
				}
			})
		}
		wg.Wait()
		if err := src.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for r := range 12 {
		run(r)
	}
	packs, err := filepath.Glob(filepath.Join(packDir, "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	// Twelve runs of several groups each: without merging across runs,
	// a dozen packs at least.
	if len(packs) > 8 {
		t.Errorf("%d packs after 12 runs", len(packs))
	}
	if _, err := os.Stat(kept + ".pack"); err != nil {
		t.Errorf("the kept pack is gone: %v", err)
	}
	git(t, dir, "fsck", "--strict", "--no-dangling")
	log, err := gitrepo.Log(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + 12*8*4; len(log) != want {
		t.Fatalf("main has %d commits, want %d", len(log), want)
	}
	t.Logf("%d packs after 12 runs", len(packs))
}

// TestRevisionSyntaxReadsPackedCommits: revision syntax that go-git
// resolves (main~1, a short id) finds commits in a pack written after
// go-git listed the packs.
func TestRevisionSyntaxReadsPackedCommits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := gitrepo.Init(dir, "main", gitrepo.Generate("items", 50), "initial\n"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	src := open(t, dir, local.WithMetrics(reg), local.WithWriteGroup(64, 20*time.Millisecond))
	// go-git lists the packs now, before the group writes its own.
	if _, err := src.View(t.Context(), "main~0"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			name := fmt.Sprintf("items/w%d.yaml", w)
			if _, err := src.Update(t.Context(), &source.UpdateRequest{Message: name, Apply: write(map[string]string{name: name})}); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	wg.Wait()
	if counter(t, reg, "cup_local_objects_written_total", "as", "pack") == 0 {
		t.Fatal("the group was not written as a pack")
	}
	head, err := src.View(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{"main~1", "main~2", head.Commit[:10]} {
		if _, err := src.View(t.Context(), rev); err != nil {
			t.Errorf("%s: %v", rev, err)
		}
	}
}

// TestLoosePackingUnderLoad: lone writes from several writers, and
// readers of every commit, while the source packs loose objects past a
// small gc.auto over and over: every write lands, every read succeeds, and
// git finds the repository whole.
func TestLoosePackingUnderLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := gitrepo.Init(dir, "main", gitrepo.Generate("items", 500), "initial\n"); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "config", "gc.auto", "8")
	reg := prometheus.NewRegistry()
	src, err := local.Open(dir, local.WithLogger(testLogger(t)), local.WithMetrics(reg))
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 4, 15
	var commits sync.Map // commit → the file it added
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				name := fmt.Sprintf("items/w%d-%02d.yaml", w, i)
				res, err := src.Update(t.Context(), &source.UpdateRequest{Message: name, Apply: write(map[string]string{name: name})})
				if err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
				commits.Store(res.Commit, name)
			}
		})
	}
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				commits.Range(func(c, name any) bool {
					snap, err := src.View(t.Context(), c.(string))
					if err != nil {
						t.Errorf("view %s: %v", c, err)
						return false
					}
					if got := readFile(t, snap.FS, name.(string)); got != name {
						t.Errorf("%s at %s reads %q", name, c, got)
						return false
					}
					return true
				})
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	runs := 0.0
	for _, outcome := range []string{"success", "canceled"} {
		runs += counter(t, reg, "cup_local_loose_packs_total", "outcome", outcome)
	}
	if runs == 0 || counter(t, reg, "cup_local_loose_packs_total", "outcome", "error") != 0 {
		t.Fatalf("loose objects packed in %v runs, %v failed; want some, none failed", runs,
			counter(t, reg, "cup_local_loose_packs_total", "outcome", "error"))
	}
	git(t, dir, "fsck", "--strict", "--no-dangling")
	log, err := gitrepo.Log(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + writers*each; len(log) != want {
		t.Fatalf("main has %d commits, want %d", len(log), want)
	}
	t.Logf("%v runs packed loose objects", runs)
}
