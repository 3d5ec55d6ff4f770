package filewatch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/filewatch"
)

// files is a Source held in memory: its state is a version and a text, and
// it parses any text but "bad". With a gate, each Read waits at the gate,
// so that a test knows which checks of Run have happened.
type files struct {
	gate *gate

	mu      sync.Mutex
	version int
	text    string
	readErr error
	parses  int
}

type state struct {
	version int
	text    string
}

var _ filewatch.Source[state, string] = (*files)(nil)

// set changes the files, or makes reading them fail with readErr.
func (f *files) set(text string, readErr error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version++
	f.text, f.readErr = text, readErr
}

func (f *files) Read() (state, error) {
	if f.gate != nil {
		f.gate.wait()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return state{f.version, f.text}, f.readErr
}

func (*files) Same(prev, cur state) bool { return prev.version == cur.version }

func (f *files) Parse(s state) (*string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.parses++
	if s.text == "bad" {
		return nil, errors.New("bad text")
	}
	return &s.text, nil
}

func (f *files) parseCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.parses
}

// gate holds each Read until the test lets it through.
type gate struct {
	arrive, proceed, stop chan struct{}
}

func newGate() *gate {
	return &gate{arrive: make(chan struct{}), proceed: make(chan struct{}), stop: make(chan struct{})}
}

// wait announces a Read and waits until the test lets it proceed, or
// stops the gate.
func (g *gate) wait() {
	select {
	case g.arrive <- struct{}{}:
	case <-g.stop:
		return
	}
	select {
	case <-g.proceed:
	case <-g.stop:
	}
}

// records is a slog.Handler that keeps each record as "LEVEL msg k=v ...".
type records struct {
	mu    sync.Mutex
	lines []string
}

func (*records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler     { return r }
func (r *records) WithGroup(string) slog.Handler          { return r }

func (r *records) Handle(_ context.Context, rec slog.Record) error {
	line := rec.Level.String() + " " + rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		line += fmt.Sprintf(" %s=%v", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
	return nil
}

// take returns the lines logged since the last call.
func (r *records) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.lines
	r.lines = nil
	return out
}

func newValue(src *files) (*filewatch.Value[state, string], *records) {
	logs := &records{}
	v := filewatch.New(src, filewatch.Log[string]{
		Logger:        slog.New(logs),
		Attrs:         []any{"path", "/p"},
		ReadFailed:    "read failed",
		Invalid:       "invalid",
		Reloaded:      "reloaded",
		ReloadedAttrs: func(s *string) []any { return []any{"text", *s} },
	})
	return v, logs
}

func current(v *filewatch.Value[state, string]) string {
	if s := v.Load(); s != nil {
		return *s
	}
	return "<nil>"
}

func TestReload(t *testing.T) {
	t.Parallel()
	src := &files{}
	v, logs := newValue(src)
	if got := v.Load(); got != nil {
		t.Errorf("Load before Reload = %q, want nil", *got)
	}
	for _, step := range []struct {
		text    string
		readErr string
		wantErr string
		want    string
	}{
		{text: "one", want: "one"},
		{text: "bad", wantErr: "bad text", want: "one"},
		{text: "two", readErr: "no such file", wantErr: "no such file", want: "one"},
		{text: "two", want: "two"},
		{text: "two", want: "two"},
	} {
		var readErr error
		if step.readErr != "" {
			readErr = errors.New(step.readErr)
		}
		src.set(step.text, readErr)
		err := v.Reload()
		if got := fmt.Sprint(err); (err != nil || step.wantErr != "") && got != step.wantErr {
			t.Errorf("Reload(%q, %v) = %v, want %v", step.text, readErr, err, step.wantErr)
		}
		if got := current(v); got != step.want {
			t.Errorf("after Reload(%q, %v): Load = %q, want %q", step.text, readErr, got, step.want)
		}
	}
	if got := logs.take(); got != nil {
		t.Errorf("Reload logged %q, want nothing", got)
	}
}

func TestRun(t *testing.T) {
	t.Parallel()
	src := &files{}
	src.set("one", nil)
	v, logs := newValue(src)
	if err := v.Reload(); err != nil {
		t.Fatal(err)
	}
	src.gate = newGate()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- v.Run(ctx, time.Millisecond) }()
	defer func() {
		cancel()
		close(src.gate.stop)
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	}()
	<-src.gate.arrive // the first check waits to read
	// checks lets n checks run, and returns once they are done and the
	// next one waits to read.
	checks := func(n int) {
		for range n {
			src.gate.proceed <- struct{}{}
			<-src.gate.arrive
		}
	}
	want := func(what string, wantLogs ...string) {
		t.Helper()
		if got := logs.take(); !slices.Equal(got, wantLogs) {
			t.Errorf("%s: logged %q, want %q", what, got, wantLogs)
		}
	}

	checks(3)
	want("unchanged files")

	src.set("two", nil)
	checks(3)
	if got := current(v); got != "two" {
		t.Errorf("after a change: Load = %q, want two", got)
	}
	want("a change", "INFO reloaded path=/p text=two")

	src.set("bad", nil)
	parses := src.parseCount()
	checks(3)
	if got := src.parseCount() - parses; got != 1 {
		t.Errorf("invalid files parsed %d times, want once", got)
	}
	if got := current(v); got != "two" {
		t.Errorf("after an invalid change: Load = %q, want two", got)
	}
	want("an invalid change", "WARN invalid path=/p error=bad text")

	src.set("three", errors.New("gone"))
	checks(3)
	want("read failures, logged once", "WARN read failed path=/p error=gone")

	src.set("three", nil)
	checks(1)
	if got := current(v); got != "three" {
		t.Errorf("after recovering: Load = %q, want three", got)
	}
	want("recovering", "INFO reloaded path=/p text=three")
}

func TestRunStops(t *testing.T) {
	t.Parallel()
	v := filewatch.New[state, string](&files{}, filewatch.Log[string]{}) // logs nothing
	for _, interval := range []time.Duration{0, -1, time.Hour} {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := v.Run(ctx, interval); err != nil {
			t.Errorf("Run(%v) = %v, want nil", interval, err)
		}
	}
}
