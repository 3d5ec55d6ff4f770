// Tests of updates racing other writers: concurrency, retries and conflicts.

package sourcetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cup-dev/cup/source"
)

func testUpdateConcurrent(t *testing.T, f *fixture) {
	const n = 20
	var wg sync.WaitGroup
	commits := make([]string, n)
	for i := range n {
		wg.Go(func() {
			res, err := f.src.Update(t.Context(), &source.UpdateRequest{
				Message: fmt.Sprintf("writer %d\n", i),
				Apply:   writes(map[string]string{fmt.Sprintf("concurrent/file-%02d.txt", i): fmt.Sprint(i)}),
			})
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
				return
			}
			commits[i] = res.Commit
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	log, err := f.repo.Log("main")
	must(t, err)
	if len(log) != n+2 {
		t.Fatalf("main has %d commits, want %d", len(log), n+2)
	}
	seen := make(map[string]bool)
	for i, c := range log[:n] {
		if len(c.Parents) != 1 || c.Parents[0] != log[i+1].ID {
			t.Fatalf("history is not linear at %s: parents %v", c.ID, c.Parents)
		}
		seen[c.ID] = true
	}
	for i, c := range commits {
		if !seen[c] {
			t.Errorf("commit %s of writer %d is not on main", c, i)
		}
	}
	files, err := f.repo.Files("main")
	must(t, err)
	for i := range n {
		if p := fmt.Sprintf("concurrent/file-%02d.txt", i); string(files[p]) != fmt.Sprint(i) {
			t.Errorf("%s = %q, want %q", p, files[p], fmt.Sprint(i))
		}
	}
}

func testUpdateAfterExternalCommit(t *testing.T, f *fixture) {
	snap, err := f.src.View(t.Context(), "main")
	must(t, err)
	if snap.Commit != f.c2 {
		t.Fatalf("View = %s, want %s", snap.Commit, f.c2)
	}
	c3 := f.external(t, "main", map[string]string{"external.txt": "ext\n"})
	var base *source.Snapshot
	res := update(t, f, &source.UpdateRequest{
		Revision: "main",
		Message:  "mine",
		Apply: func(ctx context.Context, b *source.Snapshot, w source.Writer) error {
			base = b
			return w.WriteFile("mine.txt", []byte("mine\n"), 0o644)
		},
	})
	if res.Base != c3 || base.Commit != c3 {
		t.Fatalf("update applied on %s (Apply saw %s), want the external commit %s", res.Base, base.Commit, c3)
	}
	files, err := f.repo.Files("main")
	must(t, err)
	if string(files["external.txt"]) != "ext\n" || string(files["mine.txt"]) != "mine\n" {
		t.Fatalf("head lost a change: external.txt=%q mine.txt=%q", files["external.txt"], files["mine.txt"])
	}
}

func testUpdateRetriesWhenBranchMoves(t *testing.T, f *fixture) {
	var (
		calls    atomic.Int32
		mu       sync.Mutex
		bases    []string
		external string
	)
	res := update(t, f, &source.UpdateRequest{
		Message: "counted",
		Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			mu.Lock()
			bases = append(bases, base.Commit)
			mu.Unlock()
			if calls.Add(1) == 1 {
				// Another writer commits while this change is being made.
				var err error
				if external, err = f.commitExternal("main", map[string]string{"external.txt": "ext\n"}); err != nil {
					return err
				}
			}
			// Derive the write from the base, as ApplyFunc must.
			entries, err := fs.ReadDir(base.FS, ".")
			if err != nil {
				return err
			}
			if got, err := readString(base.FS, appPath); got != appV2 {
				return fmt.Errorf("base reads %q, %v", got, err)
			}
			return w.WriteFile("count.txt", []byte(fmt.Sprint(len(entries))), 0o644)
		},
	})
	if calls.Load() < 2 {
		t.Fatalf("Apply called %d times, want it applied again on the moved branch", calls.Load())
	}
	if bases[0] != f.c2 || bases[len(bases)-1] != external {
		t.Fatalf("Apply saw bases %v, want %s first and %s last", bases, f.c2, external)
	}
	if res.Base != external {
		t.Fatalf("result base %s, want %s", res.Base, external)
	}
	log, err := f.repo.Log("main")
	must(t, err)
	if log[0].ID != res.Commit || log[1].ID != external {
		t.Fatalf("history: %s then %s, want %s then %s", log[0].ID, log[1].ID, res.Commit, external)
	}
	files, err := f.repo.Files("main")
	must(t, err)
	// README.md, NEW.md, config, docs and external.txt.
	if string(files["count.txt"]) != "5" || string(files["external.txt"]) != "ext\n" {
		t.Fatalf("count.txt=%q external.txt=%q", files["count.txt"], files["external.txt"])
	}
}

func testUpdateConflict(t *testing.T, f *fixture) {
	var (
		calls atomic.Int32
		last  atomic.Value
	)
	_, err := f.src.Update(t.Context(), &source.UpdateRequest{
		Message: "always loses",
		Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			n := calls.Add(1)
			c, err := f.commitExternal("main", map[string]string{"external.txt": fmt.Sprint(n)})
			if err != nil {
				return err
			}
			last.Store(c)
			return w.WriteFile("mine.txt", []byte("mine"), 0o644)
		},
	})
	if !errors.Is(err, source.ErrConflict) {
		t.Fatalf("Update err = %v, want ErrConflict", err)
	}
	if calls.Load() < 3 {
		t.Fatalf("Apply called %d times, want at least 3 (two retries)", calls.Load())
	}
	if head := f.head(t, "main"); head != last.Load().(string) {
		t.Fatalf("main = %s, want the last external commit %s", head, last.Load())
	}
	files, err := f.repo.Files("main")
	must(t, err)
	if _, ok := files["mine.txt"]; ok {
		t.Fatal("the conflicting change was written")
	}
	if !bytes.Equal(files["external.txt"], []byte(fmt.Sprint(calls.Load()))) {
		t.Fatalf("external.txt = %q, want %d", files["external.txt"], calls.Load())
	}
}
