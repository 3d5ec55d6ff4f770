package local_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/local"
)

// newRepo makes a bare repository with files on branch main.
func newRepo(t *testing.T, files map[string]string) (dir, commit string) {
	t.Helper()
	dir = t.TempDir()
	m := make(map[string][]byte, len(files))
	for p, d := range files {
		m[p] = []byte(d)
	}
	commit, err := gitrepo.Init(dir, "main", m, "initial\n")
	if err != nil {
		t.Fatal(err)
	}
	return dir, commit
}

func open(t *testing.T, dir string, opts ...local.Option) *local.Source {
	t.Helper()
	src, err := local.Open(dir, append([]local.Option{local.WithLogger(testLogger(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

func write(files map[string]string) source.ApplyFunc {
	return func(_ context.Context, _ *source.Snapshot, w source.Writer) error {
		for p, d := range files {
			if err := w.WriteFile(p, []byte(d), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
}

func readFile(t *testing.T, fsys fs.FS, name string) string {
	t.Helper()
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// git runs the git command in dir, skipping the test without git.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir(),
		"GIT_AUTHOR_NAME=Tester", "GIT_AUTHOR_EMAIL=tester@example.com",
		"GIT_COMMITTER_NAME=Tester", "GIT_COMMITTER_EMAIL=tester@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestOpenOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		path string
		opts []local.Option
	}{
		{"empty path", "", nil},
		{"invalid branch", "x", []local.Option{local.WithBranch("a..b")}},
		{"branch with space", "x", []local.Option{local.WithBranch("a b")}},
		{"empty author", "x", []local.Option{local.WithAuthor("<>", "a@b")}},
		{"empty email", "x", []local.Option{local.WithAuthor("a", "")}},
		{"negative retries", "x", []local.Option{local.WithMaxRetries(-1)}},
		{"nil clock", "x", []local.Option{local.WithClock(nil)}},
		{"unknown write mode", "x", []local.Option{local.WithWriteMode(source.WriteMode(7))}},
		{"empty branch prefix", "x", []local.Option{local.WithBranchPrefix("")}},
		{"invalid branch prefix", "x", []local.Option{local.WithBranchPrefix("cup..")}},
		{"branch prefix with space", "x", []local.Option{local.WithBranchPrefix("cup /")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := local.Open(tt.path, tt.opts...); err == nil {
				t.Fatal("Open succeeded")
			}
		})
	}
}

func TestMissingRepository(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "repo")
	src := open(t, dir) // no I/O yet: fine
	if _, err := src.View(t.Context(), ""); !errors.Is(err, source.ErrUnavailable) {
		t.Fatalf("View err = %v, want ErrUnavailable", err)
	}
	// The repository appears later: the source picks it up.
	want, err := gitrepo.Init(dir, "main", map[string][]byte{"f": []byte("f")}, "init")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := src.View(t.Context(), "")
	if err != nil || snap.Commit != want {
		t.Fatalf("View = %v, %v; want %s", snap, err, want)
	}
}

func TestRevisionSyntax(t *testing.T) {
	t.Parallel()
	dir, c1 := newRepo(t, map[string]string{"f": "1"})
	c2, err := gitrepo.Commit(dir, "main", map[string][]byte{"f": []byte("2")}, "two")
	if err != nil {
		t.Fatal(err)
	}
	if err := gitrepo.Branch(dir, c1[:12], c2); err != nil { // a branch named like a short id
		t.Fatal(err)
	}
	src := open(t, dir)
	tests := []struct {
		rev  string
		want string
	}{
		{"HEAD", c2},
		{"main~1", c1},
		{"main^", c1},
		{"HEAD~1", c1},
		{c2[:7], c2},
		{strings.ToUpper(c1), c1},
		{c1[:12], c2}, // names are looked up before short ids
	}
	for _, tt := range tests {
		snap, err := src.View(t.Context(), tt.rev)
		if err != nil || snap.Commit != tt.want {
			t.Errorf("View(%q) = %v, %v; want %s", tt.rev, snap, err, tt.want)
		}
	}
	for _, rev := range []string{"main~5", "main^2", "0000000"} {
		if _, err := src.View(t.Context(), rev); !errors.Is(err, source.ErrRevisionNotFound) {
			t.Errorf("View(%q) err = %v, want ErrRevisionNotFound", rev, err)
		}
	}
	for _, rev := range []string{"main^{/x}", "main:f", "~1", "^main", "main~x"} {
		if _, err := src.View(t.Context(), rev); !errors.Is(err, source.ErrInvalidRevision) && !errors.Is(err, source.ErrRevisionNotFound) {
			t.Errorf("View(%q) err = %v, want ErrInvalidRevision or ErrRevisionNotFound", rev, err)
		}
	}
}

func TestDefaultBranchFollowsHEAD(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trunk, err := gitrepo.Init(dir, "trunk", map[string][]byte{"f": []byte("trunk")}, "init")
	if err != nil {
		t.Fatal(err)
	}
	if err := gitrepo.Branch(dir, "other", trunk); err != nil {
		t.Fatal(err)
	}
	other, err := gitrepo.Commit(dir, "other", map[string][]byte{"f": []byte("other")}, "other")
	if err != nil {
		t.Fatal(err)
	}
	src := open(t, dir)
	pinned := open(t, dir, local.WithBranch("other"))
	view := func(s *local.Source) string {
		snap, err := s.View(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		return snap.Commit
	}
	if got := view(src); got != trunk {
		t.Fatalf("default branch at %s, want trunk %s", got, trunk)
	}
	if got := view(pinned); got != other {
		t.Fatalf("WithBranch(other) at %s, want %s", got, other)
	}
	if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/other\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if got := view(src); got != other {
		t.Fatalf("after HEAD moved to other: %s, want %s", got, other)
	}
	res, err := src.Update(t.Context(), &source.UpdateRequest{Message: "m", Apply: write(map[string]string{"g": "g"})})
	if err != nil || res.Branch != "other" {
		t.Fatalf("Update = %+v, %v; want a commit on other", res, err)
	}
	// A detached HEAD can be viewed but not written.
	if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte(trunk+"\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if got := view(src); got != trunk {
		t.Fatalf("detached HEAD: %s, want %s", got, trunk)
	}
	if _, err := src.Update(t.Context(), &source.UpdateRequest{Apply: write(map[string]string{"g": "h"})}); !errors.Is(err, source.ErrNotWritable) {
		t.Fatalf("Update on a detached HEAD: err = %v, want ErrNotWritable", err)
	}
}

func TestCommitIdentityAndClock(t *testing.T) {
	t.Parallel()
	when := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	authored := time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("", 3600))
	var commits []string
	for range 2 {
		dir, _ := newRepo(t, map[string]string{"f": "f"})
		src := open(t, dir, local.WithAuthor("bot", "bot@example.com"), local.WithClock(func() time.Time { return when }))
		res, err := src.Update(t.Context(), &source.UpdateRequest{
			Message: "by alice\n",
			Author:  &source.Signature{Name: "Alice", Email: "alice@example.com", When: authored},
			Apply:   write(map[string]string{"f": "g"}),
		})
		if err != nil {
			t.Fatal(err)
		}
		log, err := gitrepo.Log(dir, "main")
		if err != nil {
			t.Fatal(err)
		}
		c := log[0]
		if c.Author.Name != "Alice" || c.Author.Email != "alice@example.com" || !c.Author.When.Equal(authored) {
			t.Fatalf("author = %+v", c.Author)
		}
		if c.Committer.Name != "bot" || c.Committer.Email != "bot@example.com" || !c.Committer.When.Equal(when) {
			t.Fatalf("committer = %+v", c.Committer)
		}
		commits = append(commits, res.Commit)
	}
	if commits[0] != commits[1] {
		t.Fatalf("the same update with the same clock gave commits %s and %s", commits[0], commits[1])
	}
}

func TestRetriesThenConflict(t *testing.T) {
	t.Parallel()
	for _, retries := range []int{0, 2} {
		t.Run(fmt.Sprint("retries=", retries), func(t *testing.T) {
			t.Parallel()
			dir, _ := newRepo(t, map[string]string{"f": "f"})
			src := open(t, dir, local.WithMaxRetries(retries))
			var calls atomic.Int32
			_, err := src.Update(t.Context(), &source.UpdateRequest{
				Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
					n := calls.Add(1)
					if _, err := gitrepo.Commit(dir, "main", map[string][]byte{"ext": []byte(fmt.Sprint(n))}, "ext"); err != nil {
						return err
					}
					return w.WriteFile("mine", []byte("mine"), 0o644)
				},
			})
			if !errors.Is(err, source.ErrConflict) {
				t.Fatalf("err = %v, want ErrConflict", err)
			}
			if got := calls.Load(); got != int32(retries+1) {
				t.Fatalf("Apply called %d times, want %d", got, retries+1)
			}
		})
	}
}

func TestTwoSourcesOneRepository(t *testing.T) {
	t.Parallel()
	dir, _ := newRepo(t, map[string]string{"f": "f"})
	// Two sources play two processes: they share nothing but the repository.
	sources := []*local.Source{open(t, dir, local.WithMaxRetries(100)), open(t, dir, local.WithMaxRetries(100))}
	const perSource = 10
	var wg sync.WaitGroup
	for s, src := range sources {
		for i := range perSource {
			wg.Go(func() {
				name := fmt.Sprintf("s%d-%d", s, i)
				if _, err := src.Update(t.Context(), &source.UpdateRequest{Message: name, Apply: write(map[string]string{name: name})}); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			})
		}
	}
	wg.Wait()
	// gitrepo reads with go-git, which fails on a pack removed under it (as
	// by git gc) rather than look again: the sources finish merging their
	// packs first.
	for _, src := range sources {
		if err := src.Close(); err != nil {
			t.Fatal(err)
		}
	}
	files, err := gitrepo.Files(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1+2*perSource {
		t.Fatalf("main holds %d files, want %d: updates were lost", len(files), 1+2*perSource)
	}
	log, err := gitrepo.Log(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1+2*perSource {
		t.Fatalf("main has %d commits, want %d", len(log), 1+2*perSource)
	}
	git(t, dir, "fsck", "--strict", "--no-dangling")
}

func TestStaleLockFile(t *testing.T) {
	t.Parallel()
	dir, head := newRepo(t, map[string]string{"f": "f"})
	if err := os.WriteFile(filepath.Join(dir, "refs", "heads", "main.lock"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	src := open(t, dir)
	_, err := src.Update(t.Context(), &source.UpdateRequest{Apply: write(map[string]string{"f": "g"})})
	if !errors.Is(err, source.ErrUnavailable) || !strings.Contains(err.Error(), "main.lock") {
		t.Fatalf("err = %v, want ErrUnavailable naming the lock file", err)
	}
	if got, _ := gitrepo.Resolve(dir, "main"); got != head {
		t.Fatalf("main moved to %s", got)
	}
}

func TestWaitingForBranchHonoursContext(t *testing.T) {
	t.Parallel()
	dir, _ := newRepo(t, map[string]string{"f": "f"})
	src := open(t, dir)
	inApply, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := src.Update(t.Context(), &source.UpdateRequest{Apply: func(ctx context.Context, base *source.Snapshot, w source.Writer) error {
			close(inApply)
			<-release
			return w.WriteFile("slow", []byte("slow"), 0o644)
		}})
		if err != nil {
			t.Error(err)
		}
	})
	<-inApply
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err := src.Update(ctx, &source.UpdateRequest{Apply: write(map[string]string{"fast": "fast"})})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded while another update holds the branch", err)
	}
	// Dry runs and views do not wait.
	if _, err := src.Update(ctx, &source.UpdateRequest{DryRun: true, Apply: write(map[string]string{"x": "x"})}); err == nil {
		t.Fatal("dry run with an expired context succeeded")
	}
	if _, err := src.View(t.Context(), "main"); err != nil {
		t.Fatal(err)
	}
	close(release)
	wg.Wait()
}

// TestGitInterop works on a repository with the git command alongside the
// source: commits made by git are seen at once, git accepts what the source
// writes, and repacking, pruning and packing references break nothing.
func TestGitInterop(t *testing.T) {
	t.Parallel()
	files := map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n", "dir/c.txt": "c\n"}
	for i := range 50 {
		files[fmt.Sprintf("many/f%02d", i)] = fmt.Sprint(i)
	}
	dir, _ := newRepo(t, files)
	src := open(t, dir)
	ctx := t.Context()

	// A commit made by git behind the source's back.
	snap, err := src.View(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	tree := git(t, dir, "mktree") // the empty tree
	commit := git(t, dir, "commit-tree", tree, "-p", "main", "-m", "emptied by git")
	git(t, dir, "update-ref", "refs/heads/main", commit, snap.Commit)
	snap, err = src.View(ctx, "")
	if err != nil || snap.Commit != commit {
		t.Fatalf("View after git update-ref = %v, %v; want %s", snap, err, commit)
	}
	git(t, dir, "update-ref", "refs/heads/main", snap.Commit+"~1", commit) // undo

	// Updates that git checks.
	for i, apply := range []source.ApplyFunc{
		write(map[string]string{"a.txt": "A\n", "new/deep/file.txt": "n\n", "dir-x": "sorts before dir/"}),
		func(_ context.Context, _ *source.Snapshot, w source.Writer) error {
			if err := w.Remove("dir/b.txt"); err != nil {
				return err
			}
			return w.Remove("dir/c.txt")
		},
		write(map[string]string{"dir": "a file where a directory was\n", "run.sh": "#!/bin/sh\n"}),
	} {
		if _, err := src.Update(ctx, &source.UpdateRequest{Message: fmt.Sprintf("update %d\n", i), Apply: apply}); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "fsck", "--strict", "--no-dangling")
	if got := git(t, dir, "show", "main:dir"); got != "a file where a directory was" {
		t.Fatalf("git show main:dir = %q", got)
	}
	if got := git(t, dir, "log", "--format=%s", "-n", "3", "main"); got != "update 2\nupdate 1\nupdate 0" {
		t.Fatalf("git log = %q", got)
	}

	// Pack everything, prune the loose objects and pack the references, then
	// read files the source has not read yet and update again.
	git(t, dir, "gc", "--prune=now", "--quiet")
	git(t, dir, "pack-refs", "--all")
	if entries, _ := filepath.Glob(filepath.Join(dir, "objects", "??")); len(entries) != 0 {
		t.Fatalf("loose objects left after gc: %v", entries)
	}
	snap, err = src.View(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, snap.FS, "many/f42"); got != "42" {
		t.Fatalf("many/f42 = %q", got)
	}
	if got := readFile(t, snap.FS, "new/deep/file.txt"); got != "n\n" {
		t.Fatalf("new/deep/file.txt = %q", got)
	}
	res, err := src.Update(ctx, &source.UpdateRequest{Message: "after gc\n", Apply: write(map[string]string{"many/f07": "seven"})})
	if err != nil {
		t.Fatal(err)
	}
	if got := git(t, dir, "rev-parse", "main"); got != res.Commit {
		t.Fatalf("git rev-parse main = %s, want %s", got, res.Commit)
	}
	git(t, dir, "fsck", "--strict", "--no-dangling")
}

func TestChangeSetsWithGit(t *testing.T) {
	t.Parallel()
	dir, base := newRepo(t, map[string]string{"a.txt": "a\n"})
	src := open(t, dir, local.WithWriteMode(source.ModeBranch), local.WithBranchPrefix("proposals/"))
	ctx := t.Context()
	req := &source.UpdateRequest{
		Message:        "Change a\n\nSigned-off-by: A <a@example.com>\n",
		IdempotencyKey: "order-1",
		Fingerprint:    "fp-1",
		Apply:          write(map[string]string{"a.txt": "A\n"}),
	}
	first, err := src.Update(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	git(t, dir, "fsck", "--strict", "--no-dangling")
	if got := git(t, dir, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/proposals/"); got != first.Branch+" "+first.Commit {
		t.Fatalf("git for-each-ref = %q, want %s at %s", got, first.Branch, first.Commit)
	}
	if got := git(t, dir, "log", "-1", "--format=%(trailers:only,unfold)", first.Branch); got != "Signed-off-by: A <a@example.com>\nCup-Idempotency-Key: order-1\nCup-Request: fp-1" {
		t.Fatalf("trailers git reads = %q", got)
	}
	if got := git(t, dir, "rev-parse", "main"); got != base {
		t.Fatalf("main moved to %s", got)
	}

	// With everything packed, the change set and the key are found still.
	git(t, dir, "gc", "--prune=now", "--quiet")
	git(t, dir, "pack-refs", "--all")
	again, err := src.Update(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.Commit != first.Commit || again.Branch != first.Branch {
		t.Fatalf("repeat = %+v, want a replay of %+v", again, first)
	}
	next, err := src.Update(ctx, &source.UpdateRequest{ChangeSet: first.Branch, Message: "more\n", Apply: write(map[string]string{"b.txt": "b\n"})})
	if err != nil {
		t.Fatal(err)
	}
	if got := git(t, dir, "rev-parse", first.Branch); got != next.Commit || next.Base != first.Commit {
		t.Fatalf("%s = %s, want %s over %s", first.Branch, got, next.Commit, first.Commit)
	}
	git(t, dir, "fsck", "--strict", "--no-dangling")
}

func TestNonBareRepository(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	git(t, dir, "init", "--quiet", "--initial-branch=main")
	for name, data := range map[string]string{"README.md": "readme\n", "config/app.yaml": "replicas: 1\n", "link": ""} {
		if name == "link" {
			if err := os.Symlink("config/app.yaml", filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", ".")
	git(t, dir, "commit", "--quiet", "-m", "initial")
	// An uncommitted change in the working tree, which must stay as it is.
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("local edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}

	// Writing directly to main, checked out, would move it under the work
	// tree: the source refuses to serve it at all.
	_, err = open(t, dir).View(t.Context(), "")
	if !errors.Is(err, source.ErrNotWritable) || !strings.Contains(err.Error(), "branch main is checked out in the work tree "+dir) ||
		!strings.Contains(err.Error(), "bare clone") || !strings.Contains(err.Error(), "--branch") {
		t.Fatalf("View of a work tree with its branch served in direct mode = %v, want ErrNotWritable saying what to do", err)
	}
	// Another branch it may write; main it still does not.
	git(t, dir, "branch", "served", "main")
	src := open(t, dir, local.WithBranch("served"))
	if _, err := src.Update(t.Context(), &source.UpdateRequest{Revision: "main", Message: "scale\n", Apply: write(map[string]string{"config/app.yaml": "replicas: 2\n"})}); !errors.Is(err, source.ErrNotWritable) {
		t.Fatalf("Update of main, checked out = %v, want ErrNotWritable", err)
	}
	snap, err := src.View(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, snap.FS, "README.md"); got != "readme\n" {
		t.Fatalf("README.md from the commit = %q, want the committed content", got)
	}
	if got := readFile(t, snap.FS, "link"); got != "replicas: 1\n" {
		t.Fatalf("reading through the symbolic link = %q", got)
	}
	if err := fstest.TestFS(snap.FS, "README.md", "config/app.yaml", "link"); err != nil {
		t.Fatal(err)
	}
	res, err := src.Update(t.Context(), &source.UpdateRequest{Message: "scale\n", Apply: write(map[string]string{"config/app.yaml": "replicas: 2\n"})})
	if err != nil {
		t.Fatal(err)
	}
	if got := git(t, dir, "rev-parse", "served"); got != res.Commit {
		t.Fatalf("served = %s, want %s", got, res.Commit)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "README.md")); string(b) != "local edit\n" {
		t.Fatalf("working tree README.md = %q: the working tree was touched", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "config", "app.yaml")); string(b) != "replicas: 1\n" {
		t.Fatalf("working tree config/app.yaml = %q: the working tree was touched", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".git", "index")); !bytes.Equal(b, index) {
		t.Fatal("the index changed")
	}
	if log := git(t, dir, "reflog", "-n", "1", "--format=%gs", "served"); log != "commit: scale" {
		t.Fatalf("reflog = %q", log)
	}
	git(t, dir, "fsck", "--strict", "--no-dangling")

	// A linked worktree shares the repository, and its checked-out branch
	// is as much in use: served directly, it is refused; in branch mode,
	// writes go to new branches.
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, dir, "worktree", "add", "--quiet", "-b", "feature", wt, "served")
	if _, err := open(t, wt).View(t.Context(), ""); !errors.Is(err, source.ErrNotWritable) || !strings.Contains(err.Error(), "branch feature is checked out in the work tree "+wt) {
		t.Fatalf("View of a linked work tree in direct mode = %v, want ErrNotWritable", err)
	}
	if _, err := src.Update(t.Context(), &source.UpdateRequest{Revision: "feature", Message: "f\n", Apply: write(map[string]string{"feature.txt": "f\n"})}); !errors.Is(err, source.ErrNotWritable) {
		t.Fatalf("Update of feature, checked out in a linked work tree = %v, want ErrNotWritable", err)
	}
	wsrc := open(t, wt, local.WithWriteMode(source.ModeBranch))
	snap, err = wsrc.View(t.Context(), "")
	if err != nil || snap.Commit != res.Commit {
		t.Fatalf("View in the worktree = %v, %v; want %s", snap, err, res.Commit)
	}
	res2, err := wsrc.Update(t.Context(), &source.UpdateRequest{Message: "feature\n", Apply: write(map[string]string{"feature.txt": "f\n"})})
	if err != nil || !strings.HasPrefix(res2.Branch, "cup/") {
		t.Fatalf("Update in the worktree = %+v, %v; want a commit on a new branch", res2, err)
	}
	if got := git(t, dir, "rev-parse", "feature"); got != res.Commit {
		t.Fatalf("feature = %s, want it where it was, %s", got, res.Commit)
	}
}
