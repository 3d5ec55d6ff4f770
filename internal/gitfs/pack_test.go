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

// TestWritePackFiles writes a pack with its index into a repository,
// compressed and stored, with tree deltas: the index is byte for byte the
// one git index-pack makes from the pack, the pack's name is its checksum,
// and git reads every object and finds the repository sound.
func TestWritePackFiles(t *testing.T) {
	t.Parallel()
	for _, stored := range []bool{false, true} {
		t.Run(fmt.Sprintf("stored=%v", stored), func(t *testing.T) {
			t.Parallel()
			st := newMemStore()
			files := map[string]file{}
			for i := range 1500 {
				// Small files, stored whatever the option, and some
				// of 4 KiB or more, compressed but with it.
				n := 40
				if i%100 == 50 {
					n = 2000
				}
				files[fmt.Sprintf("dir/f%05d.json", i)] = file{data: strings.Repeat(fmt.Sprint(i), n)}
			}
			tree := buildTree(t, st, files)
			ids := []plumbing.Hash{tree}
			for i := range 5 {
				next, err := st.BuildTree(t.Context(), tree, []gitfs.Change{{
					Path: fmt.Sprintf("dir/f%05d.json", i*7), Op: source.OpUpdate, Mode: filemode.Regular, Data: []byte(fmt.Sprint("changed ", i)),
				}})
				if err != nil {
					t.Fatal(err)
				}
				sub, err := st.FS(next).ObjectID("dir")
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, next, sub)
				tree = next
			}
			for i := range 1500 {
				id, err := st.FS(tree).ObjectID(fmt.Sprintf("dir/f%05d.json", i))
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			dir := t.TempDir()
			gitCmd(t, dir, "init", "-q", "--bare", ".")
			packDir := filepath.Join(dir, "objects", "pack")
			opts := []gitfs.PackOption{gitfs.WithTreeDeltas()}
			if stored {
				opts = append(opts, gitfs.WithoutCompression())
			}
			if err := st.WritePackFiles(packDir, ids, opts...); err != nil {
				t.Fatal(err)
			}
			names, err := filepath.Glob(filepath.Join(packDir, "*"))
			if err != nil {
				t.Fatal(err)
			}
			if len(names) != 2 || !strings.HasSuffix(names[0], ".idx") || !strings.HasSuffix(names[1], ".pack") {
				t.Fatalf("pack directory holds %v, want one .idx and one .pack and nothing else", names)
			}
			pack := names[1]
			data, err := os.ReadFile(pack)
			if err != nil {
				t.Fatal(err)
			}
			blobBytes := 0
			for _, f := range files {
				blobBytes += len(f.data)
			}
			if stored != (len(data) > blobBytes) {
				t.Errorf("pack of %d bytes of blobs (stored: %v) is %d bytes", blobBytes, stored, len(data))
			}
			if want := "pack-" + fmt.Sprintf("%x", data[len(data)-20:]) + ".pack"; filepath.Base(pack) != want {
				t.Errorf("pack is named %s, want %s (its checksum)", filepath.Base(pack), want)
			}
			ours, err := os.ReadFile(names[0])
			if err != nil {
				t.Fatal(err)
			}
			theirs := filepath.Join(t.TempDir(), "git.idx")
			gitCmd(t, dir, "index-pack", "-o", theirs, pack)
			want, err := os.ReadFile(theirs)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ours, want) {
				t.Errorf("index differs from git index-pack's: %d bytes against %d", len(ours), len(want))
			}
			gitCmd(t, dir, "verify-pack", pack)
			for _, id := range ids[:3] {
				if got := strings.TrimSpace(gitCmd(t, dir, "--git-dir", dir, "rev-parse", "--verify", "--quiet", id.String()+"^{object}")); got != id.String() {
					t.Fatalf("object %s missing", id)
				}
			}
			if got := gitCmd(t, dir, "--git-dir", dir, "cat-file", "-p", ids[len(ids)-1].String()); got != strings.Repeat("1499", 40) {
				t.Errorf("blob reads %q", got)
			}
		})
	}
}

// TestLooseWriterStoresSmallObjects: a loose object under 4 KiB is written
// uncompressed (its file holds its content as it is), one larger is
// compressed, and git reads both.
func TestLooseWriterStoresSmallObjects(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q", "--bare", ".")
	w := gitfs.NewLooseWriter(filepath.Join(dir, "objects"))
	for _, tc := range []struct {
		content string
		stored  bool
	}{
		{strings.Repeat("small resource ", 30), true},   // 450 bytes
		{strings.Repeat("large resource ", 400), false}, // 6,000 bytes
	} {
		h, err := w.WriteObject(plumbing.BlobObject, []byte(tc.content))
		if err != nil {
			t.Fatal(err)
		}
		file, err := os.ReadFile(filepath.Join(dir, "objects", h.String()[:2], h.String()[2:]))
		if err != nil {
			t.Fatal(err)
		}
		if stored := bytes.Contains(file, []byte(tc.content)); stored != tc.stored {
			t.Errorf("a blob of %d bytes: stored %v, want %v (a file of %d bytes)", len(tc.content), stored, tc.stored, len(file))
		}
		if got := gitCmd(t, dir, "cat-file", "-p", h.String()); got != tc.content {
			t.Errorf("git reads %d bytes, want %d", len(got), len(tc.content))
		}
	}
}
