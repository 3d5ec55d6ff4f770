package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/benchrepo"
)

// BenchmarkResourceBytes measures what the server holds a resource in: the
// heap after a GC, less the heap of the opened application, divided by the
// resources, after every resource of a namespace of n has been listed and
// read once (B/resource), and what one more commit (a put of one resource,
// then the same reads at the new commit) adds to that (B/resource/commit).
// Run it with -benchtime=1x: each iteration builds its repository. At
// 100,000 in one flat directory, the directory's tree is larger than the
// tree cache's bound, which gitfs.TreeCache keeps for that (before, every
// path looked up decoded it again, and the first listing took more than
// ten minutes).
func BenchmarkResourceBytes(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			var perResource, perCommit float64
			b.StopTimer()
			for range b.N {
				dir := b.TempDir()
				if _, err := benchrepo.Generate(dir, n, benchrepo.Flat); err != nil {
					b.Fatal(err)
				}
				opts := benchOptions(dir)
				opts.RequestTimeout = 10 * time.Minute // a first listing of 100,000 on a busy machine
				a, err := app.Open(b.Context(), opts)
				if err != nil {
					b.Fatal(err)
				}
				h := a.Handler()
				b.StartTimer()
				h0 := liveHeap()
				readAll(b, h, n)
				h1 := liveHeap()
				serveBench(b, h, "PUT", benchrepo.Path+"/"+benchrepo.Name(n/2), `{"spec": {"owner": "one write", "replicas": 1}}`, 202)
				readAll(b, h, n)
				h2 := liveHeap()
				perResource += float64(h1-h0) / float64(n)
				perCommit += float64(h2-h1) / float64(n)
				b.StopTimer()
				_ = a.Close()
			}
			b.ReportMetric(perResource/float64(b.N), "B/resource")
			b.ReportMetric(perCommit/float64(b.N), "B/resource/commit")
		})
	}
}

// liveHeap is the heap in use after a full collection.
func liveHeap() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC() // the first one's finalizers and cleanups ran: collect what they freed
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// readAll lists the n items in pages of 10,000 and reads each one.
func readAll(b *testing.B, h http.Handler, n int) {
	for next := ""; ; {
		body := serveBench(b, h, "GET", benchrepo.Path+"?limit=10000&continue="+next, "", 200)
		_, rest, ok := strings.Cut(body, `"continue":"`)
		if !ok {
			break
		}
		next, _, _ = strings.Cut(rest, `"`)
	}
	for i := range n {
		serveBench(b, h, "GET", benchrepo.Path+"/"+benchrepo.Name(i), "", 200)
	}
}

func serveBench(b *testing.B, h http.Handler, method, target, body string, want int) string {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, strings.NewReader(body)))
	if w.Code != want {
		b.Fatalf("%s %s: %d, want %d: %.300s", method, target, w.Code, want, w.Body)
	}
	return w.Body.String()
}
