// Command cupsoak drives a real cupd with concurrent writers and readers for
// a bounded time, then checks that nothing was lost, duplicated or left
// behind. Everything runs on 127.0.0.1:
//
//   - a repository of -resources items (package benchrepo) is pushed into a
//     bare repository served over Git smart HTTP (package gittest, git
//     http-backend);
//   - cupd runs as a subprocess on that remote, in direct write mode, with
//     its objects in a temporary --cache-dir and pprof on a debug address;
//   - -writers goroutines PUT and DELETE resources that each owns alone,
//     every request with its own idempotency key and a body recording the
//     writer and its sequence number; a write whose answer is ambiguous
//     (no answer, 5xx) is repeated with the same key up to -retries times;
//   - -readers goroutines get and list, over the REST form and over the
//     generated Connect client.
//
// Afterwards it reports requests/s, p50/p99 latency of reads and writes and
// the count of every outcome, and checks:
//
//  1. every accepted write (2xx) is in exactly one commit of the remote's
//     branch, found by its Cup-Idempotency-Key trailer, the commit cupd
//     answered;
//  2. no commit exists for a refused write (4xx), and a write whose answer
//     was ambiguous is in at most one;
//  3. nothing else changed: every commit since the initial one is one
//     write's and changes exactly that write's file as it asked, and the
//     final tree is the initial tree plus the last write per resource that
//     was accepted (or that was ambiguous and landed);
//  4. git fsck --strict finds nothing wrong in the remote repository;
//  5. after the load and a settle period cupd's goroutines are back within
//     -goroutine-margin of the baseline taken after warm-up, and its heap in
//     use (after a forced GC) within -heap-factor of it;
//  6. clients saw a consistent cupd: no reader saw a resource go back to an
//     older write, no writer's delete of a resource it had written was
//     answered 404, no write of a new body was answered "unchanged";
//  7. cupd stopped cleanly on SIGTERM and (with -race) reported no data race.
//
// It exits 1 when a check fails, saying exactly what failed, and 2 when the
// run could not be set up. The temporary directory (the remote, cupd's log)
// is kept when a check fails.
//
// With -external-interval another user commits straight into the remote
// during the load, so that cupd's pushes lose races and it must apply its
// writes again (and may answer ABORTED); those commits are accounted for by
// the checks. A probe gets one resource every 200ms on a connection of its
// own and saves cupd's goroutines when an answer takes longer than -stall.
//
//	go run ./internal/cmd/cupsoak -duration 60s
//	go run ./internal/cmd/cupsoak -duration 20s -resources 500 -race
//	go run ./internal/cmd/cupsoak -duration 60s -external-interval 500ms
//
// The run is bounded by -duration and -max-requests, and the whole program
// by -timeout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cup-dev/cup/internal/benchrepo"
	"github.com/cup-dev/cup/internal/cupdproc"
	"github.com/cup-dev/cup/internal/gittest"
)

// options are the command's flags.
type options struct {
	cupd           string
	race           bool
	writers        int
	readers        int
	duration       time.Duration
	warmup         time.Duration
	settle         time.Duration
	timeout        time.Duration
	maxRequests    int64
	resources      int
	seed           uint64
	retries        int
	requestTimeout time.Duration
	deletePercent  int
	createPercent  int
	goroutineSlack int
	heapFactor     float64
	cacheBytes     int64
	fetchInterval  time.Duration
	external       time.Duration
	logLevel       string
	stall          time.Duration
	keep           bool
}

func main() {
	var o options
	flag.StringVar(&o.cupd, "cupd", "", "cupd binary to drive (default: go build ./cmd/cupd into a temporary directory; run from the module)")
	flag.BoolVar(&o.race, "race", false, "build cupd with the race detector (ignored with -cupd) and fail on any race it reports")
	flag.IntVar(&o.writers, "writers", 8, "concurrent writers, each owning its own resources")
	flag.IntVar(&o.readers, "readers", 8, "concurrent readers")
	flag.DurationVar(&o.duration, "duration", 30*time.Second, "how long the load runs after the warm-up")
	flag.DurationVar(&o.warmup, "warmup", 3*time.Second, "load before the baseline of goroutines and heap is taken")
	flag.DurationVar(&o.settle, "settle", 10*time.Second, "how long cupd may take after the load to return to its baseline")
	flag.DurationVar(&o.timeout, "timeout", 0, "bound on the whole run, building cupd included (default: 2×(warmup+duration) + 3m)")
	flag.Int64Var(&o.maxRequests, "max-requests", 10_000_000, "bound on the requests of the warm-up and the load together")
	flag.IntVar(&o.resources, "resources", 1000, "resources in the initial repository (one namespace)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the writers' and readers' random choices")
	flag.IntVar(&o.retries, "retries", 2, "times a write whose answer was ambiguous is repeated with its idempotency key")
	flag.DurationVar(&o.requestTimeout, "request-timeout", 30*time.Second, "bound on each request")
	flag.IntVar(&o.deletePercent, "delete-percent", 15, "share of writes that delete a resource")
	flag.IntVar(&o.createPercent, "create-percent", 10, "share of writes that create a new resource")
	flag.IntVar(&o.goroutineSlack, "goroutine-margin", 10, "goroutines cupd may have above its baseline after the settle period")
	flag.Float64Var(&o.heapFactor, "heap-factor", 3, "factor of the baseline heap in use cupd may have after the settle period (its resource cache included: see -cache-bytes)")
	flag.Int64Var(&o.cacheBytes, "cache-bytes", 16<<20, "cupd --cache-bytes: memory for resources memoised by commit")
	flag.DurationVar(&o.fetchInterval, "fetch-interval", 5*time.Second, "cupd --fetch-interval: background fetches race the writes")
	flag.DurationVar(&o.external, "external-interval", 0, "commit straight into the remote this often during the load, as another user would, so that cupd's pushes lose races (0: never)")
	flag.StringVar(&o.logLevel, "cupd-log-level", "info", "cupd --log-level (its log is kept in the temporary directory)")
	flag.DurationVar(&o.stall, "stall", time.Second, "probe cupd with a get every 200ms and save its goroutines when one takes longer than this (0: no probes)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (repositories, cupd's log) also when every check passes")
	flag.Parse()
	if err := o.validate(); err != nil {
		fmt.Fprintf(os.Stderr, "cupsoak: %v\n", err)
		os.Exit(2)
	}
	if o.timeout == 0 {
		o.timeout = 2*(o.warmup+o.duration) + 3*time.Minute
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeoutCause(ctx, o.timeout, fmt.Errorf("-timeout %v reached", o.timeout))
	defer cancel()
	ok, err := run(ctx, &o, os.Stdout)
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "cupsoak: %v\n", err)
		os.Exit(2)
	case !ok:
		os.Exit(1)
	}
}

func (o *options) validate() error {
	switch {
	case o.writers < 1 || o.writers > 99:
		return errors.New("-writers: want 1 to 99")
	case o.readers < 0:
		return errors.New("-readers: want 0 or more")
	case o.duration <= 0 || o.warmup < 0 || o.settle < 0:
		return errors.New("-duration must be positive, -warmup and -settle not negative")
	case o.maxRequests < 1:
		return errors.New("-max-requests: want at least 1")
	case o.resources < o.writers:
		return errors.New("-resources: want at least one per writer")
	case o.retries < 0 || o.requestTimeout <= 0:
		return errors.New("-retries must not be negative, -request-timeout positive")
	case o.deletePercent < 0 || o.createPercent < 0 || o.deletePercent+o.createPercent > 100:
		return errors.New("-delete-percent and -create-percent: want shares adding up to at most 100")
	case o.heapFactor < 1 || o.goroutineSlack < 0:
		return errors.New("-heap-factor: want at least 1; -goroutine-margin not negative")
	}
	return nil
}

// run sets up, loads, reports and checks. It returns whether every check
// passed, or an error when the run could not be made.
func run(ctx context.Context, o *options, out io.Writer) (ok bool, err error) {
	start := time.Now()
	dir, err := os.MkdirTemp("", "cupsoak-*")
	if err != nil {
		return false, err
	}
	var watch *stallWatch
	defer func() {
		if ok && !o.keep && (watch == nil || !watch.kept()) {
			_ = os.RemoveAll(dir)
			return
		}
		fmt.Fprintf(out, "\nkept %s (remote: remote/repo.git, cupd's log: cupd.log)\n", dir)
	}()

	cupd := o.cupd
	if cupd == "" {
		t0 := time.Now()
		if cupd, err = cupdproc.Build(ctx, dir, o.race, out); err != nil {
			return false, err
		}
		fmt.Fprintf(out, "built cupd (race detector %v) in %v\n", o.race, time.Since(t0).Round(time.Millisecond))
	}

	// The remote: a generated repository pushed over smart HTTP.
	gen := filepath.Join(dir, "gen")
	raw, err := benchrepo.Generate(gen, o.resources, benchrepo.Flat)
	if err != nil {
		return false, err
	}
	gitLog, err := os.Create(filepath.Join(dir, "gittest.log"))
	if err != nil {
		return false, err
	}
	defer gitLog.Close()
	srv, err := gittest.Start(gittest.WithRoot(filepath.Join(dir, "remote")), gittest.WithLog(gitLog))
	if err != nil {
		return false, err
	}
	defer srv.Close()
	g := newGit(filepath.Join(dir, "home"))
	remote := srv.Path(repoName)
	if _, err := g.run(ctx, "", "init", "--quiet", "--bare", "--initial-branch="+branch, remote); err != nil {
		return false, err
	}
	if _, err := g.run(ctx, filepath.Join(gen, "repo.git"), "push", "--quiet", srv.URL(repoName), branch+":refs/heads/"+branch); err != nil {
		return false, err
	}
	initial, err := g.revParse(ctx, remote, "refs/heads/"+branch)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(out, "remote %s: %d resources (%.1f MiB), initial commit %s, pushed over smart HTTP\n",
		srv.URL(repoName), o.resources, float64(raw)/(1<<20), initial[:12])

	// cupd.
	d, err := startCupd(ctx, o, cupd, dir, srv.URL(repoName), filepath.Join(gen, "config"))
	if err != nil {
		return false, err
	}
	defer d.Kill()
	fmt.Fprintf(out, "cupd pid %d at %s, pprof at %s, log %s\n", d.Pid(), d.URL, d.debugURL, d.LogPath)

	// Load.
	ld := newLoad(o, d.URL)
	defer ld.closeIdle()
	budget := newBudget(o.maxRequests)
	watch = &stallWatch{d: d, dir: dir, threshold: o.stall, interval: 200 * time.Millisecond}
	stopWatch, watchDone := make(chan struct{}), make(chan struct{})
	if o.stall > 0 {
		go func() { defer close(watchDone); watch.run(ctx, stopWatch) }()
	} else {
		close(watchDone)
	}
	stopExternal, externalDone := make(chan struct{}), make(chan []*write, 1)
	if o.external > 0 {
		go func() { externalDone <- runExternal(ctx, remote, o.external, stopExternal) }()
		fmt.Fprintf(out, "another user commits straight into the remote every %v\n", o.external)
	} else {
		externalDone <- nil
	}
	var warm *phaseStats
	if o.warmup > 0 {
		warm = ld.run(ctx, "warm-up", o.warmup, budget)
		fmt.Fprintf(out, "warm-up: %s\n", warm.oneLine())
	}
	ld.closeIdle()
	time.Sleep(time.Second)
	base, err := d.measure(ctx)
	if err != nil {
		return false, fmt.Errorf("baseline: %w", err)
	}
	fmt.Fprintf(out, "baseline after warm-up: %s\n", base)

	fmt.Fprintf(out, "load: %d writers, %d readers for %v (at most %d requests in all), seed %d; machine load average %s\n",
		o.writers, o.readers, o.duration, o.maxRequests, o.seed, loadAverage())
	phase := ld.run(ctx, "load", o.duration, budget)
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("load: %w", context.Cause(ctx))
	}
	phase.report(out)
	fmt.Fprintf(out, "  machine load average after the load: %s (%d CPUs; cupd, this driver and git share them)\n", loadAverage(), runtime.NumCPU())
	close(stopExternal)
	externals := <-externalDone
	close(stopWatch)
	<-watchDone
	writes := ld.writes()
	reportWrites(out, writes)
	if o.external > 0 {
		n := 0
		for _, w := range externals {
			if w.Class() == accepted {
				n++
			}
		}
		fmt.Fprintf(out, "  external commits: %d made, %d found the branch moved and were dropped\n", n, len(externals)-n)
	}
	fmt.Fprintf(out, "  the remote served %d git-upload-pack POSTs (fetches) and %d git-receive-pack POSTs (pushes), setup included\n",
		srv.Count(gittest.UploadPack), srv.Count(gittest.ReceivePack))
	if o.stall > 0 {
		watch.report(out)
	}

	var checks []*checkResult

	// 5: back to the baseline once the load stopped.
	ld.closeIdle()
	leak := &checkResult{Name: "5 goroutines and heap back to the baseline"}
	after, err := d.settle(ctx, base, o)
	if err != nil {
		return false, fmt.Errorf("after the load: %w", err)
	}
	leak.Notes = append(leak.Notes, "baseline: "+base.String(), fmt.Sprintf("after %v: %s", after.waited.Round(time.Millisecond), after.figures))
	leak.Failures = append(leak.Failures, after.failures...)

	// What cupd serves is the remote's head.
	head, err := g.revParse(ctx, remote, "refs/heads/"+branch)
	if err != nil {
		return false, err
	}
	served, err := ld.servedCommit(ctx)
	if err != nil {
		return false, fmt.Errorf("reading cupd's head: %w", err)
	}

	// Stop cupd before looking at the remote: no more writes.
	stopped := &checkResult{Name: "7 cupd stopped cleanly, no data race"}
	stopped.Failures = d.Stop(15 * time.Second)
	stopped.Notes = append(stopped.Notes, d.LogSummary()...)

	// 1-3: the remote's history against the answers.
	st, err := readRemote(ctx, g, remote, initial, "refs/heads/"+branch)
	if err != nil {
		return false, fmt.Errorf("reading the remote: %w", err)
	}
	hist := checkHistory(append(slices.Clone(writes), externals...), st, pathOf)
	if served != head {
		hist[2].Failures = append(hist[2].Failures, fmt.Sprintf("cupd served commit %s after the load, but the remote's %s is at %s", served, branch, head))
	}
	checks = append(checks, hist...)

	// 4: fsck.
	fsck := &checkResult{Name: "4 git fsck --strict on the remote"}
	if msg, err := g.fsck(ctx, remote); err != nil {
		fsck.Failures = append(fsck.Failures, msg)
	}
	fsck.Notes = append(fsck.Notes, fmt.Sprintf("%d commits since the initial one; %s", len(st.Commits), g.countObjects(ctx, remote)))
	checks = append(checks, fsck, leak)

	// 6: what the clients saw.
	checks = append(checks, ld.consistency(writes))
	checks = append(checks, stopped)

	fmt.Fprintf(out, "\nchecks:\n")
	ok = true
	for _, c := range checks {
		c.print(out)
		ok = ok && len(c.Failures) == 0
	}
	if ok {
		fmt.Fprintf(out, "\nPASS: every check passed (%v in all)\n", time.Since(start).Round(time.Second))
	} else {
		fmt.Fprintf(out, "\nFAIL: a check failed (%v in all)\n", time.Since(start).Round(time.Second))
	}
	return ok, nil
}

// The remote repository and the branch cupd serves.
const (
	repoName = "repo.git"
	branch   = "main"
)

// pathOf is the file of the item called name (the flat layout).
func pathOf(name string) string { return "items/default/" + name + ".json" }

// loadAverage is the machine's load average over 1, 5 and 15 minutes.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
