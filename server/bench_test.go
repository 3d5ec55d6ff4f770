package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/server"
)

const benchConfig = `apiVersion: cup.dev/v1alpha1
kind: ResourceDefinition
metadata: {name: items.bench.cup.dev}
spec:
  group: bench.cup.dev
  names: {kind: Item, singular: item, plural: items}
  versions:
    v1:
      schema:
        type: object
        properties:
          owner: {type: string}
          replicas: {type: integer, minimum: 0}
---
apiVersion: cup.dev/v1alpha1
kind: Controller
metadata: {name: items}
spec:
  type: template
  spec:
    list_template: "items/{{ .Namespace }}/*.json"
    resource_template: "items/{{ .Namespace }}/{{ .Name }}.json"
---
apiVersion: cup.dev/v1alpha1
kind: APIBinding
metadata: {name: items}
spec: {controller: items, resources: [bench.cup.dev/v1/items]}
`

// benchServer serves a generated repository of n resources of about 500
// bytes in one namespace, over loopback.
func benchServer(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	files := make(map[string][]byte, n)
	note := strings.Repeat("n", 300)
	for i := range n {
		files[fmt.Sprintf("items/default/item-%06d.json", i)] = fmt.Appendf(nil,
			`{"apiVersion": "bench.cup.dev/v1", "kind": "Item", "metadata": {"namespace": "default", "name": "item-%06d", "labels": {"shard": "s%d"}}, "spec": {"owner": "%s", "replicas": %d}}`,
			i, i%16, note, i%5)
	}
	repo := filepath.Join(dir, "repo.git")
	if _, err := gitrepo.Init(repo, "main", files, "generated"); err != nil {
		b.Fatal(err)
	}
	cfg := filepath.Join(dir, "config")
	if err := os.Mkdir(cfg, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "items.yaml"), []byte(benchConfig), 0o644); err != nil {
		b.Fatal(err)
	}
	a, err := app.Open(b.Context(), app.Options{Repository: repo, ConfigDir: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Close() })
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = server.NewHTTPServer("", a.Handler())
	ts.Start()
	b.Cleanup(ts.Close)
	return ts.URL + "/apis/bench.cup.dev/v1/namespaces/default/items"
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
					call(b, client, "GET", fmt.Sprintf("%s/item-%06d", url, i%n), "", 200)
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
				call(b, client, "PUT", fmt.Sprintf("%s/item-%06d", url, i*7919%n),
					fmt.Sprintf(`{"spec": {"owner": "write %d", "replicas": 1}}`, i), 202)
			}
		})
	}
}
