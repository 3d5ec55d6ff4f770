package cueeval_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/cueeval"
)

// hostile are the bounds the hostile layers are evaluated within, small so
// that the tests are fast.
var hostile = cueeval.Options{Timeout: 2 * time.Second, MaxMemory: 64 << 20}

// TestHostile checks that hostile layers end, within their bounds, with an
// error wrapping ErrLimit that says which bound they exceeded.
func TestHostile(t *testing.T) {
	t.Parallel()
	var disjunctions strings.Builder
	for i := range 40 {
		fmt.Fprintf(&disjunctions, "x: {a%d: 1} | {b%d: 1}\n", i, i)
	}
	for _, tc := range []struct {
		name string
		cue  string
		o    cueeval.Options
		want string // a regular expression matching the message
	}{{
		name: "disjunction bomb",
		cue:  disjunctions.String(),
		want: "CUE evaluation (took more than 2s|used more than 64 MiB)",
	}, {
		name: "comprehension bomb",
		cue:  "import \"list\"\na: [for x in list.Range(0, 100000, 1) for y in list.Range(0, 100000, 1) {x+y}]",
		want: "CUE evaluation (took more than 2s|used more than 64 MiB)",
	}, {
		name: "time bound",
		cue:  "import \"list\"\na: [for x in list.Range(0, 100000, 1) for y in list.Range(0, 100000, 1) {x+y}]",
		o:    cueeval.Options{Timeout: time.Second, MaxMemory: 1 << 30},
		want: "CUE evaluation took more than 1s",
	}, {
		// No bracket, but CUE's parser and evaluator recurse once per +.
		name: "deep recursion",
		cue:  "a: 1" + strings.Repeat("+1", 100000),
		o:    cueeval.Options{Timeout: 10 * time.Second, MaxMemory: 128 << 20},
		want: "CUE evaluation recursed too deeply",
	}, {
		name: "memory hog",
		// A thousand strings of a million bytes each.
		cue:  "import \"list\"\nimport \"strings\"\nx: strings.Repeat(\"y\", 1000000)\na: [for i in list.Range(0, 1000, 1) {\"\\(x)\\(i)\"}]",
		o:    cueeval.Options{Timeout: 10 * time.Second},
		want: "CUE evaluation used more than 64 MiB",
	}, {
		name: "deep nesting",
		cue:  strings.Repeat("a: {", 10000) + strings.Repeat("}", 10000),
		want: "the CUE of hostile nests more than 100 levels deep",
	}, {
		name: "deep list",
		cue:  "a: " + strings.Repeat("[", 101) + strings.Repeat("]", 101),
		want: "nests more than 100 levels deep",
	}, {
		name: "huge source",
		cue:  "a: \"" + strings.Repeat("x", 1<<20) + "\"",
		want: "CUE sources total 1048581 bytes, more than 1048576",
	}, {
		name: "huge result",
		cue:  "import \"list\"\na: [for i in list.Range(0, 1000, 1) {\"0123456789\"}]",
		o:    cueeval.Options{MaxResultBytes: 10000},
		want: "the unified configuration takes 13007 bytes of JSON, more than 10000",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := tc.o
			if o.Timeout == 0 {
				o.Timeout = hostile.Timeout
			}
			if o.MaxMemory == 0 {
				o.MaxMemory = hostile.MaxMemory
			}
			start := time.Now()
			res, err := cueeval.Eval(t.Context(), []cueeval.Layer{{Ref: "hostile", Path: "hostile.cue", CUE: tc.cue}}, o)
			took := time.Since(start)
			t.Logf("took %v: %v", took, err)
			if !errors.Is(err, cueeval.ErrLimit) || !regexp.MustCompile(tc.want).MatchString(err.Error()) {
				t.Errorf("Eval = %v, %v; want an ErrLimit saying %q", res, err, tc.want)
			}
			if limit := o.Timeout + 3*time.Second; took > limit {
				t.Errorf("Eval took %v, more than %v", took, limit)
			}
		})
	}
}

// TestCancel checks that an ended context ends an evaluation at once, with
// the context's error rather than ErrLimit.
func TestCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cueeval.Eval(ctx, []cueeval.Layer{{Ref: "slow", CUE: "import \"list\"\na: [for x in list.Range(0, 100000, 1) for y in list.Range(0, 100000, 1) {x+y}]"}}, cueeval.Options{})
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, cueeval.ErrLimit) {
		t.Errorf("Eval = %v, want the context's error", err)
	}
	if took > 2*time.Second {
		t.Errorf("Eval took %v after the context ended", took)
	}
}

// TestWorkerCrash checks that a worker that panics is an error of Eval, not
// a crash of its caller. It sets the environment, so it is not parallel.
func TestWorkerCrash(t *testing.T) {
	t.Setenv(envCrash, "1")
	_, err := cueeval.Eval(t.Context(), []cueeval.Layer{{Ref: "a", CUE: "a: 1"}}, cueeval.Options{})
	if ce := (*cueeval.Error)(nil); err == nil || errors.As(err, &ce) || errors.Is(err, cueeval.ErrLimit) ||
		!strings.Contains(err.Error(), "a worker crashing on purpose") {
		t.Errorf("Eval = %v, want the worker's failure", err)
	}
	if err != nil {
		t.Log(err)
	}
}
