package gitfs_test

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/gitrepo"
)

// similarFiles are n files alike enough for git repack to store most as
// deltas.
func similarFiles(n int) map[string][]byte {
	files := map[string][]byte{}
	note := strings.Repeat("a note that repeats ", 20)
	for i := range n {
		files[fmt.Sprintf("items/item-%03d.json", i)] = fmt.Appendf(nil, "{\n  \"name\": \"item-%03d\",\n  \"note\": %q,\n  \"value\": %d\n}\n", i, note, i*7)
	}
	files["big.bin"] = bytes.Repeat([]byte("0123456789abcdef"), 1<<13) // over 64 KiB: a delta copy of size 0x10000
	return files
}

// allObjects returns every object of the repository at dir as go-git reads
// it.
func allObjects(t *testing.T, dir string) map[plumbing.Hash]plumbing.EncodedObject {
	t.Helper()
	st := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	t.Cleanup(func() { st.Close() })
	iter, err := st.IterEncodedObjects(plumbing.AnyObject)
	if err != nil {
		t.Fatal(err)
	}
	out := map[plumbing.Hash]plumbing.EncodedObject{}
	if err := iter.ForEach(func(o plumbing.EncodedObject) error {
		out[o.Hash()] = o
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestObjectDirReadsWhatGoGitReads(t *testing.T) {
	t.Parallel()
	for _, layout := range []string{"packed", "deltas", "loose", "mixed"} {
		t.Run(layout, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if _, err := gitrepo.Init(dir, "main", similarFiles(120), "initial\n"); err != nil {
				t.Fatal(err)
			}
			change := func(i int) {
				if _, err := gitrepo.Commit(dir, "main", map[string][]byte{
					fmt.Sprintf("items/item-%03d.json", i): fmt.Appendf(nil, "{\"name\": \"item-%03d\", \"changed\": true}\n", i),
				}, "change\n"); err != nil {
					t.Fatal(err)
				}
			}
			switch layout {
			case "loose":
				if err := gitrepo.Unpack(dir); err != nil {
					t.Fatal(err)
				}
			case "deltas":
				change(1)
				gitCmd(t, dir, "repack", "-a", "-d", "-f", "--window=50", "--depth=50", "-q")
				if out := gitCmd(t, dir, "verify-pack", "-v", packIdx(t, dir)); !strings.Contains(out, "chain length = 2") {
					t.Fatalf("git made no delta chains:\n%s", out)
				}
			case "mixed":
				change(1) // loose objects beside the pack
				change(2)
			}
			want := allObjects(t, dir)
			od := gitfs.NewObjectDir(filepath.Join(dir, "objects"))
			defer od.Close()
			for h, o := range want {
				typ, data, err := od.Read(h)
				if err != nil {
					t.Fatalf("%s: %v", h, err)
				}
				r, err := o.Reader()
				if err != nil {
					t.Fatal(err)
				}
				var wantData bytes.Buffer
				_, _ = wantData.ReadFrom(r)
				r.Close()
				if typ != o.Type() || !bytes.Equal(data, wantData.Bytes()) {
					t.Fatalf("%s: read a %s of %d bytes, want a %s of %d", h, typ, len(data), o.Type(), wantData.Len())
				}
				if gitfs.HashObject(typ, data) != h {
					t.Fatalf("%s: content hashes to %s", h, gitfs.HashObject(typ, data))
				}
			}
			if _, _, err := od.Read(plumbing.NewHash("0123456789012345678901234567890123456789")); !errors.Is(err, plumbing.ErrObjectNotFound) {
				t.Errorf("missing object: %v, want ErrObjectNotFound", err)
			}
		})
	}
}

// packIdx returns the path of the repository's only pack index.
func packIdx(t *testing.T, dir string) string {
	t.Helper()
	idx, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.idx"))
	if len(idx) != 1 {
		t.Fatalf("%d pack indexes", len(idx))
	}
	return idx[0]
}

func TestObjectDirCorruptLooseObject(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := gitrepo.Init(dir, "main", map[string][]byte{"a": []byte("a\n")}, "initial\n"); err != nil {
		t.Fatal(err)
	}
	if err := gitrepo.Unpack(dir); err != nil {
		t.Fatal(err)
	}
	blob := gitfs.HashObject(plumbing.BlobObject, []byte("a\n"))
	hex := blob.String()
	path := filepath.Join(dir, "objects", hex[:2], hex[2:])
	deflate := func(s string) []byte {
		var b bytes.Buffer
		zw := zlib.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.Bytes()
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"not zlib", []byte("this is not zlib")},
		{"empty", nil},
		{"truncated", deflate("blob 2\x00a\n")[:6]},
		{"no header", deflate("blob")},
		{"bad type", deflate("bolb 2\x00a\n")},
		{"bad size", deflate("blob x\x00a\n")},
		{"negative size", deflate("blob -1\x00a\n")},
		{"short", deflate("blob 5\x00a\n")},
		{"long", deflate("blob 1\x00a\n")},
		{"huge size", deflate("blob 99999999999\x00a\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.Chmod(path, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.data, 0o444); err != nil {
				t.Fatal(err)
			}
			od := gitfs.NewObjectDir(filepath.Join(dir, "objects"))
			defer od.Close()
			_, _, err := od.Read(blob)
			if !errors.Is(err, gitfs.ErrCorrupt) || !strings.Contains(err.Error(), hex[2:]) {
				t.Fatalf("err = %v, want ErrCorrupt naming the file", err)
			}
			// The store reports it too, rather than looking elsewhere.
			st := gitfs.NewStore(filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault()), gitfs.WithObjectDir(od))
			if _, err := st.ReadObject(plumbing.BlobObject, blob); !errors.Is(err, gitfs.ErrCorrupt) {
				t.Fatalf("store: err = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestObjectDirCorruptPack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := similarFiles(30)
	if _, err := gitrepo.Init(dir, "main", files, "initial\n"); err != nil {
		t.Fatal(err)
	}
	want := allObjects(t, dir)
	packs, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
	data, err := os.ReadFile(packs[0])
	if err != nil {
		t.Fatal(err)
	}
	// Every byte of the entries flipped in turn, in steps: each read gives
	// the object or an error, and never panics.
	for at := 12; at < len(data)-20; at += 97 {
		bad := bytes.Clone(data)
		bad[at] ^= 0x5a
		if err := os.Chmod(packs[0], 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(packs[0], bad, 0o444); err != nil {
			t.Fatal(err)
		}
		od := gitfs.NewObjectDir(filepath.Join(dir, "objects"))
		corrupt := 0
		for h := range want {
			typ, data, err := od.Read(h)
			switch {
			case errors.Is(err, gitfs.ErrCorrupt):
				corrupt++
			case err != nil:
				t.Fatalf("flipped byte %d: %s: %v, want ErrCorrupt", at, h, err)
			case gitfs.HashObject(typ, data) != h:
				corrupt++ // inflated to other bytes with a matching checksum: caught by no reader but fsck
			}
		}
		od.Close()
		if corrupt == 0 {
			t.Errorf("flipped byte %d: nothing reported corrupt", at)
		}
	}
}

func TestObjectDirFindsRepackedObjects(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := gitrepo.Init(dir, "main", similarFiles(10), "initial\n"); err != nil {
		t.Fatal(err)
	}
	od := gitfs.NewObjectDir(filepath.Join(dir, "objects"))
	defer od.Close()
	h, err := gitrepo.Commit(dir, "main", map[string][]byte{"new": []byte("new\n")}, "loose\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := od.Read(plumbing.NewHash(h)); err != nil {
		t.Fatal(err)
	}
	// git gc: every object into a new pack, the old pack and the loose
	// objects deleted.
	gitCmd(t, dir, "repack", "-a", "-d", "-q")
	gitCmd(t, dir, "prune-packed")
	for o := range allObjects(t, dir) {
		if _, _, err := od.Read(o); err != nil {
			t.Fatalf("after repack: %s: %v", o, err)
		}
	}
}

func TestObjectDirReadsConcurrentlyWhileRepacked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := gitrepo.Init(dir, "main", similarFiles(40), "initial\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := gitrepo.Commit(dir, "main", map[string][]byte{"new": []byte("new\n")}, "loose\n"); err != nil {
		t.Fatal(err)
	}
	want := allObjects(t, dir)
	od := gitfs.NewObjectDir(filepath.Join(dir, "objects"))
	defer od.Close()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				for h := range want {
					if typ, data, err := od.Read(h); err != nil || gitfs.HashObject(typ, data) != h {
						// git deletes a loose object after packing it and
						// the old pack after writing the new one; a read
						// between may miss, never read wrong bytes.
						if err == nil || !errors.Is(err, plumbing.ErrObjectNotFound) {
							t.Errorf("%s: %v", h, err)
							return
						}
					}
				}
			}
		})
	}
	gitCmd(t, dir, "repack", "-a", "-d", "-f", "-q")
	gitCmd(t, dir, "prune-packed")
	gitCmd(t, dir, "repack", "-a", "-d", "-f", "--depth=10", "-q")
	close(done)
	wg.Wait()
	for h := range want {
		if _, _, err := od.Read(h); err != nil {
			t.Fatalf("after repacks: %s: %v", h, err)
		}
	}
}
