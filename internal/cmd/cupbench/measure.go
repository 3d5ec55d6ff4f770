package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cup-dev/cup/internal/benchrepo"
	"github.com/cup-dev/cup/internal/cupdproc"
	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/gitrepo"
)

// trivialProcedure is cupd's --bench-trivial procedure
// (app.TrivialProcedure; not imported, to keep cupbench small).
const trivialProcedure = "/cup.bench.v1.TrivialService/Noop"

// measureLists times the first list of the large repository by fresh
// cupd processes, o.lists of them for each of objects packed by cupd's
// writer, packed by git repack and loose,
// each on a copy of its own: cupd packs loose objects once there are more
// than gc.auto. For the loose objects it also times that packing, and the
// first list of a second cupd on the same copy.
func measureLists(ctx context.Context, o *options, b *binary, d *data, t *table) error {
	// firstList starts a cupd on repo, times its first list, and stops it
	// unless keep, after which it is the caller's.
	firstList := func(name, repo, cfg string, keep bool) (time.Duration, int, *cupdproc.Process, error) {
		p, err := startCupd(ctx, o, b, name, repo, cfg)
		if err != nil {
			return 0, 0, nil, err
		}
		hc := client(1)
		defer hc.CloseIdleConnections()
		t0 := time.Now()
		status, body, err := call(ctx, hc, "GET", p.URL+benchrepo.Path, nil)
		lat := time.Since(t0)
		if err == nil && status != 200 {
			err = fmt.Errorf("GET %s: %d %.200s", benchrepo.Path, status, body)
		}
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err == nil {
			err = json.Unmarshal(body, &list)
		}
		if !keep || err != nil {
			if serr := stop(p); err == nil {
				err = serr
			}
			p = nil
		}
		return lat, len(list.Items), p, err
	}
	for _, kind := range []struct{ name, dir string }{{"packed", d.large}, {"git-packed", d.largeGit}, {"loose", d.largeLoose}} {
		var lat, packing, after []time.Duration
		var counts []int
		for r := range o.lists {
			name := fmt.Sprintf("list-%s-%d", kind.name, r)
			dir := filepath.Join(b.dir, name)
			if err := copyRepo(kind.dir, dir); err != nil {
				return err
			}
			repo, cfg := filepath.Join(dir, "repo.git"), filepath.Join(dir, "config")
			// As cupd (and git gc --auto) judge it, with gc.auto unset.
			loose := kind.name == "loose" && gitfs.EstimateLoose(filepath.Join(repo, "objects")) > 6700
			l, n, p, err := firstList(name, repo, cfg, loose)
			if err != nil {
				return err
			}
			lat, counts = append(lat, l), append(counts, n)
			if !loose {
				continue
			}
			took, err := loosePacked(ctx, p)
			if serr := stop(p); err == nil {
				err = serr
			}
			if err != nil {
				return err
			}
			if took > 0 {
				packing = append(packing, took)
			}
			if l, n, _, err = firstList(name+"-after", repo, cfg, false); err != nil {
				return err
			}
			after, counts = append(after, l), append(counts, n)
		}
		note := fmt.Sprintf("%s; %d items", spread(lat), slices.Min(counts))
		t.set("list", fmt.Sprintf("first LIST, fresh cupd, N=%d, %s objects", o.n, kind.name), "ms", "≤ 100 ms", b.col, ms(median(lat)), note)
		if len(after) > 0 {
			what := fmt.Sprintf("packing the %d loose objects as cupd opens the repository", o.n)
			if len(packing) > 0 {
				t.set("list", what, "ms", "-", b.col, ms(median(packing)), spread(packing))
			} else {
				t.none("list", what, "ms", "-", b.col, "this cupd leaves loose objects loose")
			}
			t.set("list", fmt.Sprintf("first LIST, the next fresh cupd, N=%d, loose objects", o.n), "ms", "≤ 100 ms", b.col, ms(median(after)), spread(after))
		}
	}
	t.explain("list", fmt.Sprintf("the first REST list of the namespace by a fresh cupd just ready (/readyz 200), its objects packed by cupd's own writer (as its groups of writes and its packing of loose objects leave them), packed again by git repack -a -d -F (as git gc leaves them), or loose; the median of %d processes for each, each on a copy of its own, with the least and the most in the notes; with more loose objects than git's gc.auto, cupd packs them as it opens the repository, before it is ready (timed by cup_local_pack_loose_seconds), and then a second cupd lists the same copy", o.lists))
	return nil
}

// loosePacked waits until p has packed the loose objects it found at
// start, and returns how long that took by its metrics; 0 at once for a
// cupd that does not pack loose objects.
func loosePacked(ctx context.Context, p *cupdproc.Process) (took time.Duration, err error) {
	deadline := time.Now().Add(time.Minute)
	err = pollMetrics(ctx, p, func(body []byte) (bool, error) {
		// A histogram shows from the start, with a count of 0.
		metric := func(name string) (float64, bool) {
			for line := range strings.SplitSeq(string(body), "\n") {
				if v, ok := strings.CutPrefix(line, name+" "); ok {
					f, err := strconv.ParseFloat(v, 64)
					return f, err == nil
				}
			}
			return 0, false
		}
		n, ok := metric("cup_local_pack_loose_seconds_count")
		switch {
		case !ok:
			return true, nil // a cupd that does not pack loose objects
		case n > 0 && bytes.Contains(body, []byte(`cup_local_loose_packs_total{outcome="error"}`)):
			return true, errors.New("packing the loose objects failed: see the log")
		case n > 0:
			secs, _ := metric("cup_local_pack_loose_seconds_sum")
			took = time.Duration(secs * float64(time.Second))
			return true, nil
		case time.Now().After(deadline):
			return true, errors.New("the loose objects were not packed within a minute")
		}
		return false, nil
	})
	return took, err
}

// pollMetrics reads p's /metrics every 10 ms until done says it found what
// it waits for, or fails.
func pollMetrics(ctx context.Context, p *cupdproc.Process, done func(body []byte) (bool, error)) error {
	hc := client(1)
	defer hc.CloseIdleConnections()
	for {
		status, body, err := call(ctx, hc, "GET", p.URL+"/metrics", nil)
		if err != nil || status != 200 {
			return fmt.Errorf("GET /metrics: %d %v", status, err)
		}
		if ok, err := done(body); ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// measureLoad runs the rows of one cupd on a copy of the large
// repository, in this order: the first gets of a fresh process, read
// throughput against the trivial procedure's, sequential puts, concurrent
// writers, and the resident memory after all that.
func measureLoad(ctx context.Context, o *options, b *binary, d *data, t *table) error {
	dir := filepath.Join(b.dir, "load")
	if err := copyRepo(d.large, dir); err != nil {
		return err
	}
	var extra []string
	trivial := (o.rows["trivial"] || o.rows["get"]) && b.trivial
	if trivial {
		extra = append(extra, "--bench-trivial")
	}
	p, err := startCupd(ctx, o, b, "load", filepath.Join(dir, "repo.git"), filepath.Join(dir, "config"), extra...)
	if err != nil {
		return err
	}
	defer p.Kill()
	hc := client(2 * max(o.clients, o.writers))
	defer hc.CloseIdleConnections()
	base := p.URL + benchrepo.Path
	// The connection, opened before any timing.
	if _, _, err := call(ctx, hc, "GET", p.URL+"/healthz", nil); err != nil {
		return err
	}
	var ran []string

	if o.rows["get"] {
		names := rand.New(rand.NewPCG(1, 2)).Perm(o.n)[:min(o.firstGets, o.n)]
		lat := make([]time.Duration, 0, len(names))
		for _, i := range names {
			t0 := time.Now()
			if err := expect(ctx, hc, "GET", base+"/"+benchrepo.Name(i), nil, 200); err != nil {
				return err
			}
			lat = append(lat, time.Since(t0))
		}
		t.set("get", fmt.Sprintf("first GET of a name p50, fresh cupd, N=%d", o.n), "ms", "≤ 0.15 ms", b.col, ms(pct(lat, 50)), fmt.Sprintf("p99 %.3f ms", ms(pct(lat, 99))))
		// The same names again, and the trivial procedure, one call at a
		// time: what the first read adds, and the round trip's floor.
		again := func(call func(name int) error) ([]time.Duration, error) {
			lat := make([]time.Duration, 0, len(names))
			for _, name := range names {
				t0 := time.Now()
				if err := call(name); err != nil {
					return nil, err
				}
				lat = append(lat, time.Since(t0))
			}
			return lat, nil
		}
		warm, err := again(func(name int) error {
			return expect(ctx, hc, "GET", base+"/"+benchrepo.Name(name), nil, 200)
		})
		if err != nil {
			return err
		}
		t.set("get", fmt.Sprintf("GET of a name read before p50, N=%d", o.n), "ms", "-", b.col, ms(pct(warm, 50)), fmt.Sprintf("p99 %.3f ms", ms(pct(warm, 99))))
		if trivial {
			floor, err := again(func(int) error {
				return expect(ctx, hc, "POST", p.URL+trivialProcedure, []byte("{}"), 200)
			})
			if err != nil {
				return err
			}
			t.set("get", "trivial Connect procedure p50, one client", "ms", "-", b.col, ms(pct(floor, 50)), fmt.Sprintf("p99 %.3f ms", ms(pct(floor, 99))))
		} else {
			t.none("get", "trivial Connect procedure p50, one client", "ms", "-", b.col, "this cupd has no --bench-trivial")
		}
		t.explain("get", fmt.Sprintf("%d distinct names read once each, in random order, by one client on a fresh cupd before any list; measured by the client over keep-alive HTTP/1.1 on loopback, so the figure includes the HTTP round trip; then the same names again, and as many calls of the trivial procedure (see trivial), one at a time: the round trip's floor on this machine", len(lat)))
		ran = append(ran, fmt.Sprintf("%d first gets", len(lat)))
	}

	if o.rows["trivial"] {
		// Every resource read once, as after any list.
		if err := expect(ctx, hc, "GET", base, nil, 200); err != nil {
			return err
		}
		r := drive(ctx, o.clients, o.getFor, o.getMax, func(ctx context.Context, c, i int) string {
			return outcome(call(ctx, hc, "GET", base+"/"+benchrepo.Name((c*7919+i*104729)%o.n), nil))
		}, "200")
		t.set("trivial", "GET throughput, cupd REST", "/s", "-", b.col, r.rate(), r.String())
		r = drive(ctx, o.clients, o.getFor, o.getMax, func(ctx context.Context, c, i int) string {
			return outcome(call(ctx, hc, "POST", p.URL+"/cup.v1alpha1.ResourceService/Get", fmt.Appendf(nil,
				`{"group":"bench.cup.dev","version":"v1","plural":"items","namespace":"default","name":%q}`, benchrepo.Name((c*7919+i*104729)%o.n))))
		}, "200")
		t.set("trivial", "GET throughput, cupd Connect Get", "/s", "-", b.col, r.rate(), r.String())
		t.explain("trivial", fmt.Sprintf("%d keep-alive clients for %v each: GETs of one item of N=%d over REST, then over Connect (JSON POST to ResourceService/Get), then the trivial Connect procedure that cupd --bench-trivial serves in the same process, behind the same http.Server, connection limit and host check but none of the API's handlers and interceptors (JSON POST of {} to %s)", o.clients, o.getFor, o.n, trivialProcedure))
		if trivial {
			body := []byte("{}")
			r := drive(ctx, o.clients, o.getFor, o.getMax, func(ctx context.Context, _, _ int) string {
				return outcome(callType(ctx, hc, "POST", p.URL+trivialProcedure, body, "application/json"))
			}, "200")
			t.set("trivial", "throughput, trivial Connect procedure", "/s", "-", b.col, r.rate(), r.String())
		} else {
			t.none("trivial", "throughput, trivial Connect procedure", "/s", "-", b.col, "this cupd has no --bench-trivial")
		}
		ran = append(ran, fmt.Sprintf("%v of gets by %d clients", o.getFor, o.clients))
	}

	if o.rows["put"] {
		if err := sequentialPuts(ctx, o, hc, base, o.n, b, t); err != nil {
			return err
		}
		ran = append(ran, fmt.Sprintf("%d sequential puts", o.puts))
	}

	if o.rows["writes"] {
		note := strings.Repeat("w", 150)
		r := drive(ctx, o.writers, o.writeFor, o.writeMax, func(ctx context.Context, c, i int) string {
			item := c % o.n
			out := outcome(call(ctx, hc, "PUT", base+"/"+benchrepo.Name(item), benchrepo.Item(item, fmt.Sprintf("writer %d put %d %s", c, i, note))))
			if out == "429" {
				// Refused at --max-concurrent-writes: the writer waits
				// a little, as a client would, rather than spin.
				select {
				case <-ctx.Done():
				case <-time.After(writeBackoff):
				}
			}
			return out
		}, "202")
		what := fmt.Sprintf("%d writers, N=%d", o.writers, o.n)
		t.set("writes", fmt.Sprintf("writes/s, %s", what), "/s", "≥ 400/s", b.col, r.rate(), fmt.Sprintf("%s in %v", summarize(r.counts), r.elapsed.Round(time.Millisecond)))
		t.explain("writes", fmt.Sprintf("%d writers PUT over REST, each its own item, direct commits on a local repository, for %v or %d requests; a writer refused with 429 (cupd's --max-concurrent-writes: 128 by default, 32 in older versions) waits %v before its next put; writes/s counts the 202s, and the p50 and p99 are theirs", o.writers, o.writeFor, o.writeMax, writeBackoff))
		t.set("writes", fmt.Sprintf("write p50, %s", what), "ms", "-", b.col, ms(pct(r.lat, 50)), "")
		t.set("writes", fmt.Sprintf("write p99, %s", what), "ms", "-", b.col, ms(pct(r.lat, 99)), "")
		ran = append(ran, fmt.Sprintf("%d writes by %d writers", r.ok, o.writers))
	}

	if o.rows["rss"] {
		m, err := cupdproc.ReadMemory(p.Pid())
		if err != nil {
			return err
		}
		t.set("rss", fmt.Sprintf("RSS after load, N=%d", o.n), "MiB", "≤ 60 MiB", b.col, float64(m.RSS)/(1<<20),
			fmt.Sprintf("peak %s; anonymous %s, files %s", cupdproc.FormatBytes(m.Peak), cupdproc.FormatBytes(m.Anon), cupdproc.FormatBytes(m.File)))
		t.explain("rss", "VmRSS of the cupd of the load rows after "+strings.Join(ran, ", "))
	}
	return stop(p)
}

// writeBackoff is how long a writer refused with 429 waits.
const writeBackoff = 20 * time.Millisecond

// measureSmallPuts times sequential puts on a copy of the small
// repository.
func measureSmallPuts(ctx context.Context, o *options, b *binary, d *data, t *table) error {
	dir := filepath.Join(b.dir, "small")
	if err := copyRepo(d.small, dir); err != nil {
		return err
	}
	p, err := startCupd(ctx, o, b, "small", filepath.Join(dir, "repo.git"), filepath.Join(dir, "config"))
	if err != nil {
		return err
	}
	defer p.Kill()
	hc := client(2)
	defer hc.CloseIdleConnections()
	if err := sequentialPuts(ctx, o, hc, p.URL+benchrepo.Path, o.small, b, t); err != nil {
		return err
	}
	return stop(p)
}

// sequentialPuts times o.puts puts, one after the other, of n items.
func sequentialPuts(ctx context.Context, o *options, hc *http.Client, base string, n int, b *binary, t *table) error {
	note := strings.Repeat("p", 150)
	lat := make([]time.Duration, 0, o.puts)
	for i := range o.puts {
		item := i * 7919 % n
		t0 := time.Now()
		if err := expect(ctx, hc, "PUT", base+"/"+benchrepo.Name(item), benchrepo.Item(item, fmt.Sprintf("put %d %s", i, note)), 202); err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
	}
	t.set("put", fmt.Sprintf("PUT p50, lone sequential writer, N=%d", n), "ms", "≤ 15 ms", b.col, ms(pct(lat, 50)),
		fmt.Sprintf("p99 %.1f ms", ms(pct(lat, 99))))
	t.explain("put", fmt.Sprintf("%d PUTs over REST one after the other, each a direct commit on a local repository; N=%d on the cupd of the load rows, after their gets", o.puts, o.n))
	return nil
}

// measureStartup times o.starts start-ups of the demo (with its WASM
// controller) with a new compile cache directory, then again with the
// same, now warm, directory.
func measureStartup(ctx context.Context, o *options, b *binary, t *table) error {
	var coldPort, coldReady, warmPort, warmReady []time.Duration
	for r := range o.starts {
		cache := ""
		if b.cacheFlag != "" {
			var err error
			if cache, err = os.MkdirTemp(b.dir, "wasm-cache-"); err != nil {
				return err
			}
		}
		port, ready, err := startOnce(ctx, b, cache, fmt.Sprintf("startup-%d-cold", r), r == 0, t)
		if err != nil {
			return err
		}
		coldPort, coldReady = append(coldPort, port), append(coldReady, ready)
		if cache == "" {
			continue
		}
		if port, ready, err = startOnce(ctx, b, cache, fmt.Sprintf("startup-%d-warm", r), false, t); err != nil {
			return err
		}
		warmPort, warmReady = append(warmPort, port), append(warmReady, ready)
	}
	t.explain("startup", fmt.Sprintf("cupd serve on its embedded demo (with its WASM controller, flagfile): from exec until a TCP connection is accepted and until /readyz answers 200; the median of %d start-ups each with a new compile cache directory, then with the same again (warm), the least and the most in the notes", o.starts))
	if b.cacheFlag == "" {
		t.note(b.label + " has no WASM compile cache flag: its cold start-ups compile in memory, and it has no warm ones")
	}
	t.set("startup", "demo start-up, cold: exec → port accepts", "ms", "-", b.col, ms(median(coldPort)), spread(coldPort))
	t.set("startup", "demo start-up, cold: exec → /readyz 200", "ms", "-", b.col, ms(median(coldReady)), spread(coldReady))
	if len(warmReady) == 0 {
		t.none("startup", "demo start-up, warm: exec → port accepts", "ms", "-", b.col, "no WASM compile cache flag")
		t.none("startup", "demo start-up, warm: exec → /readyz 200", "ms", "-", b.col, "no WASM compile cache flag")
		return nil
	}
	t.set("startup", "demo start-up, warm: exec → port accepts", "ms", "-", b.col, ms(median(warmPort)), spread(warmPort))
	t.set("startup", "demo start-up, warm: exec → /readyz 200", "ms", "-", b.col, ms(median(warmReady)), spread(warmReady))
	return nil
}

// startOnce starts b on its demo, with cache as its WASM compile cache
// when set, and returns the time from exec until its port accepts a
// connection and until /readyz answers 200. With check, it also checks
// that the demo serves its WASM type, Segment.
func startOnce(ctx context.Context, b *binary, cache, name string, check bool, t *table) (port, ready time.Duration, err error) {
	addr, err := cupdproc.FreeAddress()
	if err != nil {
		return 0, 0, err
	}
	args := []string{"serve", "--address", addr, "--log-level", "warn"}
	if cache != "" {
		args = append(args, "--"+b.cacheFlag, cache)
	}
	log, err := os.Create(filepath.Join(b.dir, name+".log"))
	if err != nil {
		return 0, 0, err
	}
	defer log.Close()
	cmd := exec.Command(b.path, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CUPD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = log, log
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	alive := func() error {
		select {
		case <-done:
			return fmt.Errorf("cupd exited during start-up; see %s", log.Name())
		default:
		}
		if time.Since(t0) > 2*time.Minute {
			return fmt.Errorf("cupd not ready within 2 minutes; see %s", log.Name())
		}
		return context.Cause(ctx)
	}
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			port = time.Since(t0)
			_ = c.Close()
			break
		}
		if err := alive(); err != nil {
			return 0, 0, err
		}
		time.Sleep(time.Millisecond)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for {
		if status, _, _ := call(ctx, hc, "GET", "http://"+addr+"/readyz", nil); status == 200 {
			ready = time.Since(t0)
			break
		}
		if err := alive(); err != nil {
			return 0, 0, err
		}
		time.Sleep(5 * time.Millisecond)
	}
	if check {
		if status, body, err := call(ctx, hc, "GET", "http://"+addr+segmentsPath, nil); err != nil || status != 200 {
			t.note(fmt.Sprintf("%s: the demo does not serve its WASM type Segment (%d %v %.100s): start-up did not compile it", b.label, status, err, body))
		}
	}
	return port, ready, nil
}

// measureFlagfile runs requests of each kind against the flagfile
// controller at each size, on a fresh cupd: gets of existing names (each
// a first read), gets of missing names, lists, then puts.
func measureFlagfile(ctx context.Context, o *options, b *binary, d *data, t *table) error {
	for _, n := range o.flagSizes {
		p, err := startFlagfile(ctx, o, b, d, n, t)
		if err != nil {
			return err
		}
		hc := client(2)
		hc.Timeout = o.flagBudget
		base := p.URL + segmentsPath
		names := rand.New(rand.NewPCG(3, 4)).Perm(n)
		kinds := []struct {
			name   string
			before func() error // run before the kind's first request, untimed
			do     func(i int) (int, []byte, error)
		}{
			{"GET existing (first read)", nil, func(i int) (int, []byte, error) {
				return call(ctx, hc, "GET", base+"/"+segmentName(names[i%n]), nil)
			}},
			{"GET existing (first read, once listed)", func() error {
				// The gets before started a listing of the namespace in
				// the background (a cupd whose module's get costs a
				// list): how long it took after them is in the notes.
				listed, err := flagfileListed(ctx, p, o.flagBudget)
				if err == nil {
					t.note(fmt.Sprintf("%s: flagfile N=%d: %s", b.label, n, listed))
				}
				return err
			}, func(i int) (int, []byte, error) {
				return call(ctx, hc, "GET", base+"/"+segmentName(names[(o.flagRequests+i)%n]), nil)
			}},
			{"GET missing (404 expected)", nil, func(i int) (int, []byte, error) {
				return call(ctx, hc, "GET", base+"/"+fmt.Sprintf("missing-%06d", i), nil)
			}},
			{"LIST", nil, func(int) (int, []byte, error) { return call(ctx, hc, "GET", base, nil) }},
			{"GET existing (first read, after a commit to another file)", func() error {
				// A commit behind cupd's back that leaves the segments'
				// file as it was: a cupd that reuses what its module
				// read lists the namespace again at once.
				_, err := gitrepo.Commit(filepath.Join(b.dir, fmt.Sprintf("flagfile-%d", n), "repo.git"), "main", map[string][]byte{"NOTES.md": []byte("Notes, committed by cupbench.\n")}, "cupbench: another file")
				return err
			}, func(i int) (int, []byte, error) {
				return call(ctx, hc, "GET", base+"/"+segmentName(names[(2*o.flagRequests+i)%n]), nil)
			}},
			{"PUT", nil, func(i int) (int, []byte, error) {
				j := names[(n-1-i%n+n)%n]
				return call(ctx, hc, "PUT", base+"/"+segmentName(j), segment(j, fmt.Sprintf("Segment %d, put %d by cupbench.", j, i)))
			}},
		}
		for _, k := range kinds {
			if k.before != nil {
				if err := k.before(); err != nil {
					return err
				}
			}
			var lat []time.Duration
			counts := map[string]int{}
			var first string
			began := time.Now()
			for i := range o.flagRequests {
				if i > 0 && time.Since(began) > o.flagBudget {
					break // the figure is of the requests so far
				}
				t0 := time.Now()
				status, body, err := k.do(i)
				lat = append(lat, time.Since(t0))
				s := outcome(status, body, err)
				counts[s]++
				if first == "" && status != 200 && status != 202 && status != 404 {
					first = fmt.Sprintf("; first %s: %.120s", s, strings.TrimSpace(string(body)))
				}
				if ctx.Err() != nil {
					break
				}
			}
			t.set("flagfile", fmt.Sprintf("flagfile N=%d: %s, p50", n, k.name), "ms", "-", b.col, ms(pct(lat, 50)),
				fmt.Sprintf("%s; the first %.1f ms%s", summarize(counts), ms(lat[0]), first))
		}
		hc.CloseIdleConnections()
		if err := stop(p); err != nil {
			return err
		}
	}
	t.explain("flagfile", fmt.Sprintf("the demo's Segment type served by the example WASM controller (examples/controllers/flagfile) from one file of N segments, on a fresh cupd: %d requests of each kind in this order (fewer when they take more than %v), the p50 of all answers whatever their status, and the statuses and the first answer's time in the notes; the first reads once listed are of other names, after cupd listed the namespace in the background (when its module's get costs a list), and so are those after a commit (made with git, not through cupd) that changed another file", o.flagRequests, o.flagBudget))
	return nil
}

// startFlagfile starts b's cupd on a copy of the flagfile repository of n
// segments, in b.dir/flagfile-<n>; on the one without getCostsList when b's cupd refuses it (a
// cupd before 272c320), which the notes say.
func startFlagfile(ctx context.Context, o *options, b *binary, d *data, n int, t *table) (*cupdproc.Process, error) {
	dir := filepath.Join(b.dir, fmt.Sprintf("flagfile-%d", n))
	if err := copyRepo(d.flagfiles[n], dir); err != nil {
		return nil, err
	}
	p, err := startCupd(ctx, o, b, fmt.Sprintf("flagfile-%d", n), filepath.Join(dir, "repo.git"), "")
	if err == nil || !strings.Contains(err.Error(), `"getCostsList": unknown field`) {
		return p, err
	}
	if err := copyRepo(d.flagfilesOld[n], dir); err != nil {
		return nil, err
	}
	t.note(fmt.Sprintf("%s: flagfile N=%d: this cupd does not know the controller's getCostsList; served without it", b.label, n))
	return startCupd(ctx, o, b, fmt.Sprintf("flagfile-%d", n), filepath.Join(dir, "repo.git"), "")
}

// flagfileListed waits, up to budget, until p has listed a namespace in
// the background to answer its gets (cup_server_listing_prefetches_total),
// and says how long it waited, or that it did not list one.
func flagfileListed(ctx context.Context, p *cupdproc.Process, budget time.Duration) (said string, err error) {
	start := time.Now()
	err = pollMetrics(ctx, p, func(body []byte) (bool, error) {
		switch {
		case !bytes.Contains(body, []byte("cup_server_gets_from_listings_total")):
			said = "this cupd does not list a namespace in the background"
		case bytes.Contains(body, []byte(`cup_server_listing_prefetches_total{outcome="listed"}`)):
			said = fmt.Sprintf("the namespace's listing in the background ended %.0f ms after the last of the first reads", ms(time.Since(start)))
		case time.Since(start) > budget:
			said = fmt.Sprintf("the namespace was not listed in the background within %v of the last of the first reads", budget)
		default:
			return false, nil
		}
		return true, nil
	})
	return said, err
}

// client is a keep-alive HTTP client of up to conns connections.
func client(conns int) *http.Client {
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
}

// call sends a request with a JSON body (when body is not nil) and
// returns the answer's status and body.
func call(ctx context.Context, hc *http.Client, method, url string, body []byte) (int, []byte, error) {
	return callType(ctx, hc, method, url, body, "application/json")
}

func callType(ctx context.Context, hc *http.Client, method, url string, body []byte, ctype string) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	res, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

// expect sends a request and fails unless it gets the status want.
func expect(ctx context.Context, hc *http.Client, method, url string, body []byte, want int) error {
	status, b, err := call(ctx, hc, method, url, body)
	if err == nil && status != want {
		err = fmt.Errorf("%s %s: %d %.200s", method, url, status, b)
	}
	return err
}

// outcome names a call's outcome: its status code, or "error".
func outcome(status int, _ []byte, err error) string {
	if err != nil {
		return "error"
	}
	return fmt.Sprint(status)
}

// result is what drive measured.
type result struct {
	lat     []time.Duration // of the calls with the wanted outcome
	ok      int
	counts  map[string]int // calls by outcome
	elapsed time.Duration
}

func (r result) rate() float64 { return float64(r.ok) / r.elapsed.Seconds() }

func (r result) String() string {
	return fmt.Sprintf("%s in %v; p50 %.2f ms, p99 %.2f ms", summarize(r.counts), r.elapsed.Round(time.Millisecond), ms(pct(r.lat, 50)), ms(pct(r.lat, 99)))
}

// drive runs do from clients goroutines, each calling it again as soon as
// it returns, until dur has passed or max calls were made, and waits for
// the calls in flight. A call whose outcome is want counts as done.
func drive(ctx context.Context, clients int, dur time.Duration, max int, do func(ctx context.Context, c, i int) string, want string) result {
	var mu sync.Mutex
	r := result{counts: map[string]int{}}
	var started atomic.Int64
	t0 := time.Now()
	deadline := t0.Add(dur)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			var lat []time.Duration
			counts := map[string]int{}
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil && started.Add(1) <= int64(max); i++ {
				s := time.Now()
				o := do(ctx, c, i)
				if o == want {
					lat = append(lat, time.Since(s))
				}
				counts[o]++
			}
			mu.Lock()
			defer mu.Unlock()
			r.lat = append(r.lat, lat...)
			r.ok += len(lat)
			for k, v := range counts {
				r.counts[k] += v
			}
		})
	}
	wg.Wait()
	r.elapsed = time.Since(t0)
	return r
}

// summarize lists outcome counts, most first: "202×480, 429×12".
func summarize(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

func median(d []time.Duration) time.Duration { return pct(d, 50) }

// spread is the least and the most of d.
func spread(d []time.Duration) string {
	if len(d) == 0 {
		return "none"
	}
	return fmt.Sprintf("%.1f–%.1f ms", ms(slices.Min(d)), ms(slices.Max(d)))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
