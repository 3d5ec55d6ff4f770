// Command cupbench measures cupd the way a user meets it: it generates
// repositories of N resources, starts the cupd binary on them (127.0.0.1
// only), drives them with keep-alive clients over the REST form and prints
// a table of figures: concurrent and sequential writes, the first list and
// the first gets of a fresh process, resident memory after load, start-up
// of the demo with its WASM controller, the example flagfile WASM
// controller at 1,000 and 10,000 entries, and read throughput against a
// trivial Connect procedure on the same server.
//
//	go build -o bin/ ./cmd/cupd ./internal/cmd/cupbench
//	bin/cupbench -cupd bin/cupd -baseline /path/to/old/cupd
//
// With -baseline, both binaries are measured in the same run, phase by
// phase one after the other, and the table has a column for each and
// their ratio. -rows picks the rows; -detail prints the older per-size
// report instead (-resources, -clients, ...). Every phase is bounded in
// requests and time.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cup-dev/cup/internal/benchrepo"
)

func main() {
	o := defaultOptions()
	flag.StringVar(&o.cupd, "cupd", "bin/cupd", "path of the cupd binary to measure (the after column)")
	flag.StringVar(&o.baseline, "baseline", "", "path of a cupd binary to compare with (the before column); empty measures -cupd alone")
	rows := flag.String("rows", strings.Join(allRows, ","), "comma-separated rows of the table: "+strings.Join(allRows, ", "))
	flag.IntVar(&o.n, "n", o.n, "resources in the large repository (writes, put, list, get, rss, trivial)")
	flag.IntVar(&o.small, "small", o.small, "resources in the small repository (put: its p50 against -n's)")
	flag.IntVar(&o.writers, "writers", o.writers, "concurrent writers, each putting its own resource (writes)")
	flag.DurationVar(&o.writeFor, "write-duration", o.writeFor, "how long the concurrent writers run (writes)")
	flag.IntVar(&o.writeMax, "write-max", o.writeMax, "most puts of the concurrent writers, all together (writes)")
	flag.IntVar(&o.puts, "puts", o.puts, "sequential puts at each size (put)")
	flag.IntVar(&o.firstGets, "first-gets", o.firstGets, "distinct names read once each by a fresh cupd (get)")
	flag.IntVar(&o.clients, "clients", o.clients, "concurrent keep-alive clients of the throughput phase (trivial)")
	flag.DurationVar(&o.getFor, "get-duration", o.getFor, "how long each throughput phase runs: cupd's gets, then the trivial procedure (trivial)")
	flag.IntVar(&o.getMax, "get-max", o.getMax, "most requests of each throughput phase (trivial)")
	flag.IntVar(&o.lists, "lists", o.lists, "fresh cupd processes whose first list is timed, for each of packed and loose objects (list)")
	flag.IntVar(&o.starts, "starts", o.starts, "start-ups of the demo timed, for each of a cold and a warm compile cache (startup)")
	flagSizes := flag.String("flagfile-entries", "1000,10000", "comma-separated sizes of the flagfile controller's file (flagfile)")
	flag.IntVar(&o.flagRequests, "flagfile-requests", o.flagRequests, "requests of each kind (list, get, get missing, put) at each size (flagfile)")
	flag.DurationVar(&o.flagBudget, "flagfile-budget", o.flagBudget, "time for the requests of one kind at one size, and the most one may take (flagfile)")
	flag.StringVar(&o.cacheFlag, "wasm-cache-flag", "", "cupd's flag naming its WASM compile cache directory (startup); empty: found in `cupd serve --help`, the first flag with wasm and cache in its name")
	flag.StringVar(&o.cupdArgs, "cupd-args", "", "more flags for every cupd that serves a generated repository, space-separated (e.g. \"--max-concurrent-writes 64\")")
	flag.DurationVar(&o.phaseTimeout, "phase-timeout", o.phaseTimeout, "longest time one phase of one binary may take")

	detail := flag.Bool("detail", false, "print the detailed report of -cupd at each of -resources instead of the table")
	sizes := flag.String("resources", "1000,10000", "-detail: comma-separated repository sizes (resources in one namespace)")
	dClients := flag.Int("detail-clients", 8, "-detail: concurrent keep-alive clients for the get phase")
	dGetFor := flag.Duration("detail-get-duration", 5*time.Second, "-detail: how long the get phase runs")
	dLists := flag.Int("detail-lists", 30, "-detail: list requests of the whole namespace")
	dWrites := flag.Int("detail-writes", 100, "-detail: sequential put requests (direct commits)")
	layout := flag.String("layout", "flat", "-detail and -setup: file layout: flat (items/<namespace>/<name>.json) or sharded (items/<namespace>/<shard>/<name>.json)")
	watchers := flag.Int("watchers", 1000, "-detail: idle watches to open after the load, for the resident memory they cost and the delivery of one write's event to all (0: none)")
	setup := flag.String("setup", "", "only generate the repository (DIR/repo.git) and configuration (DIR/config) of -n resources (or the first of -resources) into DIR, for use with other load tools such as wrk, and exit")
	flag.Parse()

	switch {
	case *setup != "":
		n := o.n
		flag.Visit(func(f *flag.Flag) { // -resources, as before -n
			if f.Name == "resources" {
				ns, err := parseSizes("-resources", *sizes)
				if err != nil {
					fatalf("%v", err)
				}
				n = ns[0]
			}
		})
		raw, err := benchrepo.Generate(*setup, n, benchrepo.Layout(*layout))
		if err != nil {
			fatalf("%v", err)
		}
		fmt.Printf("generated %d resources (%d bytes) in %s\n", n, raw, *setup)
		return
	case *detail:
		ns, err := parseSizes("-resources", *sizes)
		if err != nil {
			fatalf("%v", err)
		}
		for _, n := range ns {
			if err := run(o.cupd, n, benchrepo.Layout(*layout), *dClients, *dGetFor, *dLists, *dWrites, *watchers); err != nil {
				fatalf("%d resources: %v", n, err)
			}
		}
		return
	}

	var err error
	if o.rows, err = selectRows(*rows); err != nil {
		fatalf("%v", err)
	}
	if o.flagSizes, err = parseSizes("-flagfile-entries", *flagSizes); err != nil {
		fatalf("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	t, err := figures(ctx, o)
	if t != nil {
		t.print(os.Stdout)
	}
	if err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "cupbench: "+format+"\n", args...)
	os.Exit(1)
}

// parseSizes parses a comma-separated list of positive numbers.
func parseSizes(name, s string) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive number", name, f)
		}
		ns = append(ns, n)
	}
	return ns, nil
}
