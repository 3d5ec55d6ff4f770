package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cup-dev/cup/internal/cupdproc"
)

// allRows are the rows of the table, in the order it shows them.
var allRows = []string{"writes", "put", "list", "get", "rss", "startup", "flagfile", "trivial"}

// loadRows are the rows measured on one cupd serving the large
// repository.
var loadRows = []string{"get", "trivial", "put", "writes", "rss"}

// options are the settings of a run of the table.
type options struct {
	cupd, baseline string
	rows           map[string]bool
	n, small       int
	writers        int
	writeFor       time.Duration
	writeMax       int
	puts           int
	firstGets      int
	clients        int
	getFor         time.Duration
	getMax         int
	lists          int
	starts         int
	flagSizes      []int
	flagRequests   int
	flagBudget     time.Duration
	cacheFlag      string
	cupdArgs       string
	phaseTimeout   time.Duration
	// tmp is where the repositories and logs go; empty: a new directory
	// under os.TempDir, removed at the end.
	tmp string
	// progress gets a line as each phase starts; nil: standard error.
	progress io.Writer
}

// defaultOptions are the defaults of the flags: about four minutes a
// binary on two cores.
func defaultOptions() *options {
	return &options{
		n: 10000, small: 1000,
		writers: 64, writeFor: 5 * time.Second, writeMax: 5000,
		puts: 50, firstGets: 1000,
		clients: 64, getFor: 5 * time.Second, getMax: 200000,
		lists: 3, starts: 3,
		flagSizes: []int{1000, 10000}, flagRequests: 30, flagBudget: 8 * time.Second,
		phaseTimeout: 3 * time.Minute,
	}
}

func selectRows(s string) (map[string]bool, error) {
	rows := map[string]bool{}
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		if r == "all" {
			for _, a := range allRows {
				rows[a] = true
			}
			continue
		}
		if !slices.Contains(allRows, r) {
			return nil, fmt.Errorf("-rows: %q is none of %s", r, strings.Join(allRows, ", "))
		}
		rows[r] = true
	}
	return rows, nil
}

// binary is one cupd binary under measurement.
type binary struct {
	label string // "before" or "after"
	col   int    // its column in the table
	path  string
	// trivial: it has --bench-trivial (cupd after fd76400).
	trivial bool
	// cacheFlag is its flag for a WASM compile cache directory, empty
	// when it has none.
	cacheFlag string
	dir       string // its logs and repository copies
}

// figures measures every selected row for each binary and returns the
// table; an error stops the run, with the figures so far in the table.
func figures(ctx context.Context, o *options) (*table, error) {
	if o.progress == nil {
		o.progress = os.Stderr
	}
	tmp := o.tmp
	if tmp == "" {
		var err error
		if tmp, err = os.MkdirTemp("", "cupbench-*"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
	}
	var bins []*binary
	paths := []string{o.cupd}
	labels := []string{"value"}
	if o.baseline != "" {
		paths = []string{o.baseline, o.cupd}
		labels = []string{"before", "after"}
	}
	for i, p := range paths {
		b, err := inspect(ctx, p, o.cacheFlag)
		if err != nil {
			return nil, err
		}
		b.label, b.col, b.dir = labels[i], i, filepath.Join(tmp, labels[i])
		if err := os.MkdirAll(b.dir, 0o755); err != nil {
			return nil, err
		}
		bins = append(bins, b)
	}
	t := newTable(labels)
	for _, b := range bins {
		t.note(fmt.Sprintf("%s: %s (trivial procedure: %v; WASM cache flag: %s)", b.label, b.path, b.trivial, or(b.cacheFlag, "none")))
	}
	start := time.Now()
	defer func() { t.note(fmt.Sprintf("the run took %v", time.Since(start).Round(time.Second))) }()

	data, err := prepare(o, filepath.Join(tmp, "data"), t)
	if err != nil {
		return t, err
	}
	type phase struct {
		name string
		on   bool
		run  func(context.Context, *binary) error
	}
	phases := []phase{
		{"list", o.rows["list"], func(ctx context.Context, b *binary) error { return measureLists(ctx, o, b, data, t) }},
		{"load", slices.ContainsFunc(loadRows, func(r string) bool { return o.rows[r] }), func(ctx context.Context, b *binary) error {
			return measureLoad(ctx, o, b, data, t)
		}},
		{"put", o.rows["put"], func(ctx context.Context, b *binary) error { return measureSmallPuts(ctx, o, b, data, t) }},
		{"startup", o.rows["startup"], func(ctx context.Context, b *binary) error { return measureStartup(ctx, o, b, t) }},
		{"flagfile", o.rows["flagfile"], func(ctx context.Context, b *binary) error { return measureFlagfile(ctx, o, b, data, t) }},
	}
	var errs []error
	for _, p := range phases {
		if !p.on {
			continue
		}
		for _, b := range bins {
			fmt.Fprintf(o.progress, "cupbench: %s: %s (%v so far)\n", b.label, p.name, time.Since(start).Round(time.Second))
			pctx, cancel := context.WithTimeoutCause(ctx, o.phaseTimeout, fmt.Errorf("phase %s took longer than -phase-timeout %v", p.name, o.phaseTimeout))
			err := p.run(pctx, b)
			cancel()
			if err != nil {
				// The other phases still run: one that fails leaves its
				// rows without figures, and the error under the table.
				err = fmt.Errorf("%s: %s: %w", b.label, p.name, err)
				t.note("error: " + err.Error())
				errs = append(errs, err)
			}
		}
	}
	if o.rows["put"] {
		for _, b := range bins {
			t.ratio("put", fmt.Sprintf("PUT p50, N=%d / N=%d", o.n, o.small), "≤ 1.3×", b.col,
				fmt.Sprintf("PUT p50, lone sequential writer, N=%d", o.n), fmt.Sprintf("PUT p50, lone sequential writer, N=%d", o.small))
		}
	}
	if o.rows["trivial"] {
		ratioTrivial(t, bins)
	}
	return t, errors.Join(errs...)
}

// ratioTrivial adds the ratio of cupd's GET throughput to the trivial
// procedure's. A binary without the trivial procedure is compared with
// the other binary's, which the note says.
func ratioTrivial(t *table, bins []*binary) {
	for _, b := range bins {
		if !b.trivial && len(bins) > 1 {
			t.note(fmt.Sprintf("%s has no --bench-trivial: its ratios divide by the trivial throughput of the other binary (the same net/http and connect-go stack, a different process)", b.label))
		}
	}
	ratioTrivialOf(t, bins, "GET throughput, cupd REST", "throughput ratio, cupd REST GET / trivial")
	ratioTrivialOf(t, bins, "GET throughput, cupd Connect Get", "throughput ratio, cupd Connect Get / trivial")
}

func ratioTrivialOf(t *table, bins []*binary, get, name string) {
	triv := "throughput, trivial Connect procedure"
	for _, b := range bins {
		col := b.col
		if !b.trivial {
			for _, o := range bins {
				if o.trivial {
					col = o.col
				}
			}
		}
		n, d := t.get("trivial", get, b.col), t.get("trivial", triv, col)
		if n == nil || d == nil || *d == 0 {
			continue
		}
		t.set("trivial", name, "×", "≥ 0.67", b.col, *n / *d, "")
	}
}

// inspect reads what bin offers from its --help: the trivial procedure
// and the WASM compile cache flag (cacheFlag when set).
func inspect(ctx context.Context, bin, cacheFlag string) (*binary, error) {
	help, err := exec.CommandContext(ctx, bin, "serve", "--help").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s serve --help: %v: %.300s", bin, err, help)
	}
	b := &binary{path: bin, cacheFlag: cacheFlag}
	// --bench-trivial is hidden: --help with it exits 0 only when cupd
	// knows it.
	b.trivial = exec.CommandContext(ctx, bin, "serve", "--bench-trivial", "--help").Run() == nil
	if b.cacheFlag == "" {
		if m := regexp.MustCompile(`--(wasm[a-z-]*cache[a-z-]*)`).FindSubmatch(help); m != nil {
			b.cacheFlag = string(m[1])
		}
	} else if !strings.Contains(string(help), "--"+cacheFlag+" ") {
		b.cacheFlag = "" // this binary lacks it
	}
	return b, nil
}

// startCupd starts b on the repository at repo with the configuration
// cfg (empty: the repository's .cup/ alone), its log in b.dir/name.log.
func startCupd(ctx context.Context, o *options, b *binary, name, repo, cfg string, extra ...string) (*cupdproc.Process, error) {
	args := []string{"serve", "--repository", repo, "--address", "127.0.0.1:0", "--log-level", "warn", "--log-format", "json"}
	if cfg != "" {
		args = append(args, "--config", cfg)
	}
	args = append(args, extra...)
	args = append(args, strings.Fields(o.cupdArgs)...)
	return cupdproc.Start(ctx, b.path, filepath.Join(b.dir, name+".log"), args...)
}

// stop stops p and turns what went wrong into an error.
func stop(p *cupdproc.Process) error {
	if f := p.Stop(10 * time.Second); len(f) > 0 {
		return errors.New(strings.Join(f, "; "))
	}
	return nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
