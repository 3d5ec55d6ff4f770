package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/benchrepo"
	"github.com/cup-dev/cup/server"
)

// benchServer serves a generated repository of n resources of about 500
// bytes in one namespace, over loopback, and returns the items' REST URL.
func benchServer(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	if _, err := benchrepo.Generate(dir, n, benchrepo.Flat); err != nil {
		b.Fatal(err)
	}
	a, err := app.Open(b.Context(), app.Options{
		Repository: filepath.Join(dir, "repo.git"), ConfigDir: filepath.Join(dir, "config"),
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Close() })
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = server.NewHTTPServer("", a.Handler())
	ts.Start()
	b.Cleanup(ts.Close)
	return ts.URL + benchrepo.Path
}

func call(b *testing.B, c *http.Client, method, url, body string, want int) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	res, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != want {
		b.Fatalf("%s %s: %d, want %d", method, url, res.StatusCode, want)
	}
}

// BenchmarkREST measures the REST form end to end over loopback: a get of
// one resource from 8 keep-alive clients, a list of the whole namespace, and
// a put that commits, at 1,000 and 10,000 resources. make load measures the
// cupd binary the same way, with percentiles and resident memory.
func BenchmarkREST(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		url := benchServer(b, n)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		call(b, client, "GET", url, "", 200) // the first listing of the commit
		b.Run(fmt.Sprintf("get/resources=%d", n), func(b *testing.B) {
			b.SetParallelism(4) // 8 clients on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					call(b, client, "GET", url+"/"+benchrepo.Name(i%n), "", 200)
				}
			})
		})
		b.Run(fmt.Sprintf("list/resources=%d", n), func(b *testing.B) {
			for b.Loop() {
				call(b, client, "GET", url, "", 200)
			}
		})
		b.Run(fmt.Sprintf("put/resources=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				call(b, client, "PUT", url+"/"+benchrepo.Name(i*7919%n),
					fmt.Sprintf(`{"spec": {"owner": "write %d", "replicas": 1}}`, i), 202)
			}
		})
	}
}
