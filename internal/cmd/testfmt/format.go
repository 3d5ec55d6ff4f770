package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string // build-output and build-fail
	FailedBuild string // a package's fail: the package whose build failed
}

// pkgState is what the formatter keeps of a package until it finishes.
type pkgState struct {
	started time.Time
	// output is the package's own lines (those of no test), printed when
	// it fails: a panic outside a test, a timeout, TestMain's words.
	output []string
	// tests holds each running test's lines, printed if it fails.
	tests                map[string][]string
	passed, failed, skip int
}

// timing is how long a top-level test took.
type timing struct {
	name    string // "pkg TestName"
	elapsed float64
}

// slowest is how many of the slowest tests the summary names.
const slowest = 5

// formatter prints a run's progress to out.
type formatter struct {
	out      io.Writer
	now      func() time.Time
	start    time.Time
	pkgs     map[string]*pkgState
	build    map[string][]string // build output, by import path
	last     time.Time           // when the last package finished
	okPkgs   int
	failPkgs []string
	noTests  int
	tests    struct{ passed, failed, skipped int }
	failures []string // "pkg TestName", in order
	slow     []timing // the slowest top-level tests, slowest first
	other    []string // lines that were not JSON: go vet, go build errors
}

func newFormatter(out io.Writer, now func() time.Time) *formatter {
	t := now()
	return &formatter{out: out, now: now, start: t, last: t, pkgs: map[string]*pkgState{}, build: map[string][]string{}}
}

// failed reports whether anything failed.
func (f *formatter) failed() bool { return len(f.failPkgs) > 0 || f.tests.failed > 0 }

// run reads events from r until it ends, then prints the summary. Every
// every without a package finishing it names the packages still running.
func (f *formatter) run(r io.Reader, every time.Duration) error {
	lines := make(chan string)
	errc := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		errc <- sc.Err()
	}()
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				f.summary()
				return <-errc
			}
			f.line(line)
		case <-tick:
			f.stillRunning(every)
		}
	}
}

// line handles one line of input.
func (f *formatter) line(line string) {
	var e event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil {
		// go test prints some errors (of the go command, of vet) as text.
		fmt.Fprintln(f.out, line)
		f.other = append(f.other, line)
		return
	}
	switch e.Action {
	case "build-output":
		f.build[e.ImportPath] = append(f.build[e.ImportPath], e.Output)
		return
	case "build-fail":
		return // printed with the package's fail
	}
	if e.Package == "" {
		return
	}
	p := f.pkgs[e.Package]
	if p == nil {
		p = &pkgState{started: f.now(), tests: map[string][]string{}}
		f.pkgs[e.Package] = p
	}
	if e.Test != "" {
		f.test(e, p)
		return
	}
	switch e.Action {
	case "output":
		p.output = append(p.output, e.Output)
	case "pass", "fail", "skip":
		f.finish(e, p)
	}
}

// test handles an event of one test.
func (f *formatter) test(e event, p *pkgState) {
	switch e.Action {
	case "output":
		if strings.HasPrefix(e.Output, "=== ") {
			return // RUN, PAUSE, CONT, NAME: noise in a failure's output
		}
		p.tests[e.Test] = append(p.tests[e.Test], e.Output)
	case "pass":
		p.passed++
		f.tests.passed++
		delete(p.tests, e.Test)
		if !strings.Contains(e.Test, "/") {
			f.timed(timing{e.Package + " " + e.Test, e.Elapsed})
		}
	case "skip":
		p.skip++
		f.tests.skipped++
		delete(p.tests, e.Test)
	case "fail":
		p.failed++
		f.tests.failed++
		f.failures = append(f.failures, e.Package+" "+e.Test)
		out := p.tests[e.Test]
		delete(p.tests, e.Test)
		// A parent that failed because a subtest did has only its
		// "--- FAIL" line left: the subtest's output is printed already.
		if strings.Contains(e.Test, "/") || !onlyFailLines(out) {
			fmt.Fprintf(f.out, "--- FAIL %s %s (%.2fs)\n", e.Package, e.Test, e.Elapsed)
			for _, l := range out {
				fmt.Fprint(f.out, indent(l))
			}
		}
	}
}

// finish prints the line of a package that finished.
func (f *formatter) finish(e event, p *pkgState) {
	delete(f.pkgs, e.Package)
	f.last = f.now()
	counts := fmt.Sprintf("%d passed", p.passed)
	if p.skip > 0 {
		counts += fmt.Sprintf(", %d skipped", p.skip)
	}
	if p.failed > 0 {
		counts += fmt.Sprintf(", %d failed", p.failed)
	}
	switch {
	case e.Action == "skip" || e.Action == "pass" && p.passed+p.skip+p.failed == 0 && noTestFiles(p.output):
		f.noTests++
		return // no test files: not worth a line
	case e.Action == "pass":
		f.okPkgs++
		fmt.Fprintf(f.out, "ok    %-55s %7.1fs  %s\n", e.Package, e.Elapsed, counts)
		return
	}
	f.failPkgs = append(f.failPkgs, e.Package)
	if b := f.build[e.FailedBuild]; len(b) > 0 || e.FailedBuild != "" {
		fmt.Fprintf(f.out, "FAIL  %-55s [build failed: %s]\n", e.Package, e.FailedBuild)
		for _, l := range b {
			fmt.Fprint(f.out, indent(l))
		}
		delete(f.build, e.FailedBuild)
		return
	}
	fmt.Fprintf(f.out, "FAIL  %-55s %7.1fs  %s\n", e.Package, e.Elapsed, counts)
	// Tests that never finished (a panic, a timeout) and the package's
	// own lines.
	names := make([]string, 0, len(p.tests))
	for name := range p.tests {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if out := p.tests[name]; len(out) > 0 {
			fmt.Fprintf(f.out, "      (unfinished) %s\n", name)
			for _, l := range out {
				fmt.Fprint(f.out, indent(l))
			}
		}
	}
	for _, l := range p.output {
		if t := strings.TrimSpace(l); t == "FAIL" || t == "PASS" || strings.HasPrefix(t, "FAIL\t"+e.Package) {
			continue
		}
		fmt.Fprint(f.out, indent(l))
	}
}

// timed keeps tm if it is among the slowest tests.
func (f *formatter) timed(tm timing) {
	if tm.elapsed < 1 {
		return
	}
	i, _ := slices.BinarySearchFunc(f.slow, tm, func(a, b timing) int { return cmp.Compare(b.elapsed, a.elapsed) })
	f.slow = slices.Insert(f.slow, i, tm)
	if len(f.slow) > slowest {
		f.slow = f.slow[:slowest]
	}
}

// stillRunning names the packages still running, when none finished for
// every.
func (f *formatter) stillRunning(every time.Duration) {
	now := f.now()
	if now.Sub(f.last) < every || len(f.pkgs) == 0 {
		return
	}
	names := make([]string, 0, len(f.pkgs))
	for name, p := range f.pkgs {
		names = append(names, fmt.Sprintf("%s (%s)", name, now.Sub(p.started).Round(time.Second)))
	}
	slices.Sort(names)
	fmt.Fprintf(f.out, "...   %s elapsed; running: %s\n", now.Sub(f.start).Round(time.Second), strings.Join(names, ", "))
	f.last = now
}

// summary prints the totals and the failures again, so that they are the
// last thing on screen.
func (f *formatter) summary() {
	d := f.now().Sub(f.start).Round(100 * time.Millisecond)
	fmt.Fprintf(f.out, "\n%d packages ok, %d failed, %d without tests; tests: %d passed, %d skipped, %d failed; %s\n",
		f.okPkgs, len(f.failPkgs), f.noTests, f.tests.passed, f.tests.skipped, f.tests.failed, d)
	if len(f.slow) > 0 {
		fmt.Fprint(f.out, "slowest tests:")
		for _, tm := range f.slow {
			fmt.Fprintf(f.out, " %s %.1fs;", tm.name, tm.elapsed)
		}
		fmt.Fprintln(f.out)
	}
	for _, p := range f.failPkgs {
		fmt.Fprintf(f.out, "FAIL  %s\n", p)
	}
	for _, t := range f.failures {
		fmt.Fprintf(f.out, "--- FAIL %s\n", t)
	}
}

// onlyFailLines reports whether out holds nothing but "--- FAIL" lines.
func onlyFailLines(out []string) bool {
	for _, l := range out {
		if !strings.HasPrefix(strings.TrimSpace(l), "--- FAIL") {
			return false
		}
	}
	return true
}

// noTestFiles reports whether a package's output says it has no tests.
func noTestFiles(out []string) bool {
	for _, l := range out {
		if strings.Contains(l, "[no test files]") {
			return true
		}
	}
	return false
}

// indent indents a line of output under its heading.
func indent(l string) string {
	if !strings.HasSuffix(l, "\n") {
		l += "\n"
	}
	return "  " + l
}
