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
//     generated Connect client;
//   - -watchers REST watches on each cupd follow every change of the
//     items, each first reading the state (initial events), then dropping
//     its stream every -watch-reconnect or so and resuming from its last
//     event.
//
// With -replicas N, N cupd processes serve the one remote, each with a
// cache directory of its own (cache-<i>, log cupd-<i>.log), as several
// replicas behind a load balancer would: the remote is their only shared
// state, and a push that is not a fast-forward makes the replica fetch and
// apply the write again on the new head. Each write request goes to a
// replica chosen at random; a repeat goes to another one, so that the
// idempotency key is tested across replicas: -cut-percent of the writes
// have their first request given up after 10-500ms on purpose, and
// -drop-percent their first answer dropped as if lost (the repeat must
// then answer that answer's commit, as a replay).
// Readers are spread over the replicas, each reading from one. The
// replicas see each other's commits by -propagate: webhook (the default:
// after each accepted write cupsoak calls POST /hooks/fetch on the other
// replicas, as the Git host's push webhook would) or fetch (their own
// fetches every -fetch-interval).
//
// Afterwards it reports requests/s, p50/p99 latency of reads and writes and
// the count of every outcome, and checks:
//
//  1. every accepted write (2xx) is in exactly one commit of the remote's
//     branch, found by its Cup-Idempotency-Key trailer, the commit cupd
//     answered;
//  2. no commit exists for a refused write (4xx), and a write whose answer
//     was ambiguous is in at most one (as is a write refused after an
//     ambiguous attempt: that attempt may land after the refusal);
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
//  7. cupd stopped cleanly on SIGTERM and (with -race) reported no data race;
//  8. every watcher saw every change of the branch's items after the commit
//     its initial state was read at, once and in commit order, across its
//     reconnections, and its items at the end are those of the remote's
//     final tree.
//
// Checks 5 and 7 hold for every replica, and each must serve the remote's
// head after the load. It reports, per replica, the pushes that lost a
// race (cup_git_pushes_total{outcome="conflict"}) and the fetches, the
// ABORTED answers (a write that lost MaxRetries+1 races in a row), what the
// repeats on another replica were answered, and how long after a write's
// answer its event reached the watchers of the replica that took it and of
// the others (p50, p99).
//
// It exits 1 when a check fails, saying exactly what failed, and 2 when the
// run could not be set up. The temporary directory (the remote, cupd's log)
// is kept when a check fails.
//
// With -external-interval another user commits straight into the remote
// during the load, so that cupd's pushes lose races and it must apply its
// writes again (and may answer ABORTED); those commits are accounted for by
// the checks. A probe gets one resource every 200ms on a connection of its
// own (of the first replica) and saves cupd's goroutines when an answer
// takes longer than -stall.
//
//	go run ./internal/cmd/cupsoak -duration 60s
//	go run ./internal/cmd/cupsoak -duration 20s -resources 500 -race
//	go run ./internal/cmd/cupsoak -duration 60s -external-interval 500ms
//	go run ./internal/cmd/cupsoak -duration 60s -replicas 3
//	go run ./internal/cmd/cupsoak -duration 60s -replicas 3 -propagate fetch -fetch-interval 1s
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
	"sync"
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
	replicas       int
	propagate      string
	watchers       int
	watchReconnect time.Duration
	watchPoll      time.Duration
	cutPercent     int
	dropPercent    int
}

func main() {
	o := newOptions(flag.CommandLine)
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
	ok, err := run(ctx, o, os.Stdout)
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "cupsoak: %v\n", err)
		os.Exit(2)
	case !ok:
		os.Exit(1)
	}
}

// newOptions registers the command's flags with fs; their values are set
// in the options when fs parses its arguments.
func newOptions(fs *flag.FlagSet) *options {
	o := new(options)
	fs.StringVar(&o.cupd, "cupd", "", "cupd binary to drive (default: go build ./cmd/cupd into a temporary directory; run from the module)")
	fs.BoolVar(&o.race, "race", false, "build cupd with the race detector (ignored with -cupd) and fail on any race it reports")
	fs.IntVar(&o.writers, "writers", 8, "concurrent writers, each owning its own resources")
	fs.IntVar(&o.readers, "readers", 8, "concurrent readers")
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "how long the load runs after the warm-up")
	fs.DurationVar(&o.warmup, "warmup", 3*time.Second, "load before the baseline of goroutines and heap is taken")
	fs.DurationVar(&o.settle, "settle", 10*time.Second, "how long cupd may take after the load to return to its baseline")
	fs.DurationVar(&o.timeout, "timeout", 0, "bound on the whole run, building cupd included (default: 2×(warmup+duration) + 3m)")
	fs.Int64Var(&o.maxRequests, "max-requests", 10_000_000, "bound on the requests of the warm-up and the load together")
	fs.IntVar(&o.resources, "resources", 1000, "resources in the initial repository (one namespace)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the writers' and readers' random choices")
	fs.IntVar(&o.retries, "retries", 2, "times a write whose answer was ambiguous is repeated with its idempotency key")
	fs.DurationVar(&o.requestTimeout, "request-timeout", 30*time.Second, "bound on each request")
	fs.IntVar(&o.deletePercent, "delete-percent", 15, "share of writes that delete a resource")
	fs.IntVar(&o.createPercent, "create-percent", 10, "share of writes that create a new resource")
	fs.IntVar(&o.goroutineSlack, "goroutine-margin", 10, "goroutines cupd may have above its baseline after the settle period")
	fs.Float64Var(&o.heapFactor, "heap-factor", 3, "factor of the baseline heap in use cupd may have after the settle period (its resource cache included: see -cache-bytes)")
	fs.Int64Var(&o.cacheBytes, "cache-bytes", 16<<20, "cupd --cache-bytes: memory for resources memoised by commit")
	fs.DurationVar(&o.fetchInterval, "fetch-interval", 5*time.Second, "cupd --fetch-interval: background fetches race the writes")
	fs.DurationVar(&o.external, "external-interval", 0, "commit straight into the remote this often during the load, as another user would, so that cupd's pushes lose races (0: never)")
	fs.StringVar(&o.logLevel, "cupd-log-level", "info", "cupd --log-level (its log is kept in the temporary directory)")
	fs.DurationVar(&o.stall, "stall", time.Second, "probe cupd with a get every 200ms and save its goroutines when one takes longer than this (0: no probes)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory (repositories, cupd's log) also when every check passes")
	fs.IntVar(&o.replicas, "replicas", 1, "cupd replicas on the one remote, each with its own --cache-dir; every write request goes to one at random")
	fs.StringVar(&o.propagate, "propagate", propagateWebhook, "how replicas see each other's commits: webhook (cupsoak calls POST /hooks/fetch on the others after each accepted write, as the Git host's push webhook would; -fetch-interval stays as a backstop) or fetch (only cupd's fetches every -fetch-interval)")
	fs.IntVar(&o.watchers, "watchers", 1, "REST watches of the items on each replica, each checked to see every change once, in order")
	fs.DurationVar(&o.watchReconnect, "watch-reconnect", 5*time.Second, "a watcher drops its stream about this often on purpose and resumes from its last event (0: never)")
	fs.DurationVar(&o.watchPoll, "watch-poll-interval", time.Second, "cupd --watch-poll-interval: how soon watches see a commit a fetch brought")
	fs.IntVar(&o.cutPercent, "cut-percent", -1, "share of writes whose first request the client gives up on after 10-500ms, then repeats with the same key on another replica (default: 5 with -replicas > 1, else 0)")
	fs.IntVar(&o.dropPercent, "drop-percent", -1, "share of writes whose first answer the client drops as if lost, then repeats the request with the same key on another replica, which must answer with the first commit, as a replay (default: 5 with -replicas > 1, else 0)")
	return o
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
	case o.replicas < 1 || o.replicas > 9:
		return errors.New("-replicas: want 1 to 9")
	case o.propagate != propagateWebhook && o.propagate != propagateFetch:
		return fmt.Errorf("-propagate: want %s or %s", propagateWebhook, propagateFetch)
	case o.watchers < 0 || o.watchReconnect < 0 || o.watchPoll <= 0:
		return errors.New("-watchers and -watch-reconnect must not be negative, -watch-poll-interval positive")
	case o.cutPercent < -1 || o.dropPercent < -1 || o.cutPercent+o.dropPercent > 100:
		return errors.New("-cut-percent and -drop-percent: want shares adding up to at most 100")
	}
	for _, p := range []*int{&o.cutPercent, &o.dropPercent} {
		if *p == -1 {
			*p = 0
			if o.replicas > 1 {
				*p = 5
			}
		}
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

	bin := o.cupd
	if bin == "" {
		t0 := time.Now()
		if bin, err = cupdproc.Build(ctx, dir, o.race, out); err != nil {
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

	// The cupd replicas.
	ds := make([]*cupd, 0, o.replicas)
	defer func() {
		for _, d := range ds {
			d.Kill()
		}
	}()
	var bases []string
	for i := range o.replicas {
		d, err := startCupd(ctx, o, i, bin, dir, srv.URL(repoName), filepath.Join(gen, "config"))
		if err != nil {
			return false, err
		}
		ds = append(ds, d)
		bases = append(bases, d.URL)
		fmt.Fprintf(out, "cupd %d: pid %d at %s, pprof at %s, log %s\n", i, d.Pid(), d.URL, d.debugURL, d.LogPath)
	}

	// Load.
	ld := newLoad(o, bases)
	defer ld.closeIdle()
	fanCtx, stopFanout := context.WithCancel(ctx)
	defer stopFanout()
	var fan *fanout
	if o.replicas > 1 {
		if o.propagate == propagateWebhook {
			fan = newFanout(fanCtx, bases)
			ld.acked = fan.acked
			fmt.Fprintf(out, "replicas see each other's commits by webhook: after each accepted write, POST /hooks/fetch on the others (and every %v by fetching)\n", o.fetchInterval)
		} else {
			fmt.Fprintf(out, "replicas see each other's commits by fetching every %v\n", o.fetchInterval)
		}
		if o.cutPercent > 0 || o.dropPercent > 0 {
			fmt.Fprintf(out, "%d%% of writes have their first request given up after 10-500ms, %d%% their first answer dropped as if lost; both are repeated on another replica\n",
				o.cutPercent, o.dropPercent)
		}
	}

	// Watchers, each with the state at some commit before the load.
	watchCtx, stopWatchers := context.WithCancel(ctx)
	var watchers []*watcher
	var watchWG sync.WaitGroup
	for r := range o.replicas {
		for range o.watchers {
			w := newWatcher(o, len(watchers), r, bases[r])
			watchers = append(watchers, w)
			watchWG.Go(func() { w.run(watchCtx) })
		}
	}
	defer watchWG.Wait()
	defer stopWatchers()
	if err := awaitWatchers(ctx, watchers, 30*time.Second); err != nil {
		return false, err
	}
	if len(watchers) > 0 {
		fmt.Fprintf(out, "%d watchers (%d on each replica) have the items' state; each drops its stream about every %v and resumes\n",
			len(watchers), o.watchers, o.watchReconnect)
	}

	budget := newBudget(o.maxRequests)
	watch = &stallWatch{d: ds[0], dir: dir, threshold: o.stall, interval: 200 * time.Millisecond}
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
	bases0 := make([]figures, len(ds))
	for i, d := range ds {
		if bases0[i], err = d.measure(ctx); err != nil {
			return false, fmt.Errorf("baseline of cupd %d: %w", i, err)
		}
		fmt.Fprintf(out, "baseline of cupd %d after warm-up: %s\n", i, bases0[i])
	}

	fmt.Fprintf(out, "load: %d writers, %d readers on %d replicas for %v (at most %d requests in all), seed %d; machine load average %s\n",
		o.writers, o.readers, o.replicas, o.duration, o.maxRequests, o.seed, loadAverage())
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
	if fan != nil {
		fmt.Fprintf(out, "  webhook fan-out: %d calls of POST /hooks/fetch, %d failed\n", fan.calls.Load(), fan.fails.Load())
	}
	if o.stall > 0 {
		watch.report(out)
	}

	// Every replica comes to serve the remote's head, and every watcher
	// sees the last change of an item.
	st, err := readRemote(ctx, g, remote, initial, "refs/heads/"+branch)
	if err != nil {
		return false, fmt.Errorf("reading the remote: %w", err)
	}
	head := st.Head
	if fan != nil {
		fan.all()
	}
	var served []string
	for i := range ds {
		took, err := ld.awaitHead(ctx, i, head, o.fetchInterval+15*time.Second)
		if err != nil {
			served = append(served, err.Error())
		} else if o.replicas > 1 {
			fmt.Fprintf(out, "  cupd %d served the head %v after the remote's head was read\n", i, took.Round(time.Millisecond))
		}
	}
	if err := awaitLastChange(ctx, watchers, st, o.fetchInterval+30*time.Second); err != nil {
		fmt.Fprintf(out, "  %v\n", err)
	}
	stopWatchers()
	watchWG.Wait()
	var conflicts float64
	for i := range ds {
		m, err := readGitMetrics(ctx, ld.hc, bases[i])
		if err != nil {
			return false, fmt.Errorf("metrics of cupd %d: %w", i, err)
		}
		conflicts += m.pushes["conflict"]
		fmt.Fprintf(out, "  cupd %d %s\n", i, m)
	}
	reportRaces(out, writes, conflicts)
	if len(watchers) > 0 {
		same, other := propagation(watchers, writes)
		fmt.Fprintf(out, "  a write's event reached the watchers of the replica that took it %v (p50) / %v (p99) after its answer (%d events)\n",
			pct(same, 50), pct(same, 99), len(same))
		if o.replicas > 1 {
			fmt.Fprintf(out, "  and the watchers of the other replicas %v (p50) / %v (p99) after it (%d events)\n", pct(other, 50), pct(other, 99), len(other))
		}
	}

	var checks []*checkResult

	// 5: back to the baseline once the load stopped.
	ld.closeIdle()
	stopFanout()
	if fan != nil {
		fan.stop()
	}
	leak := &checkResult{Name: "5 goroutines and heap back to the baseline"}
	for i, d := range ds {
		after, err := d.settle(ctx, bases0[i], o)
		if err != nil {
			return false, fmt.Errorf("cupd %d after the load: %w", i, err)
		}
		who := ""
		if o.replicas > 1 {
			who = fmt.Sprintf("cupd %d ", i)
		}
		leak.Notes = append(leak.Notes, who+"baseline: "+bases0[i].String(), fmt.Sprintf("%safter %v: %s", who, after.waited.Round(time.Millisecond), after.figures))
		for _, f := range after.failures {
			leak.Failures = append(leak.Failures, who+f)
		}
	}

	// Stop cupd before looking at the remote again: no more writes.
	stopped := &checkResult{Name: "7 cupd stopped cleanly, no data race"}
	for i, d := range ds {
		who := ""
		if o.replicas > 1 {
			who = fmt.Sprintf("cupd %d: ", i)
		}
		for _, f := range d.Stop(15 * time.Second) {
			stopped.Failures = append(stopped.Failures, who+f)
		}
		for _, n := range d.LogSummary() {
			stopped.Notes = append(stopped.Notes, who+n)
		}
	}

	// 1-3: the remote's history against the answers.
	if after, err := g.revParse(ctx, remote, "refs/heads/"+branch); err != nil {
		return false, err
	} else if after != head {
		served = append(served, fmt.Sprintf("the remote's %s moved from %s to %s after the load", branch, head, after))
	}
	hist := checkHistory(append(slices.Clone(writes), externals...), st, pathOf)
	hist[2].Failures = append(hist[2].Failures, served...)
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

	// 8: what the watchers saw.
	if len(watchers) > 0 {
		blobs, err := itemBlobs(ctx, g, remote, st)
		if err != nil {
			return false, fmt.Errorf("reading the remote's items: %w", err)
		}
		checks = append(checks, checkWatchers(watchers, st, blobs))
	}

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
