package gitfs_test

import (
	"compress/zlib"
	"crypto/sha1"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/pjbgf/sha1cd"

	"github.com/cup-dev/cup/internal/benchrepo"
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

// coldRepo makes a bare repository of n resource files of about 520 bytes
// in one directory, as benchrepo's, with its objects laid out as objects
// says: "packed" in one pack without deltas (as gitrepo.Init writes it),
// "deltas" repacked by git with deltas (as git gc leaves a repository), or
// "loose" (as cupd's writes and git commit leave them). It returns the
// repository and the directory's tree.
func coldRepo(b *testing.B, n int, objects string) (dir string, tree plumbing.Hash) {
	b.Helper()
	files := make(map[string][]byte, n)
	note := strings.Repeat("n", 200)
	for i := range n {
		files["items/default/"+benchrepo.Name(i)+".json"] = benchrepo.Item(i, note)
	}
	dir, st, commit := diskRepo(b, files)
	switch objects {
	case "loose":
		if err := gitrepo.Unpack(dir); err != nil {
			b.Fatal(err)
		}
	case "deltas":
		gitCmd(b, dir, "repack", "-a", "-d", "-f", "--window=10", "--depth=50", "-q")
	}
	_, root, err := st.Peel(commit)
	if err != nil {
		b.Fatal(err)
	}
	fsys := st.FS(root)
	tree, err = fsys.ObjectID("items/default")
	if err != nil {
		b.Fatal(err)
	}
	return dir, tree
}

// BenchmarkColdReadAll measures reading every file of a directory of
// 10,000 with nothing cached, as the first listing of a namespace does:
// through go-git's storer (serialised by the store's lock) and through an
// ObjectDir, from one goroutine and from GOMAXPROCS at once. It reports
// the CPU time per file too: on a machine with cores to spare, "parallel"
// takes that divided by the cores.
func BenchmarkColdReadAll(b *testing.B) {
	const n = 10000
	for _, objects := range []string{"packed", "deltas", "loose"} {
		dir, tree := coldRepo(b, n, objects)
		for _, reader := range []string{"go-git", "objectdir"} {
			for _, par := range []bool{false, true} {
				name := fmt.Sprintf("objects=%s/reader=%s/serial", objects, reader)
				if par {
					name = strings.Replace(name, "serial", "parallel", 1)
				}
				b.Run(name, func(b *testing.B) {
					var cpu time.Duration
					for b.Loop() {
						b.StopTimer()
						storage := filesystem.NewStorageWithOptions(gitfs.MapPacks(osfs.New(dir)), cache.NewObjectLRU(cache.MiByte),
							filesystem.Options{MaxOpenDescriptors: 32})
						opts := []gitfs.Option{gitfs.WithBlobCache(0)}
						var od *gitfs.ObjectDir
						if reader == "objectdir" {
							od = gitfs.NewObjectDir(filepath.Join(dir, "objects"))
							opts = append(opts, gitfs.WithObjectDir(od))
						}
						st := gitfs.NewStore(storage, opts...)
						b.StartTimer()
						cpu0 := benchrepo.CPUTime()
						readAll(b, st, tree, par)
						cpu += benchrepo.CPUTime() - cpu0
						b.StopTimer()
						storage.Close()
						if od != nil {
							od.Close()
						}
						b.StartTimer()
					}
					b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/file")
					b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*n), "cpu-µs/file")
				})
			}
		}
	}
}

// readAll reads every file of tree, from GOMAXPROCS goroutines with par.
func readAll(b *testing.B, st *gitfs.Store, tree plumbing.Hash, par bool) {
	fsys := st.FS(tree)
	entries, err := fsys.ReadDir(".")
	if err != nil {
		b.Fatal(err)
	}
	workers := 1
	if par {
		workers = runtime.GOMAXPROCS(0)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(entries) {
					return
				}
				if _, err := fsys.ReadFile(entries[i].Name()); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
