// Command cupattack runs a set of resource-exhaustion attacks, each against
// a fresh real cupd on 127.0.0.1, and reports what each cost cupd: requests
// sent, answers by status, peak and final resident memory (VmHWM and VmRSS
// from /proc/<pid>/status), the latency of GET /healthz and of a normal GET
// of a demo resource made during the attack, and whether cupd survived.
//
// The attacks (-attacks names some; a family name such as slowloris names
// all of its members):
//
//   - nesting: PUTs whose spec holds arrays nested deep ([[[…]]]), one
//     branch or 20, with and without dryRun, 8 at once;
//   - cachekeys: GETs of new names, each with a query of 1 MB (?pad=);
//   - wasmfanout: concurrent gets and lists of distinct namespaces of the
//     type a WASM controller serves (the demo's segments);
//   - slowloris-idle: thousands of keep-alive connections opened and held
//     idle, up to the file descriptor limit less a margin;
//   - slowloris-trickle: PUT bodies sent one byte every 2 s, to a cupd with
//     --request-timeout 5s: how long does each stay open?
//   - slowloris-hooks: concurrent POST /hooks/fetch with 4 MB bodies sent
//     slowly, to a cupd serving a remote repository (package gittest);
//   - bigbody: dry-run PUTs of a flat, wide spec just under
//     --max-request-bytes, 8 at once.
//
// Every attack is bounded in requests (times -scale) and in time
// (-attack-timeout). While it runs cupd's RSS is read every 25ms; when it
// passes -rss-cap cupd is killed at once and the attack reported as
// unbounded, so that the machine is never at risk.
//
// cupattack reports; it does not judge the answers. It exits 1 when cupd
// died, stopped answering /healthz or passed the cap in any attack, and 2
// when the run could not be set up.
//
//	go run ./internal/cmd/cupattack                     # every attack, about 2-3 minutes
//	go run ./internal/cmd/cupattack -scale 0.1          # 30-60 seconds
//	go run ./internal/cmd/cupattack -attacks nesting,bigbody -cupd bin/cupd
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cup-dev/cup/internal/cupdproc"
)

// options are the command's flags.
type options struct {
	cupd          string
	attacks       []string
	scale         float64
	rssCap        int64
	cupdArgs      []string
	attackTimeout time.Duration
	// trickleBound is how long slowloris-trickle waits for cupd to close
	// its connections (default: 30s × scale, at least 8s).
	trickleBound time.Duration
	keep         bool
	// tmp is where the run's temporary directory goes (default: the
	// system's).
	tmp string
}

func main() {
	var o options
	var attacks, cupdArgs string
	var capMiB int64
	flag.StringVar(&o.cupd, "cupd", "", "cupd binary to attack (default: go build ./cmd/cupd into a temporary directory; run from the module)")
	flag.StringVar(&attacks, "attacks", "all", "comma-separated attacks to run: "+strings.Join(attackNames(), ", ")+", a family (slowloris) or all")
	flag.Float64Var(&o.scale, "scale", 1, "factor on every attack's requests and durations: 1 takes about 2-3 minutes in all, 0.1 30-60 seconds (less when cupd holds up)")
	flag.Int64Var(&capMiB, "rss-cap-mib", 2048, "kill cupd and report the attack as unbounded when its RSS passes this many MiB")
	flag.StringVar(&cupdArgs, "cupd-args", "", "extra arguments for cupd serve, space-separated (after the attack's own, so they win)")
	flag.DurationVar(&o.attackTimeout, "attack-timeout", time.Minute, "bound on each attack")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (cupd's logs) also when cupd survived every attack")
	flag.Parse()
	o.rssCap = capMiB << 20
	o.cupdArgs = strings.Fields(cupdArgs)
	var err error
	if o.attacks, err = selectAttacks(attacks); err != nil {
		fmt.Fprintf(os.Stderr, "cupattack: -attacks: %v\n", err)
		os.Exit(2)
	}
	if o.scale <= 0 || o.scale > 10 || capMiB < 64 || o.attackTimeout <= 0 {
		fmt.Fprintln(os.Stderr, "cupattack: want 0 < -scale <= 10, -rss-cap-mib >= 64 and a positive -attack-timeout")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	results, err := run(ctx, &o, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cupattack: %v\n", err)
		os.Exit(2)
	}
	if slices.ContainsFunc(results, func(r *result) bool { return r.failed() }) {
		os.Exit(1)
	}
}

// selectAttacks parses -attacks.
func selectAttacks(s string) ([]string, error) {
	var names []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		found := false
		for _, a := range attacks {
			if n == "all" || a.name == n || strings.HasPrefix(a.name, n+"-") {
				names = append(names, a.name)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("no attack %q; there are %s", n, strings.Join(attackNames(), ", "))
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	// In the order of the list of attacks.
	var ordered []string
	for _, a := range attacks {
		if slices.Contains(names, a.name) {
			ordered = append(ordered, a.name)
		}
	}
	return ordered, nil
}

func attackNames() []string {
	var names []string
	for _, a := range attacks {
		names = append(names, a.name)
	}
	return names
}

// raiseFileLimit raises the soft limit on open files to the hard limit, for
// slowloris-idle's connections, and returns the new soft limit.
func raiseFileLimit() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return 0, err
		}
	}
	return l.Cur, nil
}

// run runs the attacks of o one after another and prints the table to out.
func run(ctx context.Context, o *options, out io.Writer) (results []*result, err error) {
	if o.trickleBound == 0 {
		o.trickleBound = max(8*time.Second, time.Duration(float64(30*time.Second)*o.scale))
	}
	dir, err := os.MkdirTemp(o.tmp, "cupattack-*")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err == nil && !o.keep && !slices.ContainsFunc(results, func(r *result) bool { return r.failed() }) {
			_ = os.RemoveAll(dir)
			return
		}
		fmt.Fprintf(out, "\nkept %s (each attack's cupd log: <attack>.log)\n", dir)
	}()
	files, err := raiseFileLimit()
	if err != nil {
		return nil, fmt.Errorf("raising the limit on open files: %w", err)
	}
	bin := o.cupd
	if bin == "" {
		t0 := time.Now()
		if bin, err = cupdproc.Build(ctx, dir, false, out); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "built cupd in %v\n", time.Since(t0).Round(time.Millisecond))
	}
	fmt.Fprintf(out, "scale %g, RSS cap %s, open files limit %d, attack timeout %v\n", o.scale, cupdproc.FormatBytes(o.rssCap), files, o.attackTimeout)
	start := time.Now()
	for _, name := range o.attacks {
		if ctx.Err() != nil {
			return results, context.Cause(ctx)
		}
		a := attackByName(name)
		r, err := runAttack(ctx, o, a, bin, dir, files)
		if err != nil {
			return results, fmt.Errorf("%s: %w", name, err)
		}
		results = append(results, r)
		fmt.Fprintf(out, "%-18s done in %v (%s): %s\n", name, r.took.Round(100*time.Millisecond), r.timing, r.survived)
	}
	fmt.Fprintf(out, "\n")
	printTable(out, results)
	fmt.Fprintf(out, "\n%d attacks in %v\n", len(results), time.Since(start).Round(time.Second))
	return results, nil
}

func attackByName(name string) *attack {
	for _, a := range attacks {
		if a.name == name {
			return a
		}
	}
	panic("no attack " + name)
}

// Causes of an attack's early end.
var (
	errCap     = errors.New("RSS cap passed")
	errTimeout = errors.New("-attack-timeout reached")
)
