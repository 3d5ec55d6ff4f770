package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/benchrepo"
	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/gittest"
	"github.com/cup-dev/cup/scm/github/githubtest"
	"github.com/cup-dev/cup/server"
)

// benchServer serves a generated repository of n resources of about 500
// bytes in one namespace, over loopback, and returns the items' REST URL.
// With src "remote", cupd serves a clone of the repository, which a
// smart-HTTP server on 127.0.0.1 serves, and writes are pushed to it; with
// "proposal", each write is also a pull request on a fake GitHub.
func benchServer(b *testing.B, n int, src string) string {
	return benchServerLayout(b, n, src, benchrepo.Flat)
}

func benchServerLayout(b *testing.B, n int, src string, layout benchrepo.Layout) string {
	b.Helper()
	dir := b.TempDir()
	if _, err := benchrepo.Generate(dir, n, layout); err != nil {
		b.Fatal(err)
	}
	opts := benchOptions(dir)
	if src != "local" {
		opts.Repository = gittest.NewServer(b, gittest.WithRoot(dir)).URL("repo.git")
	}
	if src == "proposal" {
		fake := githubtest.NewFake(b, "acme", "config")
		fake.LinkRepository(filepath.Join(dir, "repo.git"))
		opts.SCM = app.SCM{Provider: "github", URL: fake.URL(), Repository: "acme/config"}
	}
	a, err := app.Open(b.Context(), opts)
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

// benchOptions serve the repository and configuration benchrepo.Generate
// wrote into dir, logging nothing.
func benchOptions(dir string) app.Options {
	return app.Options{
		Repository: filepath.Join(dir, "repo.git"), ConfigDir: filepath.Join(dir, "config"),
		Logger: slog.New(slog.DiscardHandler),
	}
}

// openBench opens the application over what benchrepo.Generate wrote into
// dir.
func openBench(b *testing.B, dir string) *app.App {
	a, err := app.Open(b.Context(), benchOptions(dir))
	if err != nil {
		b.Fatal(err)
	}
	return a
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
// a put that commits, at 1,000 and 10,000 resources, over a local
// repository, over a clone of a remote one (where the put pushes), and
// with proposals (where the put pushes a branch and opens a pull request
// on a fake GitHub). make
// load measures the cupd binary the same way, with percentiles and
// resident memory.
func BenchmarkREST(b *testing.B) {
	for _, src := range []string{"local", "remote", "proposal"} {
		for _, n := range []int{1000, 10000} {
			url := benchServer(b, n, src)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
			call(b, client, "GET", url, "", 200) // the first listing of the commit
			b.Run(fmt.Sprintf("source=%s/get/resources=%d", src, n), func(b *testing.B) {
				b.SetParallelism(4) // 8 clients on 2 cores
				b.RunParallel(func(pb *testing.PB) {
					for i := 0; pb.Next(); i++ {
						call(b, client, "GET", url+"/"+benchrepo.Name(i%n), "", 200)
					}
				})
			})
			b.Run(fmt.Sprintf("source=%s/list/resources=%d", src, n), func(b *testing.B) {
				for b.Loop() {
					call(b, client, "GET", url, "", 200)
				}
			})
			b.Run(fmt.Sprintf("source=%s/put/resources=%d", src, n), func(b *testing.B) {
				i := 0
				for b.Loop() {
					i++
					call(b, client, "PUT", url+"/"+benchrepo.Name(i*7919%n),
						fmt.Sprintf(`{"spec": {"owner": "write %d", "replicas": 1}}`, i), 202)
				}
			})
		}
	}
}

// BenchmarkProposalPut measures a write in proposal mode (push a branch,
// open a pull request on a fake GitHub) at 1,000 and 10,000 resources, in
// one directory (flat) and spread over 256 directories with the template
// function shard (sharded). Most of the time is the Git server's own
// (git receive-pack, which checks the trees it receives: a 430 KB tree for
// a flat directory of 10,000 files).
func BenchmarkProposalPut(b *testing.B) {
	for _, layout := range []benchrepo.Layout{benchrepo.Flat, benchrepo.Sharded} {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("layout=%s/resources=%d", layout, n), func(b *testing.B) {
				url := benchServerLayout(b, n, "proposal", layout)
				client := &http.Client{}
				i := 0
				for b.Loop() {
					i++
					call(b, client, "PUT", url+"/"+benchrepo.Name(i*7919%n),
						fmt.Sprintf(`{"spec": {"owner": "write %d", "replicas": 1}}`, i), 202)
				}
			})
		}
	}
}

// BenchmarkCloneToReady measures how long cupd takes from start to serving
// a remote repository of 10,000 resources: clone (into memory, or into an
// empty cache directory), load the configuration, and the first listing
// of the namespace.
func BenchmarkCloneToReady(b *testing.B) {
	const n = 10000
	dir := b.TempDir()
	if _, err := benchrepo.Generate(dir, n, benchrepo.Flat); err != nil {
		b.Fatal(err)
	}
	url := gittest.NewServer(b, gittest.WithRoot(dir)).URL("repo.git")
	client := &http.Client{}
	for _, storage := range []string{"memory", "cachedir"} {
		b.Run("storage="+storage, func(b *testing.B) {
			for b.Loop() {
				opts := app.Options{Repository: url, ConfigDir: filepath.Join(dir, "config"), Logger: slog.New(slog.DiscardHandler)}
				if storage == "cachedir" {
					b.StopTimer()
					opts.Remote.CacheDir = b.TempDir()
					b.StartTimer()
				}
				a, err := app.Open(b.Context(), opts)
				if err != nil {
					b.Fatal(err)
				}
				ts := httptest.NewServer(a.Handler())
				call(b, client, "GET", ts.URL+benchrepo.Path, "", 200)
				ts.Close()
				_ = a.Close()
			}
		})
	}
}

// BenchmarkGetAuthenticated measures what authentication and authorization
// add to a get: the same parallel gets of one resource with no policy, and
// with a policy and a static bearer token.
func BenchmarkGetAuthenticated(b *testing.B) {
	for _, policy := range []bool{false, true} {
		b.Run(fmt.Sprintf("policy=%v", policy), func(b *testing.B) {
			dir := b.TempDir()
			if _, err := benchrepo.Generate(dir, 1000, benchrepo.Flat); err != nil {
				b.Fatal(err)
			}
			opts := app.Options{
				Repository: filepath.Join(dir, "repo.git"), ConfigDir: filepath.Join(dir, "config"),
				Logger: slog.New(slog.DiscardHandler),
			}
			const token = "bench-token-0123456789abcdef0123456789abcdef"
			if policy {
				sum := sha256.Sum256([]byte(token))
				tokens := filepath.Join(dir, "tokens.yaml")
				rules := filepath.Join(dir, "policy.yaml")
				if err := os.WriteFile(tokens, []byte("tokens:\n- sha256: "+hex.EncodeToString(sum[:])+"\n  user: reader\n  groups: [readers]\n"), 0o600); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(rules, []byte(`apiVersion: cup.dev/v1alpha1
kind: Role
metadata: {name: reader, namespace: default}
rules: [{apiGroups: [bench.cup.dev], resources: [items], verbs: [get, list]}]
---
apiVersion: cup.dev/v1alpha1
kind: RoleBinding
metadata: {name: readers, namespace: default}
subjects: [{kind: Group, name: readers}]
roleRef: {kind: Role, name: reader}
`), 0o600); err != nil {
					b.Fatal(err)
				}
				opts.Auth = app.Auth{PolicyPath: rules, TokensFile: tokens}
			}
			a, err := app.Open(b.Context(), opts)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = a.Close() })
			ts := httptest.NewUnstartedServer(nil)
			ts.Config = server.NewHTTPServer("", a.Handler())
			ts.Start()
			b.Cleanup(ts.Close)
			url := ts.URL + benchrepo.Path + "/item-000042"
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
			b.SetParallelism(4) // 8 clients on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest("GET", url, nil)
					req.Header.Set("Authorization", "Bearer "+token)
					res, err := c.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusOK {
						b.Fatalf("GET: %d", res.StatusCode)
					}
				}
			})
		})
	}
}

// BenchmarkPutForms measures one PUT that commits, in the REST form and in
// Connect's JSON form, with its allocations: how many times a write is
// encoded and decoded on its way from the caller's body to the commit and
// back shows in them.
func BenchmarkPutForms(b *testing.B) {
	const n = 1000
	url := benchServer(b, n, "local")
	base := strings.TrimSuffix(url, benchrepo.Path)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	i := 0 // across runs too: every put changes the resource
	b.Run("form=rest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			i++
			call(b, client, "PUT", url+"/"+benchrepo.Name(i*7919%n),
				fmt.Sprintf(`{"spec": {"owner": "rest %d", "replicas": 1}}`, i), 202)
		}
	})
	b.Run("form=connect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			i++
			body := fmt.Sprintf(`{"group": "bench.cup.dev", "version": "v1", "plural": "items", "namespace": "default", "name": %q,`+
				` "resource": {"spec": {"owner": "connect %d", "replicas": 1}}}`, benchrepo.Name(i*7919%n), i)
			req, err := http.NewRequest("POST", base+"/cup.v1alpha1.ResourceService/Put", strings.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			res, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			out, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				b.Fatalf("connect put: %d %s", res.StatusCode, out)
			}
		}
	})
}

// BenchmarkPatch measures a REST PATCH that commits, beside a PUT of the
// same change, at 1,000 resources over a local repository: what reading
// and patching the resource inside the write adds.
func BenchmarkPatch(b *testing.B) {
	const n = 1000
	url := benchServer(b, n, "local")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	i := 0 // across runs too: every write changes the resource
	for _, bc := range []struct{ name, method, contentType, body string }{
		{"put", "PUT", "application/json", `{"spec": {"owner": "put %d", "replicas": 1}}`},
		{"patch=merge", "PATCH", "application/merge-patch+json", `{"spec": {"owner": "merge %d"}}`},
		{"patch=json", "PATCH", "application/json-patch+json", `[{"op": "replace", "path": "/spec/owner", "value": "json %d"}]`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				i++
				req, err := http.NewRequest(bc.method, url+"/"+benchrepo.Name(i*7919%n), strings.NewReader(fmt.Sprintf(bc.body, i)))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Content-Type", bc.contentType)
				res, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				out, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusAccepted {
					b.Fatalf("%s: %d %s", bc.name, res.StatusCode, out)
				}
			}
		})
	}
}

// BenchmarkColdRead measures the first reads of a local repository of
// 10,000 resources in one directory, its objects packed by cupd (as its
// groups of writes and its packing of loose objects leave them), packed by
// git (git repack -a -d -F: as git gc leaves them) or loose (as git commit
// and cupd's lone writes leave them): the
// first list of the namespace on a new server, which has read nothing yet,
// and the first get of a name, on a server that has read the trees (one
// get before) but not that name's file. "get-warm" is a get of a name read
// before, for the cost of the request itself.
func BenchmarkColdRead(b *testing.B) {
	const n = 10000
	for _, objects := range []string{"packed", "git", "loose"} {
		dir := b.TempDir()
		if _, err := benchrepo.Generate(dir, n, benchrepo.Flat); err != nil {
			b.Fatal(err)
		}
		if objects == "git" {
			if out, err := exec.Command("git", "-C", filepath.Join(dir, "repo.git"), "repack", "-a", "-d", "-F", "-q").CombinedOutput(); err != nil {
				b.Fatalf("git repack: %v\n%s", err, out)
			}
		}
		if objects == "loose" {
			if err := errors.Join(gitrepo.Unpack(filepath.Join(dir, "repo.git")), gitrepo.KeepLoose(filepath.Join(dir, "repo.git"))); err != nil {
				b.Fatal(err)
			}
		}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		serve := func() (url string, stop func()) {
			a := openBench(b, dir)
			ts := httptest.NewServer(a.Handler())
			return ts.URL + benchrepo.Path, func() { ts.Close(); _ = a.Close() }
		}
		b.Run("objects="+objects+"/list", func(b *testing.B) {
			durs := make([]time.Duration, 0, 64)
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				url, stop := serve()
				b.StartTimer()
				start, cpu0 := time.Now(), benchrepo.CPUTime()
				call(b, client, "GET", url, "", 200)
				durs = append(durs, time.Since(start))
				cpu += benchrepo.CPUTime() - cpu0
				b.StopTimer()
				stop()
				b.StartTimer()
			}
			benchrepo.ReportPercentiles(b, durs)
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(durs)), "cpu-ms/op")
		})
		for _, warm := range []bool{false, true} {
			name := "get"
			if warm {
				name = "get-warm"
			}
			b.Run("objects="+objects+"/"+name, func(b *testing.B) {
				url, stop := serve()
				call(b, client, "GET", url+"/"+benchrepo.Name(0), "", 200) // reads the trees
				durs := make([]time.Duration, 0, 1024)
				var cpu time.Duration
				i := 0
				for b.Loop() {
					if !warm {
						if i++; i == n {
							b.StopTimer()
							stop()
							url, stop = serve()
							call(b, client, "GET", url+"/"+benchrepo.Name(0), "", 200)
							i = 1
							b.StartTimer()
						}
					}
					start, cpu0 := time.Now(), benchrepo.CPUTime()
					call(b, client, "GET", url+"/"+benchrepo.Name(i), "", 200)
					durs = append(durs, time.Since(start))
					cpu += benchrepo.CPUTime() - cpu0
				}
				stop()
				benchrepo.ReportPercentiles(b, durs)
				b.ReportMetric(float64(cpu.Microseconds())/float64(len(durs)), "cpu-µs/op")
			})
		}
	}
}
