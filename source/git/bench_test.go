package git_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/gittest"
	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/git"
)

// BenchmarkUpdate changes one file among 1,000 and 10,000 of a remote
// served over smart HTTP, pushing each commit, with the files in one
// directory (flat) or spread over directories of 100 (sharded). The
// source's own work grows only with the directories along the changed
// path; so does the remote's (git receive-pack checks the new trees),
// which is why a flat directory of 10,000 files costs more on both sides.
//
// remote-ms/op is the time spent waiting for the remote's answers, and
// source-ms/op the rest: the source's own cost.
func BenchmarkUpdate(b *testing.B) {
	var rt timedTransport
	client.InstallProtocol("http", githttp.NewClient(&http.Client{Transport: &rt}))
	b.Cleanup(func() { client.InstallProtocol("http", githttp.DefaultClient) })
	for _, layout := range []string{"flat", "sharded"} {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("layout=%s/files=%d", layout, n), func(b *testing.B) {
				benchUpdate(b, &rt, layout, n)
			})
		}
	}
}

// timedTransport adds up the time HTTP requests take, bodies included.
type timedTransport struct{ nanos atomic.Int64 }

func (t *timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	res, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		t.nanos.Add(int64(time.Since(start)))
		return nil, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	t.nanos.Add(int64(time.Since(start)))
	return res, err
}

func benchUpdate(b *testing.B, rt *timedTransport, layout string, n int) {
	srv := gittest.NewServer(b)
	files := gitrepo.Generate("dir", n)
	if layout == "sharded" {
		sharded := make(map[string][]byte, n)
		for i := range n {
			name := fmt.Sprintf("dir/file-%05d.yaml", i)
			sharded[fmt.Sprintf("dir/%03d/file-%05d.yaml", i%(n/100), i)] = files[name]
		}
		files = sharded
	}
	target := "dir/file-00500.yaml"
	if layout == "sharded" {
		target = fmt.Sprintf("dir/%03d/file-00500.yaml", 500%(n/100))
	}
	if _, err := gitrepo.Init(srv.Path("r.git"), "main", files, "initial\n"); err != nil {
		b.Fatal(err)
	}
	src, err := git.Open(srv.URL("r.git"), git.WithFetchInterval(-1))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { src.Close() })
	if err := src.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	i := 0
	rt.nanos.Store(0)
	start := time.Now()
	apply := func(_ context.Context, _ *source.Snapshot, w source.Writer) error {
		return w.WriteFile(target, fmt.Appendf(nil, "name: file-00500\nvalue: %d\n", i), 0o644)
	}
	for b.Loop() {
		i++
		res, err := src.Update(b.Context(), &source.UpdateRequest{Message: "bench\n", Apply: apply})
		if err != nil || res.Unchanged {
			b.Fatal(res, err)
		}
	}
	total, remote := time.Since(start), time.Duration(rt.nanos.Load())
	b.ReportMetric(float64(remote.Microseconds())/1000/float64(b.N), "remote-ms/op")
	b.ReportMetric(float64((total-remote).Microseconds())/1000/float64(b.N), "source-ms/op")
}
