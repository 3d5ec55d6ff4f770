package gitfs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/source"
)

func refsRepo(t *testing.T) (dir string, first, second plumbing.Hash) {
	t.Helper()
	dir = t.TempDir()
	c1, err := gitrepo.Init(dir, "main", map[string][]byte{"f": []byte("1")}, "one")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := gitrepo.Commit(dir, "main", map[string][]byte{"f": []byte("2")}, "two")
	if err != nil {
		t.Fatal(err)
	}
	return dir, plumbing.NewHash(c1), plumbing.NewHash(c2)
}

func TestValidRefName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"HEAD":                true,
		"refs/heads/main":     true,
		"refs/heads/feat/x-1": true,
		"refs/tags/v1.0":      true,
		"main":                false,
		"refs/":               false,
		"refs/heads/../x":     false,
		"refs/heads/a..b":     false,
		"refs/heads//x":       false,
		"refs/heads/x/":       false,
		"refs/heads/.hidden":  false,
		"refs/heads/x.lock":   false,
		"refs/heads/x.":       false,
		"refs/heads/a b":      false,
		"refs/heads/a~1":      false,
		"refs/heads/a^":       false,
		"refs/heads/a:b":      false,
		"refs/heads/a\\b":     false,
		"refs/heads/a@{1}":    false,
		"refs/heads/a\x00":    false,
		"refs/heads/a\n":      false,
	} {
		if got := gitfs.ValidRefName(name); got != want {
			t.Errorf("ValidRefName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestRefsRead(t *testing.T) {
	t.Parallel()
	dir, first, second := refsRepo(t)
	if err := os.WriteFile(filepath.Join(dir, "packed-refs"), []byte(
		"# pack-refs with: peeled fully-peeled sorted \n"+
			first.String()+" refs/heads/packed\n"+
			first.String()+" refs/heads/main\n"+ // shadowed by the loose file
			first.String()+" refs/tags/annotated\n^"+second.String()+"\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	refs := gitfs.NewRefs(dir, dir)
	tests := []struct {
		name       string
		want       plumbing.Hash
		wantTarget string
		wantErr    error
	}{
		{name: "refs/heads/main", want: second},
		{name: "refs/heads/packed", want: first},
		{name: "refs/tags/annotated", want: first},
		{name: "HEAD", wantTarget: "refs/heads/main"},
		{name: "refs/heads/missing", wantErr: gitfs.ErrRefNotFound},
		{name: "refs/heads", wantErr: gitfs.ErrRefNotFound}, // a directory
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ref, err := refs.Read(tt.name)
			if !errors.Is(err, tt.wantErr) || ref.Hash != tt.want || ref.Target != tt.wantTarget {
				t.Fatalf("Read = %+v, %v; want %s %q, %v", ref, err, tt.want, tt.wantTarget, tt.wantErr)
			}
		})
	}
	if h, name, err := refs.Resolve("HEAD"); err != nil || h != second || name != "refs/heads/main" {
		t.Fatalf("Resolve(HEAD) = %s, %s, %v", h, name, err)
	}
	if _, err := refs.Read("../../etc/passwd"); err == nil {
		t.Fatal("Read of a path outside refs succeeded")
	}
}

func TestRefsSeeExternalChanges(t *testing.T) {
	t.Parallel()
	dir, first, second := refsRepo(t)
	refs := gitfs.NewRefs(dir, dir)
	path := filepath.Join(dir, "refs", "heads", "main")

	// A ref last changed long ago is served from the cache after a stat...
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if h, _, err := refs.Resolve("refs/heads/main"); err != nil || h != second {
		t.Fatalf("Resolve = %s, %v", h, err)
	}
	// ...and a change through Git's lock protocol shows at once.
	third, err := gitrepo.Commit(dir, "main", map[string][]byte{"f": []byte("3")}, "three")
	if err != nil {
		t.Fatal(err)
	}
	if h, _, err := refs.Resolve("refs/heads/main"); err != nil || h.String() != third {
		t.Fatalf("Resolve after commit = %s, %v; want %s", h, err, third)
	}
	// A writer that rewrites the file in place (same inode and size) within
	// the timestamp granularity is caught too.
	for _, want := range []plumbing.Hash{first, second, first} {
		if err := os.WriteFile(path, []byte(want.String()+"\n"), 0o666); err != nil {
			t.Fatal(err)
		}
		if h, _, err := refs.Resolve("refs/heads/main"); err != nil || h != want {
			t.Fatalf("Resolve after in-place write = %s, %v; want %s", h, err, want)
		}
	}
	// Packing the ref away and deleting the loose file.
	if err := os.WriteFile(filepath.Join(dir, "packed-refs"), []byte(second.String()+" refs/heads/main\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if h, _, err := refs.Resolve("refs/heads/main"); err != nil || h != second {
		t.Fatalf("Resolve after packing = %s, %v; want %s", h, err, second)
	}
}

func TestRefsUpdate(t *testing.T) {
	t.Parallel()
	dir, first, second := refsRepo(t)
	if err := os.MkdirAll(filepath.Join(dir, "logs", "refs", "heads"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "logs", "refs", "heads", "main"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	refs := gitfs.NewRefs(dir, dir)
	ctx := t.Context()
	if err := refs.Update(ctx, "refs/heads/main", first, second, nil); !errors.Is(err, gitfs.ErrRefMoved) {
		t.Fatalf("Update from a stale value: err = %v, want ErrRefMoved", err)
	}
	if err := refs.Update(ctx, "refs/heads/new", plumbing.ZeroHash, first, nil); err != nil {
		t.Fatal(err)
	}
	if err := refs.Update(ctx, "refs/heads/new", plumbing.ZeroHash, first, nil); !errors.Is(err, gitfs.ErrRefMoved) {
		t.Fatalf("creating an existing ref: err = %v, want ErrRefMoved", err)
	}
	who := source.Signature{Name: "cup", Email: "cup@localhost", When: time.Unix(1700000000, 0).UTC()}
	if err := refs.Update(ctx, "refs/heads/main", second, first, &gitfs.ReflogEntry{Who: who, Message: "commit: undo\n\nbody"}); err != nil {
		t.Fatal(err)
	}
	if h, _, err := refs.Resolve("HEAD"); err != nil || h != first {
		t.Fatalf("Resolve(HEAD) = %s, %v; want %s", h, err, first)
	}
	log, err := os.ReadFile(filepath.Join(dir, "logs", "refs", "heads", "main"))
	if err != nil {
		t.Fatal(err)
	}
	if want := second.String() + " " + first.String() + " cup <cup@localhost> 1700000000 +0000\tcommit: undo\n"; string(log) != want {
		t.Fatalf("reflog = %q, want %q", log, want)
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, "refs", "heads", "*.lock")); len(entries) != 0 {
		t.Fatalf("lock files left behind: %v", entries)
	}
	gitCmd(t, dir, "fsck", "--strict")
}

func TestRefsUpdateWaitsForLock(t *testing.T) {
	t.Parallel()
	dir, _, second := refsRepo(t)
	// In a bubble the waits for the lock, up to its timeout of a second,
	// pass at once.
	synctest.Test(t, func(t *testing.T) {
		refs := gitfs.NewRefs(dir, dir)
		lock := filepath.Join(dir, "refs", "heads", "main.lock")
		if err := os.WriteFile(lock, nil, 0o666); err != nil {
			t.Fatal(err)
		}

		// A lock released soon is waited for.
		var wg sync.WaitGroup
		wg.Go(func() {
			time.Sleep(50 * time.Millisecond)
			os.Remove(lock)
		})
		start := time.Now()
		if err := refs.Update(t.Context(), "refs/heads/main", second, second, nil); err != nil {
			t.Fatalf("Update after the lock was released: %v", err)
		}
		if waited := time.Since(start); waited < 50*time.Millisecond {
			t.Errorf("Update returned after %v, before the lock was released", waited)
		}
		wg.Wait()

		// A lock that stays is reported, and left alone.
		if err := os.WriteFile(lock, nil, 0o666); err != nil {
			t.Fatal(err)
		}
		err := refs.Update(t.Context(), "refs/heads/main", second, second, nil)
		if !errors.Is(err, gitfs.ErrRefLocked) || !strings.Contains(err.Error(), "main.lock") {
			t.Fatalf("err = %v, want ErrRefLocked naming the lock file", err)
		}
		if _, err := os.Stat(lock); err != nil {
			t.Fatalf("the other writer's lock file was removed: %v", err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
		defer cancel()
		if err := refs.Update(ctx, "refs/heads/main", second, second, nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
	})
}
