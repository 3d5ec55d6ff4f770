package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cupd is the cupd subprocess.
type cupd struct {
	cmd      *exec.Cmd
	url      string // http://127.0.0.1:PORT
	debugURL string // http://127.0.0.1:PORT, serving /debug/pprof/
	logPath  string
	log      *os.File
	hc       *http.Client // for the debug endpoints: no connection stays open
	done     chan struct{}
	waitErr  error // set when done is closed
}

// startCupd starts cupd on the remote at repoURL and waits until it is
// ready.
func startCupd(ctx context.Context, o *options, bin, dir, repoURL, configDir string) (*cupd, error) {
	debugAddr, err := freeAddress()
	if err != nil {
		return nil, err
	}
	d := &cupd{
		logPath:  filepath.Join(dir, "cupd.log"),
		debugURL: "http://" + debugAddr,
		hc:       &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
		done:     make(chan struct{}),
	}
	if d.log, err = os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, err
	}
	args := []string{"serve",
		"--repository", repoURL,
		"--config", configDir,
		"--write-mode", "direct",
		"--cache-dir", filepath.Join(dir, "cache"),
		"--address", "127.0.0.1:0",
		"--debug-address", debugAddr,
		"--fetch-interval", o.fetchInterval.String(),
		"--cache-bytes", strconv.FormatInt(o.cacheBytes, 10),
		"--log-format", "json",
		"--log-level", o.logLevel,
	}
	// Not exec.CommandContext: cupd is stopped with SIGTERM and its exit
	// checked, and killed only when it does not stop.
	d.cmd = exec.Command(bin, args...)
	// The soak's flags are all there is: no CUPD_ variable of the caller's.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CUPD_") {
			d.cmd.Env = append(d.cmd.Env, kv)
		}
	}
	d.cmd.Env = append(d.cmd.Env, "GORACE=halt_on_error=0")
	d.cmd.Stderr = d.log
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { d.waitErr = d.cmd.Wait(); close(d.done) }()

	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if i := strings.LastIndex(line, " at http://"); i >= 0 && len(urls) == 0 && strings.HasPrefix(line, "cupd is serving") {
				urls <- strings.TrimPrefix(line[i:], " at ")
			}
			_, _ = fmt.Fprintf(d.log, "stdout: %s\n", line)
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	wait := time.NewTimer(time.Minute)
	defer wait.Stop()
	select {
	case d.url = <-urls:
	case <-d.done:
		return nil, fmt.Errorf("cupd exited before serving (%v); its log: %s", d.waitErr, d.tail(20))
	case <-wait.C:
		d.kill()
		return nil, fmt.Errorf("cupd printed no address within a minute; its log: %s", d.tail(20))
	case <-ctx.Done():
		d.kill()
		return nil, context.Cause(ctx)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		res, err := d.hc.Get(d.url + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return d, nil
			}
			err = fmt.Errorf("%s: %s", res.Status, strings.TrimSpace(string(body)))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			d.kill()
			return nil, fmt.Errorf("cupd not ready: /readyz: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill stops cupd at once, if it still runs.
func (d *cupd) kill() {
	select {
	case <-d.done:
	default:
		_ = d.cmd.Process.Kill()
		<-d.done
	}
	_ = d.log.Close()
}

// stop asks cupd to stop with SIGTERM and waits up to grace for it, and
// returns what went wrong: not stopping, a non-zero exit, a data race
// report, a panic.
func (d *cupd) stop(grace time.Duration) []string {
	var failures []string
	t0 := time.Now()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		if d.waitErr != nil {
			failures = append(failures, fmt.Sprintf("cupd exited with %v after SIGTERM (want status 0)", d.waitErr))
		}
	case <-time.After(grace):
		failures = append(failures, fmt.Sprintf("cupd did not stop within %v of SIGTERM; killed it", grace))
		d.kill()
	}
	_ = d.log.Sync()
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return append(failures, err.Error())
	}
	log := string(b)
	if n := strings.Count(log, "WARNING: DATA RACE"); n > 0 {
		failures = append(failures, fmt.Sprintf("the race detector reported %d data races; see %s", n, d.logPath))
	}
	for _, s := range []string{"panic: ", "fatal error: "} {
		if i := strings.Index(log, s); i >= 0 {
			failures = append(failures, fmt.Sprintf("cupd's log has %q: %.300s", s, log[i:]))
		}
	}
	if len(failures) == 0 {
		return nil
	}
	return append(failures, fmt.Sprintf("(stopping took %v)", time.Since(t0).Round(time.Millisecond)))
}

// tail returns the last n lines of cupd's log.
func (d *cupd) tail(n int) string {
	b, _ := os.ReadFile(d.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// logSummary counts cupd's log lines by level and message, and quotes the
// first of each kind of warning and error.
func (d *cupd) logSummary() []string {
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return []string{err.Error()}
	}
	type kind struct{ level, msg string }
	counts := map[kind]int{}
	first := map[kind]string{}
	other := 0
	for line := range strings.Lines(string(b)) {
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Level == "" {
			other++
			continue
		}
		k := kind{rec.Level, rec.Msg}
		if counts[k] == 0 {
			first[k] = strings.TrimSpace(line)
		}
		counts[k]++
	}
	keys := make([]kind, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b kind) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a.level, b.level), cmp.Compare(a.msg, b.msg))
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %q ×%d", k.level, k.msg, counts[k]))
	}
	notes := []string{fmt.Sprintf("cupd's log (%s): %s; %d other lines", d.logPath, strings.Join(parts, ", "), other)}
	for _, k := range keys {
		if k.level == "WARN" || k.level == "ERROR" {
			notes = append(notes, fmt.Sprintf("first %s %q: %.600s", k.level, k.msg, first[k]))
		}
	}
	return notes
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
	f.rss = rss(d.cmd.Process.Pid)
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
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return "unknown"
}
