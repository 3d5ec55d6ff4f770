// The detailed report of one binary (-detail): the form cupbench had before
// the table of figures.

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cup-dev/cup/internal/benchrepo"
	"github.com/cup-dev/cup/internal/cupdproc"
)

// run reports on cupd at n resources: gets, lists, puts, watches.
func run(cupd string, n int, layout benchrepo.Layout, clients int, getFor time.Duration, lists, writes, watchers int) error {
	dir, err := os.MkdirTemp("", "cupbench-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	repo, cfg := filepath.Join(dir, "repo.git"), filepath.Join(dir, "config")
	start := time.Now()
	raw, err := benchrepo.Generate(dir, n, layout)
	if err != nil {
		return err
	}
	note := strings.Repeat("n", 200)
	fmt.Printf("\n== %d resources (%s layout), %.1f MiB raw (%d bytes each on average); repository generated in %v\n",
		n, layout, float64(raw)/(1<<20), raw/n, time.Since(start).Round(time.Millisecond))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, cupd, "serve", "--repository", repo, "--config", cfg,
		"--address", "127.0.0.1:0", "--log-level", "warn")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	url, err := serverURL(out)
	if err != nil {
		return err
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	base := url + benchrepo.Path
	fmt.Printf("cupd pid %d at %s; RSS at start %s\n", cmd.Process.Pid, url, cupdproc.FormatBytes(rssOf(cmd.Process.Pid)))

	tr := &http.Transport{MaxIdleConnsPerHost: clients * 2, MaxConnsPerHost: clients * 2}
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	// Warm: one list reads every resource of the head commit once.
	if _, err := fetch(hc, "GET", base, nil, 200); err != nil {
		return err
	}

	// Get: concurrent keep-alive clients for a fixed time.
	var mu sync.Mutex
	var lat []time.Duration
	var failures int
	deadline := time.Now().Add(getFor)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 1<<16)
			fails := 0
			for i := c; time.Now().Before(deadline); i += clients {
				t0 := time.Now()
				if _, err := fetch(hc, "GET", base+"/"+benchrepo.Name(i%n), nil, 200); err != nil {
					fails++
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, local...)
			failures += fails
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Printf("get   %d clients: %8.0f req/s  p50 %-9v p99 %-9v (%d requests, %d failed)\n",
		clients, float64(len(lat))/getFor.Seconds(), pct(lat, 50), pct(lat, 99), len(lat), failures)

	// List: the whole namespace, sequentially.
	lat = lat[:0]
	var size int
	for range lists {
		t0 := time.Now()
		b, err := fetch(hc, "GET", base, nil, 200)
		if err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
		size = len(b)
	}
	fmt.Printf("list  all %d:      p50 %-9v p99 %-9v (%.1f MiB per response)\n", n, pct(lat, 50), pct(lat, 99), float64(size)/(1<<20))
	fmt.Printf("cupd RSS after the reads: %s\n", cupdproc.FormatBytes(rssOf(cmd.Process.Pid)))

	// Get, one client: the latency of a single request with nothing queued.
	lat = lat[:0]
	for i := 0; i < 2000; i++ {
		t0 := time.Now()
		if _, err := fetch(hc, "GET", base+"/"+benchrepo.Name(i%n), nil, 200); err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
	}
	fmt.Printf("get   1 client:    p50 %-9v p99 %-9v (%d requests)\n", pct(lat, 50), pct(lat, 99), len(lat))

	// Put: direct commits, each changing one resource, sequentially.
	lat = lat[:0]
	for i := range writes {
		body := benchrepo.Item(i*7919%n, fmt.Sprintf("write %d %s", i, note[:150]))
		t0 := time.Now()
		if _, err := fetch(hc, "PUT", base+"/"+benchrepo.Name(i*7919%n), body, 202); err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
	}
	fmt.Printf("put   at %d:       p50 %-9v p99 %-9v (%d commits)\n", n, pct(lat, 50), pct(lat, 99), writes)

	// The first get of a new commit reads through to the repository.
	t0 := time.Now()
	if _, err := fetch(hc, "GET", base, nil, 200); err != nil {
		return err
	}
	fmt.Printf("list  after a write (cold commit): %v\n", time.Since(t0).Round(time.Microsecond))
	fmt.Printf("cupd RSS after the load: %s (raw resources %.1f MiB)\n", cupdproc.FormatBytes(rssOf(cmd.Process.Pid)), float64(raw)/(1<<20))
	if watchers > 0 {
		return watch(ctx, hc, base, cmd.Process.Pid, watchers, note)
	}
	return nil
}

// watch opens n idle watches of the items over the REST form, each on its
// own connection, and reports cupd's resident memory with them open, then
// how long one write's event takes to reach every one.
func watch(ctx context.Context, hc *http.Client, base string, pid, n int, note string) error {
	before := rssOf(pid)
	wc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: n + 1, MaxIdleConnsPerHost: n + 1}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	arrived := make(chan time.Time, n)
	for range n {
		req, err := http.NewRequestWithContext(ctx, "GET", base+"?watch=true&sendInitialEvents=false", nil)
		if err != nil {
			return err
		}
		res, err := wc.Do(req)
		if err != nil {
			return err
		}
		if res.StatusCode != 200 {
			return fmt.Errorf("watch: %s", res.Status)
		}
		sc := bufio.NewScanner(res.Body)
		if !sc.Scan() { // the BOOKMARK that starts it
			return fmt.Errorf("watch ended: %v", sc.Err())
		}
		go func() {
			defer res.Body.Close()
			for sc.Scan() {
				if strings.Contains(sc.Text(), `"type":"MODIFIED"`) {
					arrived <- time.Now()
				}
			}
		}()
	}
	after := rssOf(pid)
	fmt.Printf("watch %d idle:     cupd RSS %d KiB more (%.1f KiB a watch)\n", n, (after-before)/1024, float64(after-before)/1024/float64(n))
	t0 := time.Now()
	if _, err := fetch(hc, "PUT", base+"/"+benchrepo.Name(0), benchrepo.Item(0, "watched "+note[:100]), 202); err != nil {
		return err
	}
	lat := make([]time.Duration, 0, n)
	timeout := time.After(time.Minute)
	for range n {
		select {
		case at := <-arrived:
			lat = append(lat, at.Sub(t0))
		case <-timeout:
			return fmt.Errorf("%d of %d watches had the event after a minute", len(lat), n)
		}
	}
	fmt.Printf("watch event to all %d: p50 %-9v p99 %-9v (from the put's request)\n", n, pct(lat, 50), pct(lat, 99))
	return nil
}

// rssOf is pid's resident memory in bytes, 0 when unknown.
func rssOf(pid int) int64 {
	m, _ := cupdproc.ReadMemory(pid)
	return m.RSS
}

func serverURL(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if i := strings.Index(sc.Text(), "http://127.0.0.1:"); i >= 0 {
			return strings.Fields(sc.Text()[i:])[0], nil
		}
	}
	return "", errors.New("cupd exited before printing its address")
}

func fetch(hc *http.Client, method, url string, body []byte, want int) ([]byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %d %.200s", method, url, res.StatusCode, b)
	}
	return b, nil
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100].Round(time.Microsecond)
}
