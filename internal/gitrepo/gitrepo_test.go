package gitrepo_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/cup-dev/cup/internal/gitrepo"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestRepository(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c1, err := gitrepo.Init(dir, "trunk", map[string][]byte{"a.txt": []byte("a\n"), "d/b.txt": []byte("b\n")}, "initial\n")
	if err != nil {
		t.Fatal(err)
	}
	// Init's commit depends only on its arguments.
	again, err := gitrepo.Init(t.TempDir(), "trunk", map[string][]byte{"a.txt": []byte("a\n"), "d/b.txt": []byte("b\n")}, "initial\n")
	if err != nil || again != c1 {
		t.Fatalf("second Init = %s, %v; want %s", again, err, c1)
	}
	if _, err := gitrepo.Init(dir, "trunk", nil, "again"); err == nil {
		t.Fatal("Init over an existing repository succeeded")
	}
	c2, err := gitrepo.Commit(dir, "trunk", map[string][]byte{"d/b.txt": nil, "c.txt": []byte("c\n")}, "second\n")
	if err != nil {
		t.Fatal(err)
	}
	tag, err := gitrepo.Tag(dir, "v1", c1, "release\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gitrepo.Tag(dir, "light", "trunk", ""); err != nil {
		t.Fatal(err)
	}
	if err := gitrepo.Branch(dir, "dev", "v1"); err != nil {
		t.Fatal(err)
	}
	for rev, want := range map[string]string{"trunk": c2, "HEAD": c2, "refs/heads/trunk": c2, "v1": c1, tag: c1, "light": c2, "dev": c1, c1: c1} {
		if got, err := gitrepo.Resolve(dir, rev); err != nil || got != want {
			t.Errorf("Resolve(%q) = %s, %v; want %s", rev, got, err, want)
		}
	}
	if _, err := gitrepo.Resolve(dir, "nope"); err == nil {
		t.Error("Resolve(nope) succeeded")
	}
	log, err := gitrepo.Log(dir, "trunk")
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 || log[0].ID != c2 || log[1].ID != c1 || log[0].Parents[0] != c1 || log[0].Message != "second\n" ||
		log[0].Author.Name != gitrepo.Identity.Name || log[1].Author.When.IsZero() {
		t.Fatalf("Log = %+v", log)
	}
	files, err := gitrepo.Files(dir, "trunk")
	if err != nil || len(files) != 2 || string(files["a.txt"]) != "a\n" || string(files["c.txt"]) != "c\n" {
		t.Fatalf("Files = %q, %v", files, err)
	}

	git(t, dir, "fsck", "--strict", "--no-dangling")
	if got := git(t, dir, "log", "--format=%H %s", "trunk"); got != c2+" second\n"+c1+" initial" {
		t.Fatalf("git log = %q", got)
	}
	if got := git(t, dir, "cat-file", "-t", "v1"); got != "tag" {
		t.Fatalf("v1 is a %s, want an annotated tag", got)
	}
	if got := git(t, dir, "symbolic-ref", "HEAD"); got != "refs/heads/trunk" {
		t.Fatalf("HEAD = %s", got)
	}
}

// TestLargeRepository makes a repository of 10,000 files: one pack, every
// file read back, and git finds it sound. (BenchmarkInit measures it.)
func TestLargeRepository(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := gitrepo.Generate("dir", 10000)
	if _, err := gitrepo.Init(dir, "main", files, "big"); err != nil {
		t.Fatal(err)
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack")); len(entries) != 1 {
		t.Fatalf("packs: %v", entries)
	}
	got, err := gitrepo.Files(dir, "main")
	if err != nil || len(got) != 10000 || string(got["dir/file-01234.yaml"]) != "name: file-01234\nvalue: 1234\n" {
		t.Fatalf("Files: %d files, %v", len(got), err)
	}
	git(t, dir, "fsck", "--strict")
}

// TestUncompressed makes the same repository compressed and not: the same
// commit, a larger pack, the same files, and git finds both sound.
func TestUncompressed(t *testing.T) {
	t.Parallel()
	files := gitrepo.Generate("dir", 200)
	files["big.bin"] = []byte(strings.Repeat("cup ", 1<<18)) // 1 MiB that compresses well
	packSize := func(dir string) int64 {
		t.Helper()
		packs, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
		if len(packs) != 1 {
			t.Fatalf("packs: %v", packs)
		}
		fi, err := os.Stat(packs[0])
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	small, large := t.TempDir(), t.TempDir()
	c1, err := gitrepo.Init(small, "main", files, "m")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := gitrepo.Init(large, "main", files, "m", gitrepo.Uncompressed())
	if err != nil {
		t.Fatal(err)
	}
	if c1 != c2 {
		t.Errorf("commits differ: %s compressed, %s not", c1, c2)
	}
	if s, l := packSize(small), packSize(large); l <= 1<<20 || s >= 1<<16 {
		t.Errorf("pack is %d bytes compressed and %d not; want < 64 KiB and > 1 MiB", s, l)
	}
	got, err := gitrepo.Files(large, "main")
	if err != nil || len(got) != len(files) || string(got["big.bin"]) != string(files["big.bin"]) {
		t.Fatalf("Files: %d files, %v", len(got), err)
	}
	git(t, large, "fsck", "--strict")
	if out := git(t, large, "cat-file", "-s", "main:big.bin"); out != "1048576" {
		t.Errorf("git reads big.bin as %s bytes", out)
	}
}

// BenchmarkInit makes a repository of 10,000 small files, and one of the
// demo's shape (a few files and 8 MB that compresses 3:1) stored.
func BenchmarkInit(b *testing.B) {
	b.Run("files=10000", func(b *testing.B) {
		files := gitrepo.Generate("dir", 10000)
		for b.Loop() {
			if _, err := gitrepo.Init(b.TempDir(), "main", files, "big"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stored=8MB", func(b *testing.B) {
		files := gitrepo.Generate("dir", 20)
		big := make([]byte, 8<<20)
		for i := range big {
			big[i] = byte(i * i >> 7)
		}
		files["module.wasm"] = big
		b.SetBytes(int64(len(big)))
		for b.Loop() {
			if _, err := gitrepo.Init(b.TempDir(), "main", files, "demo", gitrepo.Uncompressed()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func ExampleInit() {
	dir, err := os.MkdirTemp("", "gitrepo-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	commit, err := gitrepo.Init(dir, "main", map[string][]byte{"hello.txt": []byte("hello\n")}, "initial\n")
	if err != nil {
		panic(err)
	}
	files, err := gitrepo.Files(dir, commit)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s %q\n", commit, files["hello.txt"])
	// Output: 8f597cedfd3e7a79ac00338de48da16bc80deb83 "hello\n"
}
