package local_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/benchrepo"
	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/local"
)

// benchRepo makes a bare repository with n files in dir/ and a few others.
func benchRepo(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	files := gitrepo.Generate("dir", n)
	files["README.md"] = []byte("bench\n")
	files["other/a.yaml"] = []byte("a: 1\n")
	if _, err := gitrepo.Init(dir, "main", files, "initial\n"); err != nil {
		b.Fatal(err)
	}
	return dir
}

// backdate sets the modification time of the repository's HEAD and branch
// files an hour back, as for a branch last moved a while ago: within 100 ms
// of a change the source reads a reference file again on every resolution
// instead of trusting its cached stat.
func backdate(b *testing.B, dir string) {
	b.Helper()
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{"HEAD", "refs/heads/main"} {
		if err := os.Chtimes(filepath.Join(dir, p), old, old); err != nil {
			b.Fatal(err)
		}
	}
}

func openBench(b *testing.B, dir string) *local.Source {
	b.Helper()
	src, err := local.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { src.Close() })
	return src
}

// BenchmarkUpdate changes one file in a directory of 1,000 and of 10,000
// files: a commit costs the same whatever the size of the repository, and
// grows only with the size of the directories along the changed path.
func BenchmarkUpdate(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			src := openBench(b, benchRepo(b, n))
			ctx := context.Background()
			i := 0
			apply := func(_ context.Context, _ *source.Snapshot, w source.Writer) error {
				return w.WriteFile("dir/file-00500.yaml", fmt.Appendf(nil, "name: file-00500\nvalue: %d\n", i), 0o644)
			}
			durs := make([]time.Duration, 0, 1024)
			for b.Loop() {
				i++
				start := time.Now()
				res, err := src.Update(ctx, &source.UpdateRequest{Message: "bench\n", Apply: apply})
				durs = append(durs, time.Since(start))
				if err != nil || res.Unchanged {
					b.Fatal(res, err)
				}
			}
			benchrepo.ReportPercentiles(b, durs)
		})
	}
}

// BenchmarkView measures resolving revisions to snapshots, and reading a
// file from one, as every API read does.
func BenchmarkView(b *testing.B) {
	dir := benchRepo(b, 10000)
	head, err := gitrepo.Resolve(dir, "main")
	if err != nil {
		b.Fatal(err)
	}
	backdate(b, dir)
	src := openBench(b, dir)
	ctx := context.Background()
	for _, rev := range []string{"", "main", head} {
		name := rev
		if name == "" {
			name = `""`
		} else if name == head {
			name = "commit-id"
		}
		b.Run("rev="+name, func(b *testing.B) {
			for b.Loop() {
				if _, err := src.View(ctx, rev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("rev=main~1", func(b *testing.B) {
		if _, err := gitrepo.Commit(dir, "main", map[string][]byte{"x": []byte("x")}, "x"); err != nil {
			b.Fatal(err)
		}
		backdate(b, dir)
		for b.Loop() {
			if _, err := src.View(ctx, "main~1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("View+ReadFile", func(b *testing.B) {
		backdate(b, dir)
		for b.Loop() {
			snap, err := src.View(ctx, "")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := snap.FS.(interface {
				ReadFile(string) ([]byte, error)
			}).ReadFile("dir/file-05000.yaml"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("View+ReadFile/parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				snap, err := src.View(ctx, "")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := snap.FS.(interface {
					ReadFile(string) ([]byte, error)
				}).ReadFile("dir/file-05000.yaml"); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// BenchmarkFirstRead measures reading a file not read before from a
// directory of 10,000, its tree already read, as the first get of a name
// does: a snapshot, the path looked up and the blob read, from a
// repository whose objects are packed or loose.
func BenchmarkFirstRead(b *testing.B) {
	const n = 10000
	for _, objects := range []string{"packed", "loose"} {
		b.Run("objects="+objects, func(b *testing.B) {
			dir := benchRepo(b, n)
			if objects == "loose" {
				if err := errors.Join(gitrepo.Unpack(dir), gitrepo.KeepLoose(dir)); err != nil {
					b.Fatal(err)
				}
			}
			backdate(b, dir)
			src := openBench(b, dir)
			ctx := context.Background()
			read := func(i int) {
				snap, err := src.View(ctx, "")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := snap.FS.(interface {
					ReadFile(string) ([]byte, error)
				}).ReadFile(fmt.Sprintf("dir/file-%05d.yaml", i)); err != nil {
					b.Fatal(err)
				}
			}
			read(0) // reads the trees
			durs := make([]time.Duration, 0, n)
			var cpu time.Duration
			i := 0
			for b.Loop() {
				if i++; i == n {
					b.StopTimer()
					src.Close()
					src = openBench(b, dir)
					read(0)
					i = 1
					b.StartTimer()
				}
				start, cpu0 := time.Now(), benchrepo.CPUTime()
				read(i)
				durs = append(durs, time.Since(start))
				cpu += benchrepo.CPUTime() - cpu0
			}
			benchrepo.ReportPercentiles(b, durs)
			b.ReportMetric(float64(cpu.Nanoseconds())/1000/float64(len(durs)), "cpu-µs/op")
		})
	}
}
