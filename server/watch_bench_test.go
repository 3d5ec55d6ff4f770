package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/internal/benchrepo"
	"github.com/cup-dev/cup/server"
)

// h2cClient speaks HTTP/2 without TLS, opening more connections as each
// fills its 100 streams.
func h2cClient() *http.Client {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: p, MaxConnsPerHost: 0}}
}

func itemsWatch() *cupv1alpha1.WatchRequest {
	no := false
	return &cupv1alpha1.WatchRequest{Group: "bench.cup.dev", Version: "v1", Plural: "items", Namespace: "default", SendInitialEvents: &no}
}

// BenchmarkWatchLatency measures how long an event takes to reach each of
// 1, 100 and 1,000 watchers over gRPC on loopback, on a local repository
// of 1,000 resources, from the moment the write that makes it is sent
// (so the write's own commit is counted too: an upper bound of the time
// from its commit to delivery): the p50 and p99 of every delivery are
// reported as p50-ms and p99-ms.
func BenchmarkWatchLatency(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("watchers=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			if _, err := benchrepo.Generate(dir, 1000, benchrepo.Flat); err != nil {
				b.Fatal(err)
			}
			a := openBench(b, dir)
			defer a.Close()
			ts := httptest.NewUnstartedServer(nil)
			ts.Config = server.NewHTTPServer("", a.Handler())
			ts.Start()
			defer ts.Close()
			client := cupv1alpha1connect.NewResourceServiceClient(h2cClient(), ts.URL, connect.WithGRPC())
			ctx, cancel := context.WithCancel(b.Context())
			defer cancel()

			var mu sync.Mutex
			arrived := map[string][]time.Time{} // commit → when each watcher had it
			var wg sync.WaitGroup
			for range n {
				stream, err := client.Watch(ctx, connect.NewRequest(itemsWatch()))
				if err != nil {
					b.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for stream.Receive() {
						now := time.Now()
						mu.Lock()
						c := stream.Msg().GetCommit()
						arrived[c] = append(arrived[c], now)
						mu.Unlock()
					}
				}()
			}
			put := func(i int) (string, time.Time) {
				sent := time.Now()
				res, err := client.Put(ctx, connect.NewRequest(&cupv1alpha1.PutRequest{
					Group: "bench.cup.dev", Version: "v1", Plural: "items", Namespace: "default", Name: benchrepo.Name(i % 1000),
					Resource: &cupv1alpha1.Resource{SpecJson: fmt.Sprintf(`{"owner": "w%d", "replicas": 1}`, i)},
				}))
				if err != nil {
					b.Fatal(err)
				}
				return res.Msg.GetResult().GetCommit(), sent
			}
			waitAll := func(commit string) {
				for deadline := time.Now().Add(30 * time.Second); ; {
					mu.Lock()
					got := len(arrived[commit])
					mu.Unlock()
					if got == n {
						return
					}
					if time.Now().After(deadline) {
						b.Fatalf("%d of %d watchers had commit %s after 30 s", got, n, commit)
					}
					time.Sleep(100 * time.Microsecond)
				}
			}
			// Every watcher is live once each has the first write's event.
			first, _ := put(0)
			waitAll(first)
			var lat []time.Duration
			i := 1
			for b.Loop() {
				c, sent := put(i)
				i++
				waitAll(c)
				mu.Lock()
				for _, at := range arrived[c] {
					lat = append(lat, at.Sub(sent))
				}
				delete(arrived, c)
				mu.Unlock()
			}
			cancel()
			wg.Wait()
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			}
		})
	}
}

// BenchmarkWatchResume measures a watch that resumes 10,000 commits back
// (the long history of BenchmarkHistory, on disk, caches cold): the time
// until the event of the head's commit arrives, every change since sent.
func BenchmarkWatchResume(b *testing.B) {
	dir, err := longHistory()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		a := openBench(b, dir)
		ts := httptest.NewUnstartedServer(nil)
		ts.Config = server.NewHTTPServer("", a.Handler())
		ts.Start()
		client := cupv1alpha1connect.NewResourceServiceClient(h2cClient(), ts.URL, connect.WithGRPC())
		head, err := client.List(b.Context(), connect.NewRequest(&cupv1alpha1.ListRequest{
			Group: "bench.cup.dev", Version: "v1", Plural: "items", Namespace: "default", PageSize: 1}))
		if err != nil {
			b.Fatal(err)
		}
		hist, err := client.History(b.Context(), connect.NewRequest(&cupv1alpha1.HistoryRequest{
			Group: "bench.cup.dev", Version: "v1", Plural: "items", Namespace: "default", Name: benchrepo.Name(1), Until: "main~9999", PageSize: 1}))
		if err != nil || len(hist.Msg.GetEntries()) != 1 {
			b.Fatalf("history: %v", err)
		}
		req := itemsWatch()
		req.Revision = hist.Msg.GetEntries()[0].GetCommit()
		ctx, cancel := context.WithCancel(b.Context())
		b.StartTimer()
		stream, err := client.Watch(ctx, connect.NewRequest(req))
		if err != nil {
			b.Fatal(err)
		}
		events := 0
		for stream.Receive() {
			events++
			if stream.Msg().GetCommit() == head.Msg.GetCommit() {
				break
			}
		}
		b.StopTimer()
		if events < 9900 {
			b.Fatalf("%d events before the head's, want 9,999: %v", events, stream.Err())
		}
		cancel()
		_ = stream.Close()
		ts.Close()
		_ = a.Close()
		b.StartTimer()
	}
}
