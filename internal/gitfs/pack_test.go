package gitfs_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

// TestWritePackTreeDeltas writes the trees of 60 consecutive changes to a
// directory of 2,000 files, each tree a delta of the one before (chains
// of at most 50), and has real Git index the pack and check every object.
func TestWritePackTreeDeltas(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	files := map[string]file{}
	for i := range 2000 {
		files[fmt.Sprintf("dir/f%05d.json", i)] = file{data: fmt.Sprint(i)}
	}
	tree := buildTree(t, st, files)
	var ids []plumbing.Hash
	for i := range 60 {
		next, err := st.BuildTree(t.Context(), tree, []gitfs.Change{{
			Path: fmt.Sprintf("dir/f%05d.json", i*31), Op: source.OpUpdate, Mode: filemode.Regular, Data: []byte(fmt.Sprint("changed ", i)),
		}})
		if err != nil {
			t.Fatal(err)
		}
		sub, err := st.FS(next).ObjectID("dir")
		if err != nil {
			t.Fatal(err)
		}
		blob, err := st.FS(next).ObjectID(fmt.Sprintf("dir/f%05d.json", i*31))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, next, sub, blob)
		tree = next
	}
	var whole, deltas bytes.Buffer
	if err := st.WritePack(&whole, ids); err != nil {
		t.Fatal(err)
	}
	if err := st.WritePack(&deltas, ids, gitfs.WithTreeDeltas()); err != nil {
		t.Fatal(err)
	}
	if deltas.Len()*20 > whole.Len() {
		t.Errorf("pack with tree deltas is %d bytes, without %d: want at most 1/20", deltas.Len(), whole.Len())
	}
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q", "--bare", ".")
	pack := filepath.Join(dir, "objects", "pack", "pack-test.pack")
	if err := os.WriteFile(pack, deltas.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, dir, "index-pack", pack)
	out := gitCmd(t, dir, "verify-pack", "-v", pack)
	if !strings.Contains(out, "chain length = 1:") || !strings.Contains(out, "chain length = 50:") {
		t.Errorf("verify-pack shows no delta chains of 1 to 50:\n%s", out)
	}
	if strings.Contains(out, "chain length = 51") {
		t.Errorf("a delta chain is longer than 50:\n%s", out)
	}
	for _, id := range ids {
		if got := strings.TrimSpace(gitCmd(t, dir, "--git-dir", dir, "rev-parse", "--verify", "--quiet", id.String()+"^{object}")); got != id.String() {
			t.Fatalf("object %s missing from the indexed pack", id)
		}
	}
}
