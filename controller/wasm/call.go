package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/cup-dev/cup/controller"
)

// randSeed seeds each call's random source, so that a module reading random
// bytes reads the same ones every time.
var randSeed = [32]byte([]byte("cup.dev wasm controller rand src"))

// clock is the fake time of one call: like wazero's default clocks it
// starts at 2022-01-01T00:00:00Z and advances a millisecond per reading, and
// unlike them sleeping advances it rather than returning at once, which
// would make a Go program sleeping an hour read the clock 3.6 million times.
// Wall and monotonic time advance together.
type clock struct{ elapsed atomic.Int64 }

// clockEpoch is the wall time at which every call starts.
var clockEpoch = time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

func (c *clock) nanotime() int64 { return c.elapsed.Add(int64(time.Millisecond)) }

func (c *clock) walltime() (int64, int32) {
	t := clockEpoch + c.nanotime()
	return t / 1e9, int32(t % 1e9)
}

func (c *clock) sleep(ns int64) { c.elapsed.Add(max(ns, 0)) }

// call is one run of the module.
type call struct {
	// op names the call in messages: `module "x": get g/v Kind ns/name`.
	op    string
	verb  string
	typ   controller.Type
	args  []string // after the verb and the kind
	stdin []byte
	fs    experimentalsys.FS // mounted at "/"
	// exec marks a run of [Controller.Exec]: its arguments are the verb
	// and args, with no kind, and its environment is empty.
	exec bool
}

// result is how a module run ended: its exit code and what it wrote.
type result struct {
	exit           uint32
	stdout, stderr []byte
}

// run instantiates the module for one call and runs it to its end. The
// error is set when the module did not exit by itself: it was stopped by a
// limit or the caller, or it trapped. The caller interprets exit codes.
//
// With a memory budget, the call first waits for room for its memory limit,
// until ctx ends; the module's timeout starts once it has room.
func (c *Controller) run(ctx context.Context, cl *call) (res *result, err error) {
	ctx, end := c.startRun(ctx, cl)
	defer func() { end(runOutcome(res, err), exitCode(res), err) }()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", cl.op, err)
	}
	if c.budget != nil {
		pages := int64(c.spec.MemoryLimitPages)
		if err := c.budget.Acquire(ctx, pages); err != nil {
			return nil, fmt.Errorf("%s: waiting for room for %s of memory in the WASM controllers' budget: %w", cl.op, pagesSize(c.spec.MemoryLimitPages), err)
		}
		// Released once the instance is closed and its memory handed on
		// (mem.release below).
		defer c.budget.Release(pages)
	}
	parent := ctx
	ctx, cancelTimeout := context.WithTimeout(ctx, c.spec.Timeout)
	defer cancelTimeout()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	stdout := &cappedBuffer{max: c.spec.MaxOutputBytes, full: func() { stop(errOutputFull) }}
	stderr := &cappedBuffer{max: c.spec.MaxOutputBytes, full: func() { stop(errOutputFull) }}
	mem := &memoryLimiter{limit: uint64(c.spec.MemoryLimitPages) << 16}
	ctx = experimental.WithMemoryAllocator(ctx, mem)

	cfg := wazero.NewModuleConfig().WithName("")
	if cl.exec {
		cfg = cfg.WithArgs(append([]string{c.name, cl.verb}, cl.args...)...)
	} else {
		cfg = cfg.
			WithArgs(append([]string{c.name, cl.verb, cl.typ.Kind}, cl.args...)...).
			WithEnv("CUP_API_VERSION", cl.typ.APIVersion()).
			WithEnv("CUP_GROUP", cl.typ.Group).
			WithEnv("CUP_VERSION", cl.typ.Version).
			WithEnv("CUP_KIND", cl.typ.Kind).
			WithEnv("CUP_PLURAL", cl.typ.Plural)
	}
	cfg = cfg.
		WithStdin(bytes.NewReader(cl.stdin)).
		WithStdout(stdout).
		WithStderr(stderr).
		WithRandSource(rand.NewChaCha8(randSeed)).
		WithFSConfig(wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(cl.fs, "/"))
	var clk clock
	cfg = cfg.WithWalltime(clk.walltime, 1).WithNanotime(clk.nanotime, 1).WithNanosleep(clk.sleep)

	if c.prog.interruptible {
		cfg = cfg.WithStartFunctions() // started below, once it can be stopped
	}

	c.obs.alive.Inc()
	mod, err := c.prog.rt.InstantiateModule(ctx, c.prog.m, cfg)
	if err == nil && c.prog.interruptible {
		err = start(ctx, mod)
	}
	if mod != nil {
		_ = mod.Close(context.WithoutCancel(ctx))
	}
	c.obs.alive.Dec()
	mem.release()
	res = &result{stdout: stdout.buf.Bytes(), stderr: stderr.buf.Bytes()}
	if mem.hit.Load() || goCrashed(res.stderr) {
		c.logCrash(ctx, cl, res)
	}
	for _, b := range []struct {
		name string
		buf  *cappedBuffer
	}{{"stdout", stdout}, {"stderr", stderr}} {
		if b.buf.over {
			return nil, fmt.Errorf("%s: %w: the module wrote more than %d bytes to %s (maxOutputBytes)%s",
				cl.op, controller.ErrLimit, c.spec.MaxOutputBytes, b.name, said(res.stderr))
		}
	}
	var exit *sys.ExitError
	switch {
	case err == nil:
		return res, nil
	case mem.hit.Load():
		return nil, fmt.Errorf("%s: %w: the module ran out of its %s of memory; its controller's memoryLimitPages (now %d pages of 64 KiB) raises it%s",
			cl.op, controller.ErrLimit, pagesSize(c.spec.MemoryLimitPages), c.spec.MemoryLimitPages, outOfMemory(res.stderr))
	case errors.As(err, &exit) && exit.ExitCode() != sys.ExitCodeContextCanceled && exit.ExitCode() != sys.ExitCodeDeadlineExceeded:
		res.exit = exit.ExitCode()
		return res, nil
	case parent.Err() != nil:
		return nil, fmt.Errorf("%s: stopped by the caller: %w%s", cl.op, parent.Err(), said(res.stderr))
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return nil, fmt.Errorf("%s: stopped after the %s timeout: %w%s", cl.op, c.spec.Timeout, context.DeadlineExceeded, said(res.stderr))
	default:
		// A trap, or a failure to instantiate.
		return nil, fmt.Errorf("%s: %w: %s%s", cl.op, controller.ErrFailed, bounded(trimCrash(err.Error())), said(res.stderr))
	}
}

// start runs the _start function of mod, a module made interruptible
// (see interrupt.go), until it exits or ctx ends it, as InstantiateModule
// runs it for a module it starts: an exit with code 0 is no error. A module
// stopped because ctx ended returns ctx's error (so does one that trapped
// by itself just as ctx ended).
func start(ctx context.Context, mod api.Module) error {
	stop, ok := mod.ExportedGlobal(stopExport).(api.MutableGlobal)
	if !ok {
		return fmt.Errorf("%w: the module exports no %s global", controller.ErrFailed, stopExport)
	}
	var stopped atomic.Bool
	unwatch := context.AfterFunc(ctx, func() {
		stopped.Store(true)
		stop.Set(1)
	})
	_, err := mod.ExportedFunction("_start").Call(ctx)
	unwatch()
	var exit *sys.ExitError
	switch {
	case errors.As(err, &exit):
		if exit.ExitCode() == 0 {
			return nil
		}
		return err
	case err != nil && stopped.Load():
		return ctx.Err()
	case err != nil:
		return fmt.Errorf("module[%s] function[_start] failed: %w", mod.Name(), err)
	}
	return nil
}

// failure turns the non-zero exit of a call into an error:
//
//   - a message {"code": "invalid_argument" or "invalid", "message": "..."}
//     on stderr or stdout wraps controller.ErrInvalid, {"code":
//     "not_found", ...} controller.ErrNotFound;
//   - exit code 2 of get, list or delete wraps controller.ErrNotFound,
//     unless stderr shows the Go runtime crashed (it exits 2 too);
//   - exit code 1 of get or delete whose message ends in "not found" wraps
//     controller.ErrNotFound: the original Cup's controllers (its Flipt
//     controller, whose not-found error is not its SDK's) say so that way;
//   - anything else wraps controller.ErrFailed, with the exit code.
//
// Every message carries what the module said, bounded: the "message" of a
// JSON message, or else its stderr (or its stdout when stderr is empty),
// with a Go crash's goroutine dump cut off.
func failure(cl *call, res *result) error {
	for _, out := range [][]byte{res.stderr, res.stdout} {
		code, msg, ok := reported(out)
		if !ok {
			continue
		}
		switch code {
		case "invalid_argument", "invalid":
			return fmt.Errorf("%s: %w: %s", cl.op, controller.ErrInvalid, msg)
		case "not_found":
			return fmt.Errorf("%s: %w: %s", cl.op, controller.ErrNotFound, msg)
		}
	}
	crashed := goCrashed(res.stderr)
	if res.exit == 2 && cl.verb != "put" && !crashed {
		return fmt.Errorf("%s: %w%s", cl.op, controller.ErrNotFound, said(res.stderr))
	}
	words := message(res)
	if res.exit == 1 && (cl.verb == "get" || cl.verb == "delete") && !crashed &&
		strings.HasSuffix(strings.ToLower(strings.TrimRight(words, ". \n")), "not found") {
		return fmt.Errorf("%s: %w: %s", cl.op, controller.ErrNotFound, words)
	}
	if words != "" {
		words = ": " + words
	}
	return fmt.Errorf("%s: %w: exit code %d%s", cl.op, controller.ErrFailed, res.exit, words)
}

// message is what a failed module said, bounded: the "message" of a JSON
// message {"message": "..."} on stderr or stdout, or else stderr, or else
// stdout, as text, a Go crash's goroutine dump cut off.
func message(res *result) string {
	for _, out := range [][]byte{res.stderr, res.stdout} {
		if _, msg, ok := reportedMessage(out); ok && msg != "" {
			return msg
		}
	}
	out := res.stderr
	if len(bytes.TrimSpace(out)) == 0 {
		out = res.stdout
	}
	return bounded(trimCrash(string(out)))
}

// trimCrash cuts the stack traces off the Go runtime's report of a crash,
// keeping the panic or fatal error lines before them, and the stack trace
// off wazero's report of a trap; other text is returned whole.
func trimCrash(s string) string {
	if i := strings.Index(s, "\nwasm stack trace:"); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	if !goCrashed([]byte(s)) {
		return s
	}
	// The goroutine dump, and before it the stack of the runtime when it
	// failed in its own code (running out of memory, say).
	for _, trace := range []string{"\ngoroutine ", "\nruntime stack:"} {
		if i := strings.Index(s, trace); i >= 0 {
			s = s[:i]
		}
	}
	return strings.TrimSpace(s)
}

// outOfMemory renders what a module that ran out of memory said: the Go
// runtime's line on the allocation that failed, if any, without the rest
// of its report.
func outOfMemory(stderr []byte) string {
	for line := range strings.Lines(string(stderr)) {
		if strings.HasPrefix(line, "runtime: out of memory") || strings.HasPrefix(line, "fatal error: runtime: cannot allocate memory") {
			return ": " + bounded(strings.TrimPrefix(line, "fatal error: "))
		}
	}
	return said(stderr)
}

// reported finds an error message with a code a module wrote as JSON,
// {"code": "...", "message": "..."}: all of out, or its last line.
func reported(out []byte) (code, message string, ok bool) {
	code, message, ok = reportedMessage(out)
	return code, message, ok && code != ""
}

// reportedMessage finds a JSON message, {"code": "...", "message": "..."}
// with either field: all of out, or its last line.
func reportedMessage(out []byte) (code, message string, ok bool) {
	out = bytes.TrimSpace(out)
	candidates := [][]byte{out}
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		candidates = append(candidates, bytes.TrimSpace(out[i+1:]))
	}
	for _, c := range candidates {
		var m struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		if len(c) > 0 && c[0] == '{' && json.Unmarshal(c, &m) == nil && (m.Code != "" || m.Message != "") {
			return m.Code, bounded(m.Message), true
		}
	}
	return "", "", false
}

// goCrashed reports whether stderr is the Go runtime's report of a panic or
// fatal error, which exits 2.
func goCrashed(stderr []byte) bool {
	s := string(stderr)
	return (strings.HasPrefix(s, "panic: ") || strings.Contains(s, "\npanic: ") ||
		strings.HasPrefix(s, "fatal error: ") || strings.Contains(s, "\nfatal error: ")) &&
		strings.Contains(s, "\ngoroutine ")
}

// maxMessage bounds what of a module's words an error carries.
const maxMessage = 1024

// bounded trims s and cuts it to about maxMessage bytes.
func bounded(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", s[:cut], len(s)-cut)
}

// said renders what the module wrote to stderr for the end of an error
// message, or nothing.
func said(stderr []byte) string {
	if s := bounded(trimCrash(string(stderr))); s != "" {
		return ": " + s
	}
	return ""
}

// pagesSize renders a number of 64 KiB pages as bytes, e.g. "16 MiB".
func pagesSize(pages uint32) string {
	b := uint64(pages) << 16
	switch {
	case b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	default:
		return fmt.Sprintf("%d KiB", b>>10)
	}
}

// elapsed is time.Since, for logging.
func elapsed(start time.Time) time.Duration { return time.Since(start).Round(time.Microsecond) }
