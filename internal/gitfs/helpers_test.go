package gitfs_test

import (
	"cmp"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/storage/memory"
	"go.uber.org/goleak"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// file is a file to put in a test tree.
type file struct {
	data string
	mode filemode.FileMode // filemode.Regular when zero
}

// buildTree writes a tree holding files into st and returns its id.
func buildTree(t testing.TB, st *gitfs.Store, files map[string]file) plumbing.Hash {
	t.Helper()
	changes := make([]gitfs.Change, 0, len(files))
	for p, f := range files {
		mode := f.mode
		if mode == 0 {
			mode = filemode.Regular
		}
		changes = append(changes, gitfs.Change{Path: p, Op: source.OpCreate, Mode: mode, Data: []byte(f.data)})
	}
	slices.SortFunc(changes, func(a, b gitfs.Change) int { return cmp.Compare(a.Path, b.Path) })
	h, err := st.BuildTree(t.Context(), plumbing.ZeroHash, changes)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func newMemStore() *gitfs.Store {
	return gitfs.NewStore(memory.NewStorage())
}

// regular makes a map of regular files.
func regular(files map[string]string) map[string]file {
	m := make(map[string]file, len(files))
	for p, d := range files {
		m[p] = file{data: d}
	}
	return m
}

// gitCmd runs git in dir, skipping the test when git is not installed.
func gitCmd(t testing.TB, dir string, args ...string) string {
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
	return string(out)
}

func newMemStoreObjects() *memory.Storage { return memory.NewStorage() }
