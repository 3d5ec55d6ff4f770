package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/cup-dev/cup/internal/cupdproc"
)

// demoGet is a resource of the demo repository the latency probe gets.
const demoGet = "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/dark-mode"

// attack is one attack and the cupd it needs.
type attack struct {
	name string
	// args are cupd serve flags the attack needs.
	args []string
	// remote serves the demo as a remote repository over smart HTTP
	// instead of cupd's embedded demo.
	remote bool
	run    func(ctx context.Context, e *env)
}

// env is what an attack runs with.
type env struct {
	o       *options
	url     string // cupd's http://127.0.0.1:PORT
	addr    string // cupd's 127.0.0.1:PORT
	files   uint64 // the soft limit on open files
	maxBody int64  // cupd's --max-request-bytes
	tally   tally
}

// n scales a count of full-scale requests, to at least min.
func (e *env) n(full, least int) int { return max(least, int(float64(full)*e.o.scale)) }

// d scales a full-scale duration, to at least min.
func (e *env) d(full, least time.Duration) time.Duration {
	return max(least, time.Duration(float64(full)*e.o.scale))
}

// tally counts requests and their outcomes, in all and by variant.
type tally struct {
	sent      atomic.Int64
	mu        sync.Mutex
	answers   map[string]int
	byVariant map[string]map[string]int
	variants  []string
	notes     []string
}

// add counts one request of variant ("" for none) and its outcome.
func (t *tally) add(variant, outcome string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.answers == nil {
		t.answers, t.byVariant = map[string]int{}, map[string]map[string]int{}
	}
	t.answers[outcome]++
	if variant != "" {
		if t.byVariant[variant] == nil {
			t.byVariant[variant] = map[string]int{}
			t.variants = append(t.variants, variant)
		}
		t.byVariant[variant][outcome]++
	}
}

func (t *tally) note(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

// formatCounts formats outcome counts as "400×12 closed×3", statuses first.
func formatCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		_, errA := strconv.Atoi(a)
		_, errB := strconv.Atoi(b)
		return cmp.Or(cmp.Compare(boolInt(errA != nil), boolInt(errB != nil)), cmp.Compare(a, b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// outcome names the answer to a request: its status code, or what went
// wrong without one.
func outcome(res *http.Response, err error) string {
	if err == nil {
		return strconv.Itoa(res.StatusCode)
	}
	return errorOutcome(err)
}

func errorOutcome(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return "closed"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE), errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no-fd"
	}
	return "error"
}

// latencies are the durations of a probe's requests.
type latencies struct {
	mu     sync.Mutex
	all    []time.Duration
	failed int
}

func (l *latencies) add(d time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, d)
	if !ok {
		l.failed++
	}
}

// String is "p50/p99", with the failures when there were any.
func (l *latencies) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.all) == 0 {
		return "-"
	}
	s := slices.Clone(l.all)
	slices.Sort(s)
	pct := func(p float64) string {
		return roundDuration(s[min(len(s)-1, int(p*float64(len(s))))]).String()
	}
	out := pct(0.50) + "/" + pct(0.99)
	if l.failed > 0 {
		out += fmt.Sprintf(" (%d/%d failed)", l.failed, len(s))
	}
	return out
}

func (l *latencies) succeeded() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.all) - l.failed
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Microsecond)
}

// result is one row of the table.
type result struct {
	name     string
	sent     int64
	answers  map[string]int
	peak     int64 // bytes
	after    int64 // bytes; -1 when cupd was gone
	healthz  *latencies
	get      *latencies
	survived string // "yes" or what happened
	capHit   bool
	died     bool
	took     time.Duration
	timing   string
	notes    []string
}

func (r *result) failed() bool { return r.died || r.capHit }

// runAttack starts a cupd for a, runs a against it with the memory sampler
// and the latency probes running, and collects the row.
func runAttack(ctx context.Context, o *options, a *attack, bin, dir string, files uint64) (*result, error) {
	t0 := time.Now()
	// One WASM cache for every cupd: the controller is compiled once.
	args := []string{"serve", "--address", "127.0.0.1:0", "--log-format", "json", "--wasm-cache-dir", filepath.Join(dir, "wasm-cache")}
	if a.remote {
		repo, closeRemote, err := startRemote(filepath.Join(dir, a.name+"-remote"))
		if err != nil {
			return nil, err
		}
		defer closeRemote()
		args = append(args, "--repository", repo)
	}
	args = append(append(args, a.args...), o.cupdArgs...)
	p, err := cupdproc.Start(ctx, bin, filepath.Join(dir, a.name+".log"), args...)
	if err != nil {
		return nil, err
	}
	defer p.Kill()
	ready := time.Since(t0)
	e := &env{o: o, url: p.URL, addr: strings.TrimPrefix(p.URL, "http://"), files: files, maxBody: maxRequestBytes(args)}
	r := &result{name: a.name, healthz: &latencies{}, get: &latencies{}, after: -1}

	tctx, cancelTimeout := context.WithTimeoutCause(ctx, o.attackTimeout, errTimeout)
	defer cancelTimeout()
	actx, acancel := context.WithCancelCause(tctx)
	defer acancel(nil)

	// The memory sampler: every 25ms, and the cap.
	var peak atomic.Int64
	samplerDone := make(chan struct{})
	stopSampler := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for {
			m, err := cupdproc.ReadMemory(p.Pid())
			if err == nil {
				peak.Store(max(peak.Load(), m.RSS, m.Peak))
				if m.RSS > o.rssCap {
					r.capHit = true
					r.survived = "unbounded: RSS passed " + cupdproc.FormatBytes(o.rssCap) + "; killed"
					acancel(errCap) // before the kill: what fails now is not an answer
					p.Kill()
					return
				}
			}
			select {
			case <-p.Done():
				acancel(errors.New("cupd exited"))
				return
			case <-stopSampler:
				return
			case <-tick.C:
			}
		}
	}()

	// The probes.
	var probes sync.WaitGroup
	stopProbes := make(chan struct{})
	for path, l := range map[string]*latencies{"/healthz": r.healthz, demoGet: r.get} {
		probes.Go(func() { probe(e.url+path, l, stopProbes) })
	}

	t1 := time.Now()
	a.run(actx, e)
	attacked := time.Since(t1)
	close(stopProbes)
	probes.Wait()
	close(stopSampler)
	<-samplerDone
	r.sent, r.answers, r.notes = e.tally.sent.Load(), e.tally.answers, e.tally.notes
	for _, v := range e.tally.variants {
		r.notes = append(r.notes, fmt.Sprintf("%s: %s", v, formatCounts(e.tally.byVariant[v])))
	}
	if errors.Is(context.Cause(actx), errTimeout) {
		r.notes = append(r.notes, fmt.Sprintf("stopped by -attack-timeout %v", o.attackTimeout))
	}

	t1 = time.Now()
	// After: a moment to settle, then cupd's RSS, and whether it answers.
	if !r.capHit {
		if exited, werr := p.Exited(); exited {
			r.died, r.survived = true, fmt.Sprintf("no: cupd exited (%v)", werr)
		} else {
			time.Sleep(e.d(2*time.Second, 500*time.Millisecond))
			if m, err := cupdproc.ReadMemory(p.Pid()); err == nil {
				r.after = m.RSS
				peak.Store(max(peak.Load(), m.Peak))
			}
			if err := healthy(e.url); err != nil {
				r.died, r.survived = true, "no: /healthz after the attack: "+err.Error()
			} else {
				r.survived = "yes"
			}
		}
	}
	r.peak = peak.Load()
	if exited, _ := p.Exited(); !exited {
		for _, f := range p.Stop(10 * time.Second) {
			r.notes = append(r.notes, "stopping cupd: "+f)
		}
	} else if !r.capHit {
		r.notes = append(r.notes, "cupd's log ends: "+lastLine(p.Tail(5)))
	}
	r.took = time.Since(t0)
	r.timing = fmt.Sprintf("cupd ready in %v, attack %v, stop %v", ready.Round(100*time.Millisecond), attacked.Round(100*time.Millisecond), time.Since(t1).Round(100*time.Millisecond))
	return r, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return fmt.Sprintf("%.300s", lines[len(lines)-1])
}

// probe gets url every 100ms on a new connection until stop is closed.
func probe(url string, l *latencies, stop <-chan struct{}) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for {
		t0 := time.Now()
		res, err := hc.Get(url)
		ok := err == nil && res.StatusCode == http.StatusOK
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		l.add(time.Since(t0), ok)
		select {
		case <-stop:
			return
		case <-time.After(max(0, 100*time.Millisecond-time.Since(t0))):
		}
	}
}

// healthy gets /healthz, waiting up to 5 seconds for a 200.
func healthy(url string) error {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := hc.Get(url + "/healthz")
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	if res.StatusCode != http.StatusOK {
		return errors.New(res.Status)
	}
	return nil
}

// maxRequestBytes is the last --max-request-bytes of cupd's args, or its
// default.
func maxRequestBytes(args []string) int64 {
	n := int64(4 << 20)
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "--max-request-bytes=")
		if !ok && a == "--max-request-bytes" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if b, err := strconv.ParseInt(v, 10, 64); ok && err == nil && b > 0 {
			n = b
		}
	}
	return n
}

// printTable prints the results as a table, then each attack's notes.
func printTable(out io.Writer, results []*result) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "attack\tsent\tanswers\tpeak RSS\tRSS after\thealthz p50/p99\tget p50/p99\tsurvived")
	for _, r := range results {
		after := "-"
		if r.after >= 0 {
			after = cupdproc.FormatBytes(r.after)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.name, r.sent, formatCounts(r.answers),
			cupdproc.FormatBytes(r.peak), after, r.healthz, r.get, r.survived)
	}
	_ = tw.Flush()
	for _, r := range results {
		if len(r.notes) == 0 {
			continue
		}
		fmt.Fprintf(out, "\n%s:\n", r.name)
		for _, n := range r.notes {
			fmt.Fprintf(out, "  %s\n", n)
		}
	}
}

// work runs do(i) for i in [0, n) on workers goroutines until ctx is done.
func work(ctx context.Context, n, workers int, do func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, workers) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				do(i)
			}
		})
	}
	wg.Wait()
}

// client returns an HTTP client keeping up to conns connections, each
// request bounded by timeout. It uses no proxy: cupd is on 127.0.0.1.
func client(conns int, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		Proxy: nil, MaxIdleConns: conns, MaxIdleConnsPerHost: conns, DisableCompression: true,
	}}
}

// send makes one request of variant and counts it and its answer.
func (e *env) send(ctx context.Context, hc *http.Client, variant, method, url, contentType string, body []byte) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		e.tally.add(variant, "error")
		return
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	e.tally.sent.Add(1)
	res, err := hc.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	if ctx.Err() != nil && err != nil {
		// Stopped by the cap, cupd's exit or the timeout: not an answer.
		e.tally.add(variant, "cancelled")
		return
	}
	e.tally.add(variant, outcome(res, err))
}
