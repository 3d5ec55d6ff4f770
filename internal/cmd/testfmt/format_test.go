package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// clock is a fake time that moves only when told.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// TestFormat runs the formatter over the output of `go test -json` on a
// module whose packages pass, skip, fail in subtests, panic, fail to build
// and have no tests (testdata/sample.json).
func TestFormat(t *testing.T) {
	t.Parallel()
	in, err := os.ReadFile("testdata/sample.json")
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var out bytes.Buffer
	f := newFormatter(&out, c.now)
	if err := f.run(bytes.NewReader(in), 0); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	t.Log("\n" + got)
	for _, want := range []string{
		// A failed subtest, with its message of two lines, in full.
		"--- FAIL x/a TestFail/sub (0.00s)\n      a_test.go:6: want 1\n          got 2\n",
		"--- FAIL x/a TestFailTop (0.00s)\n      a_test.go:9: context\n      a_test.go:9: boom\n",
		"FAIL  x/a ",
		"2 passed, 1 skipped, 3 failed\n",
		"panic: assignment to entry in nil map",
		"FAIL  x/c                                                     [build failed: x/c [x/c.test]]\n  # x/c [x/c.test]\n  c/c_test.go:3:32: undefined: undefined\n",
		"0 packages ok, 3 failed, 1 without tests; tests: 2 passed, 1 skipped, 4 failed;",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The parent of a failed subtest has no output of its own to show.
	if strings.Contains(got, "--- FAIL x/a TestFail (") {
		t.Error("TestFail printed although only its subtest has output")
	}
	if strings.Contains(got, "=== RUN") || strings.Contains(got, "x/d") {
		t.Error("output holds === lines or the package without tests")
	}
	if !f.failed() {
		t.Error("failed() = false")
	}
}

func TestFormatPass(t *testing.T) {
	t.Parallel()
	in := `{"Action":"start","Package":"x/p"}
{"Action":"run","Package":"x/p","Test":"TestA"}
{"Action":"output","Package":"x/p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"x/p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"x/p","Test":"TestA","Elapsed":2.5}
{"Action":"output","Package":"x/p","Output":"ok  \tx/p\t1.5s\n"}
{"Action":"pass","Package":"x/p","Elapsed":1.5}
`
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var out bytes.Buffer
	f := newFormatter(&out, c.now)
	if err := f.run(strings.NewReader(in), 0); err != nil {
		t.Fatal(err)
	}
	want := "ok    x/p                                                         1.5s  1 passed\n\n" +
		"1 packages ok, 0 failed, 0 without tests; tests: 1 passed, 0 skipped, 0 failed; 0s\n" +
		"slowest tests: x/p TestA 2.5s;\n"
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	if f.failed() {
		t.Error("failed() = true")
	}
}

// TestStillRunning checks the note on packages still running, which comes
// only when no package finished for a while.
func TestStillRunning(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var out bytes.Buffer
	f := newFormatter(&out, c.now)
	f.line(`{"Action":"start","Package":"x/slow"}`)
	c.t = c.t.Add(30 * time.Second)
	f.line(`{"Action":"start","Package":"x/fast"}`)
	f.line(`{"Action":"pass","Package":"x/fast","Elapsed":0.1}`)
	c.t = c.t.Add(30 * time.Second)
	f.stillRunning(time.Minute)
	if strings.Contains(out.String(), "running") {
		t.Fatalf("a note 30s after a package finished:\n%s", out.String())
	}
	c.t = c.t.Add(30 * time.Second)
	f.stillRunning(time.Minute)
	if want := "...   1m30s elapsed; running: x/slow (1m30s)\n"; !strings.HasSuffix(out.String(), want) {
		t.Fatalf("output:\n%s\nwant it to end in %q", out.String(), want)
	}
}
