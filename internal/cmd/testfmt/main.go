// Command testfmt turns the output of `go test -json` on its standard input
// into progress a person can follow: a line per package as it finishes,
// each failed test in full with its output as soon as it fails, a note
// every -every on the packages still running, and a summary. It exits 1
// when any package or test failed or did not build, so that
//
//	go test -json ./... | testfmt
//
// under `set -o pipefail` fails as go test does. `make test` and `make
// test-short` run the Go tests through it.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	every := flag.Duration("every", time.Minute, "how often to name the packages still running when none finished (0: never)")
	flag.Parse()
	f := newFormatter(os.Stdout, time.Now)
	if err := f.run(os.Stdin, *every); err != nil {
		fmt.Fprintln(os.Stderr, "testfmt:", err)
		os.Exit(2)
	}
	if f.failed() {
		os.Exit(1)
	}
}
