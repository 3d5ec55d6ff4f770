package gitfs_test

import (
	"compress/zlib"
	"crypto/sha1"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/pjbgf/sha1cd"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/gitrepo"
)

// treeContent returns the content of a tree object of n entries named like
// the files of a generated directory.
func treeContent(n int) []byte {
	var b []byte
	for i := range n {
		b = fmt.Appendf(b, "100644 file-%05d.yaml\x00", i)
		h := sha1.Sum([]byte(fmt.Sprint(i)))
		b = append(b, h[:]...)
	}
	return b
}

// BenchmarkWriteTreeObject measures writing one large tree object, as an
// update in a large directory does: through go-git's storer (zlib's default
// level) and through LooseWriter at several compression levels. Both hash
// with sha1cd.
func BenchmarkWriteTreeObject(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		content := treeContent(n)
		writers := []struct {
			name string
			new  func(dir string) *gitfs.Store
		}{
			{"go-git", func(dir string) *gitfs.Store {
				return gitfs.NewStore(filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault()))
			}},
			{"loose-default", func(dir string) *gitfs.Store {
				return looseStore(dir, zlib.DefaultCompression)
			}},
			{"loose-bestspeed", func(dir string) *gitfs.Store {
				return looseStore(dir, zlib.BestSpeed)
			}},
			{"loose-huffmanonly", func(dir string) *gitfs.Store {
				return looseStore(dir, zlib.HuffmanOnly)
			}},
			{"loose-nocompression", func(dir string) *gitfs.Store {
				return looseStore(dir, zlib.NoCompression)
			}},
		}
		for _, w := range writers {
			b.Run(fmt.Sprintf("entries=%d/%s", n, w.name), func(b *testing.B) {
				dir := b.TempDir()
				if _, err := gitrepo.Init(dir, "main", nil, "empty"); err != nil {
					b.Fatal(err)
				}
				st := w.new(dir)
				buf := append([]byte(nil), content...)
				b.SetBytes(int64(len(buf)))
				i := 0
				for b.Loop() {
					// A new object each time, as each update writes one.
					i++
					buf[len(buf)-1-i%20] ^= byte(i)
					buf[len(buf)/2] ^= byte(i >> 8)
					if _, err := st.WriteObject(plumbing.TreeObject, buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func looseStore(dir string, level int) *gitfs.Store {
	return gitfs.NewStore(filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault()),
		gitfs.WithObjectWriter(gitfs.NewLooseWriter(filepath.Join(dir, "objects"), gitfs.WithCompression(level))))
}

// BenchmarkHashTreeObject compares SHA-1 with and without collision
// detection on a tree object of 10,000 entries.
func BenchmarkHashTreeObject(b *testing.B) {
	content := treeContent(10000)
	b.Run("crypto/sha1", func(b *testing.B) {
		b.SetBytes(int64(len(content)))
		for b.Loop() {
			h := sha1.New()
			h.Write(content)
			h.Sum(nil)
		}
	})
	b.Run("sha1cd", func(b *testing.B) {
		b.SetBytes(int64(len(content)))
		for b.Loop() {
			h := sha1cd.New()
			h.Write(content)
			h.Sum(nil)
		}
	})
	b.Run("HashObject", func(b *testing.B) {
		b.SetBytes(int64(len(content)))
		for b.Loop() {
			gitfs.HashObject(plumbing.TreeObject, content)
		}
	})
}

// BenchmarkReadFile measures reading one file of a 10,000-file directory
// from a packed repository, with the trees already decoded.
func BenchmarkReadFile(b *testing.B) {
	_, st, commit := diskRepo(b, gitrepo.Generate("dir", 10000))
	_, tree, err := st.Peel(commit)
	if err != nil {
		b.Fatal(err)
	}
	fsys := st.FS(tree)
	if _, err := fsys.ReadFile("dir/file-05000.yaml"); err != nil {
		b.Fatal(err)
	}
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			if _, err := fsys.ReadFile("dir/file-05000.yaml"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := fsys.ReadFile("dir/file-05000.yaml"); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// BenchmarkRefsResolve measures resolving HEAD to a commit through the
// symbolic reference and the branch, each revalidated with a stat.
// ("fresh" reads both files as well, as happens during the 100 ms after a
// file changed: each iteration backdates the files by 50 ms.)
func BenchmarkRefsResolve(b *testing.B) {
	dir := b.TempDir()
	if _, err := gitrepo.Init(dir, "main", map[string][]byte{"f": []byte("f")}, "init"); err != nil {
		b.Fatal(err)
	}
	refs := gitfs.NewRefs(dir, dir)
	setTimes := func(t time.Time) {
		for _, p := range []string{"HEAD", "refs/heads/main"} {
			if err := os.Chtimes(filepath.Join(dir, p), t, t); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("stable", func(b *testing.B) {
		setTimes(time.Now().Add(-time.Hour))
		for b.Loop() {
			if _, _, err := refs.Resolve("HEAD"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fresh", func(b *testing.B) {
		setTimes(time.Now())
		n := 0
		for b.Loop() {
			if n++; n%1000 == 0 {
				b.StopTimer()
				setTimes(time.Now())
				b.StartTimer()
			}
			if _, _, err := refs.Resolve("HEAD"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
