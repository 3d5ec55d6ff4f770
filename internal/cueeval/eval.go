package cueeval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// envWorker is the environment variable that makes Worker take over the
// process; its value is the size of the request in bytes.
const envWorker = "CUP_CUEEVAL_WORKER"

// The exit codes of a worker. Any other code (a Go panic or fatal error
// exits with 2) is a crash.
const (
	exitOK         = 0
	exitBadRequest = 5  // the request could not be read
	exitMemory     = 66 // the watchdog saw the heap pass MaxMemory
	exitTimeout    = 67 // the worker's own fuse, should the caller not kill it
)

// maxStderr bounds how much of a worker's stderr is kept for messages.
const maxStderr = 16 << 10

// waitDelay is how long Eval waits for a killed worker's output to close.
const waitDelay = 2 * time.Second

// request is what Eval sends a worker on its stdin.
type request struct {
	Layers         []Layer
	Schema         string
	SchemaPath     string
	Timeout        time.Duration
	MaxMemory      int64
	MaxResultBytes int
	MaxNesting     int
}

// response is what a worker answers on its stdout: exactly one of its
// fields is set.
type response struct {
	// JSON is the canonical result.
	JSON []byte `json:",omitempty"`
	// Problems make an *Error.
	Problems []Problem `json:",omitempty"`
	// Limit is the message of an error wrapping ErrLimit.
	Limit string `json:",omitempty"`
	// Failure is the message of any other error.
	Failure string `json:",omitempty"`
}

// workerReady is set by Worker when it returns, so that Eval can refuse to
// start the executable again in a program that would not act as a worker.
var workerReady atomic.Bool

// Eval unifies layers (sorted by Ref first, so that order never matters),
// then the schema, checks that the result is concrete (cue.Concrete(true))
// and returns it as canonical JSON.
//
// It evaluates in a child process, the running executable started again as
// a worker (see [Worker], which the program must have called), so that a
// hostile layer costs at most the bounds of o: the child is killed when
// o.Timeout passes or ctx ends. A configuration that does not unify, does
// not compile or is not concrete is an [*Error]; a bound exceeded is an
// error wrapping [ErrLimit]; an ended ctx is an error wrapping ctx's error.
// Eval is safe for concurrent use; each call starts its own child.
func Eval(ctx context.Context, layers []Layer, o Options) (*Result, error) {
	o = o.withDefaults()
	if !workerReady.Load() {
		return nil, errors.New("cueeval: Worker was not called at the start of the program")
	}
	req, err := newRequest(layers, o)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("cueeval: encoding the request: %w", err)
	}
	resp, err := run(ctx, data, o)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.Limit != "":
		return nil, &limitError{msg: resp.Limit}
	case resp.Failure != "":
		return nil, fmt.Errorf("cueeval: %s", resp.Failure)
	case len(resp.Problems) > 0:
		return nil, &Error{Problems: resp.Problems}
	}
	return &Result{JSON: resp.JSON}, nil
}

// newRequest checks layers against o's bounds and returns the request for
// a worker.
func newRequest(layers []Layer, o Options) (*request, error) {
	source, files := len(o.Schema), 0
	for _, l := range layers {
		if l.Values != nil && l.CUE != "" {
			return nil, fmt.Errorf("cueeval: layer %s has both values and CUE source", l.Ref)
		}
		source += len(l.Values) + len(l.CUE)
		files += len(l.File)
	}
	if source > o.MaxSourceBytes {
		return nil, limitf("CUE sources total %d bytes, more than %d", source, o.MaxSourceBytes)
	}
	req := &request{
		Layers:         layers,
		Schema:         o.Schema,
		SchemaPath:     o.SchemaPath,
		Timeout:        o.Timeout,
		MaxMemory:      o.MaxMemory,
		MaxResultBytes: o.MaxResultBytes,
		MaxNesting:     o.MaxNesting,
	}
	if files > o.MaxSourceBytes {
		// The files only place positions: drop them rather than fail.
		req.Layers = make([]Layer, len(layers))
		for i, l := range layers {
			l.File = nil
			req.Layers[i] = l
		}
	}
	return req, nil
}

// run starts a worker, sends it req and returns its response, or an error
// when the worker exceeded a bound, crashed or ctx ended.
func run(ctx context.Context, req []byte, o Options) (*response, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cueeval: finding the executable to start as a worker: %w", err)
	}
	runCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, exe)
	cmd.Env = append(os.Environ(),
		envWorker+"="+strconv.Itoa(len(req)),
		// A binary built with -race otherwise waits a second when it exits.
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"),
	)
	cmd.Stdin = bytes.NewReader(req)
	// The result is base64 in the response; problems are bounded in number
	// and length by the worker.
	stdout := &boundedBuffer{max: o.MaxResultBytes/3*4 + 1<<20}
	stderr := &boundedBuffer{max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	isolate(cmd)
	cmd.WaitDelay = waitDelay
	runErr := cmd.Run()

	var exitErr *exec.ExitError
	exited := errors.As(runErr, &exitErr)
	switch {
	case exited && exitErr.ExitCode() == exitMemory:
		return nil, limitf("CUE evaluation used more than %s", formatBytes(o.MaxMemory))
	case ctx.Err() != nil:
		return nil, fmt.Errorf("cueeval: %w", context.Cause(ctx))
	case runErr != nil && runCtx.Err() != nil, exited && exitErr.ExitCode() == exitTimeout:
		return nil, limitf("CUE evaluation took more than %v", o.Timeout)
	case exited:
		// The runtime's fatal errors start a line of their own; a panic's
		// message, which may quote a layer, starts with "panic: ".
		msg := stderr.String()
		switch {
		case strings.HasPrefix(msg, "runtime: goroutine stack exceeds"), strings.Contains(msg, "\nfatal error: stack overflow"):
			return nil, limitf("CUE evaluation recursed too deeply")
		case strings.HasPrefix(msg, "fatal error: runtime: out of memory"), strings.Contains(msg, "\nfatal error: runtime: out of memory"):
			return nil, limitf("CUE evaluation used more than %s", formatBytes(o.MaxMemory))
		}
		return nil, fmt.Errorf("cueeval: the worker failed (%v): %s", exitErr, firstLines(msg, 5))
	case runErr != nil:
		return nil, fmt.Errorf("cueeval: running the worker: %w", runErr)
	}
	if stdout.overflow {
		return nil, limitf("CUE evaluation answered more than %d bytes", stdout.max)
	}
	var resp response
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return nil, fmt.Errorf("cueeval: reading the worker's response: %w", err)
	}
	return &resp, nil
}

// boundedBuffer keeps the first max bytes written to it and discards the
// rest, so that a worker that writes too much is neither blocked nor kept
// in memory.
type boundedBuffer struct {
	bytes.Buffer
	max      int
	overflow bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.overflow = true
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// firstLines returns at most n of s's first lines, joined with "; ".
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "; ")
}

// formatBytes formats n in MiB when it is a whole number of them.
func formatBytes(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
