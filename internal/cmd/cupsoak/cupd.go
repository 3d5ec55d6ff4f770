package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cup-dev/cup/internal/cupdproc"
)

// cupd is the cupd subprocess, with its pprof endpoints.
type cupd struct {
	*cupdproc.Process
	debugURL string       // http://127.0.0.1:PORT, serving /debug/pprof/
	hc       *http.Client // for the debug endpoints: no connection stays open
}

// startCupd starts replica i of cupd on the remote at repoURL and waits
// until it is ready. Each replica has a cache directory and a log of its
// own: cache and cupd.log when there is one, cache-<i> and cupd-<i>.log
// when there are several.
func startCupd(ctx context.Context, o *options, i int, bin, dir, repoURL, configDir string) (*cupd, error) {
	debugAddr, err := cupdproc.FreeAddress()
	if err != nil {
		return nil, err
	}
	cache, log := "cache", "cupd.log"
	if o.replicas > 1 {
		cache, log = fmt.Sprintf("cache-%d", i), fmt.Sprintf("cupd-%d.log", i)
	}
	p, err := cupdproc.Start(ctx, bin, filepath.Join(dir, log), "serve",
		"--repository", repoURL,
		"--config", configDir,
		"--write-mode", "direct",
		"--cache-dir", filepath.Join(dir, cache),
		"--address", "127.0.0.1:0",
		"--debug-address", debugAddr,
		"--fetch-interval", o.fetchInterval.String(),
		"--watch-poll-interval", o.watchPoll.String(),
		"--cache-bytes", strconv.FormatInt(o.cacheBytes, 10),
		"--log-format", "json",
		"--log-level", o.logLevel,
	)
	if err != nil {
		return nil, err
	}
	return &cupd{
		Process:  p,
		debugURL: "http://" + debugAddr,
		hc:       &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
	}, nil
}

// figures are cupd's goroutines and memory at one moment.
type figures struct {
	goroutines int
	heapInuse  int64 // bytes, after a forced GC
	rss        string
}

func (f figures) String() string {
	return fmt.Sprintf("%d goroutines, heap in use %.1f MiB (after GC), RSS %s", f.goroutines, float64(f.heapInuse)/(1<<20), f.rss)
}

// measure reads cupd's goroutine count and, after a forced GC, its heap in
// use from its pprof endpoints.
func (d *cupd) measure(ctx context.Context) (figures, error) {
	var f figures
	g, err := d.debug(ctx, "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return f, err
	}
	if f.goroutines, err = parseGoroutines(g); err != nil {
		return f, err
	}
	h, err := d.debug(ctx, "/debug/pprof/heap?debug=1&gc=1")
	if err != nil {
		return f, err
	}
	if f.heapInuse, err = parseHeapInuse(h); err != nil {
		return f, err
	}
	f.rss = rss(d.Pid())
	return f, nil
}

func (d *cupd) debug(ctx context.Context, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.debugURL+path, nil)
	if err != nil {
		return "", err
	}
	res, err := d.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return "", err
	}
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", path, res.Status)
	}
	return string(b), nil
}

// settled is what settle found.
type settled struct {
	figures  figures
	waited   time.Duration
	failures []string
}

// settle measures cupd every second until its goroutines are within the
// margin of base and its heap within the factor, or o.settle has passed.
func (d *cupd) settle(ctx context.Context, base figures, o *options) (settled, error) {
	t0 := time.Now()
	maxG := base.goroutines + o.goroutineSlack
	maxHeap := int64(float64(base.heapInuse) * o.heapFactor)
	for {
		time.Sleep(time.Second)
		f, err := d.measure(ctx)
		if err != nil {
			return settled{}, err
		}
		var failures []string
		if f.goroutines > maxG {
			failures = append(failures, fmt.Sprintf("%d goroutines %v after the load, baseline %d + margin %d = %d; see %s/debug/pprof/goroutine?debug=1",
				f.goroutines, time.Since(t0).Round(time.Second), base.goroutines, o.goroutineSlack, maxG, d.debugURL))
		}
		if f.heapInuse > maxHeap {
			failures = append(failures, fmt.Sprintf("heap in use %.1f MiB %v after the load, more than %.1f × the baseline %.1f MiB = %.1f MiB",
				float64(f.heapInuse)/(1<<20), time.Since(t0).Round(time.Second), o.heapFactor, float64(base.heapInuse)/(1<<20), float64(maxHeap)/(1<<20)))
		}
		if len(failures) == 0 || time.Since(t0) >= o.settle {
			return settled{figures: f, waited: time.Since(t0), failures: failures}, nil
		}
	}
}

// parseGoroutines reads the total of a goroutine profile in its debug=1
// form: "goroutine profile: total 12".
func parseGoroutines(profile string) (int, error) {
	line, _, _ := strings.Cut(profile, "\n")
	v, ok := strings.CutPrefix(line, "goroutine profile: total ")
	if !ok {
		return 0, fmt.Errorf("goroutine profile starts %.60q, not with its total", line)
	}
	return strconv.Atoi(strings.TrimSpace(v))
}

// parseHeapInuse reads "# HeapInuse = N" of a heap profile in its debug=1
// form.
func parseHeapInuse(profile string) (int64, error) {
	for line := range strings.Lines(profile) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "# HeapInuse = "); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("heap profile without a HeapInuse line")
}

// rss is the resident memory of process pid, as /proc says.
func rss(pid int) string {
	m, err := cupdproc.ReadMemory(pid)
	if err != nil {
		return "unknown"
	}
	return fmt.Sprintf("%d kB", m.RSS>>10)
}
