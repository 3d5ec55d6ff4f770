// Package filewatch keeps a value loaded from files up to date: it reloads
// it on demand ([Value.Reload], e.g. on SIGHUP), or polls the files and
// reloads them when they change ([Value.Run]). A reload that fails never
// replaces the value in force.
//
// A [Source] says how to read the files, how to tell whether they changed
// and how to make the value from them; a [Log] says what Run reports.
package filewatch

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultInterval is how often [Value.Run] checks the files when it is
// given an interval of zero or less.
const DefaultInterval = 5 * time.Second

// Source is what a [Value] is loaded from. A Value calls its methods one at
// a time.
type Source[S, T any] interface {
	// Read looks at the files and returns their state: enough for Same to
	// tell whether they changed, and whatever Parse needs. An error means
	// they could not be looked at, perhaps for a moment only.
	Read() (S, error)
	// Same reports whether the files are unchanged between the states prev
	// and cur, both returned by Read.
	Same(prev, cur S) bool
	// Parse makes the value from a state that Read returned. An error
	// means the files are not valid, until they change.
	Parse(S) (*T, error)
}

// Log says what [Value.Run] logs. Each line carries Attrs, then what the
// line is about: the error (key "error") for a warning, ReloadedAttrs for a
// reload. Nothing else logs.
type Log[T any] struct {
	// Logger receives the lines. nil logs nothing.
	Logger *slog.Logger
	// Attrs are the key-value pairs every line starts with, e.g. the
	// files' path.
	Attrs []any
	// ReadFailed is the message logged at level Warn when Read fails: once
	// until Read succeeds or fails otherwise.
	ReadFailed string
	// Invalid is the message logged at level Warn when Parse fails for
	// files that changed. The value in force stays.
	Invalid string
	// Reloaded is the message logged at level Info when changed files
	// replaced the value, with ReloadedAttrs of the new value, if set.
	Reloaded      string
	ReloadedAttrs func(*T) []any
}

// Value is a value loaded from a [Source] and kept up to date. Its methods
// are safe for concurrent use.
type Value[S, T any] struct {
	src Source[S, T]
	log Log[T]

	value atomic.Pointer[T]

	mu sync.Mutex // serialises Reload and Run's checks; guards the rest
	// state is what Read returned before the last Parse, whether it
	// succeeded or not, so that Run does not parse the same invalid files
	// again until they change.
	state  S
	parsed bool // state is set
	// readErr is the last error of Read in Run, to log it once.
	readErr string
}

// New returns a Value that loads from src and logs as log says. It does not
// read anything: call [Value.Reload] before [Value.Load].
func New[S, T any](src Source[S, T], log Log[T]) *Value[S, T] {
	if log.Logger == nil {
		log.Logger = slog.New(slog.DiscardHandler)
	}
	return &Value[S, T]{src: src, log: log}
}

// Load returns the value in force: the one that the last successful reload
// made, or nil before any.
func (v *Value[S, T]) Load() *T { return v.value.Load() }

// Reload reads and parses the files now, whether or not they changed. If
// Read or Parse fails, Reload returns its error and the value in force
// stays as it was; otherwise the new value replaces it at once.
func (v *Value[S, T]) Reload() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	s, err := v.src.Read()
	if err != nil {
		return err
	}
	v.readErr = ""
	return v.parse(s)
}

// parse parses s and puts the value in force. Callers hold mu.
func (v *Value[S, T]) parse(s S) error {
	v.state, v.parsed = s, true
	t, err := v.src.Parse(s)
	if err != nil {
		return err
	}
	v.value.Store(t)
	return nil
}

// Run checks every interval (DefaultInterval if interval is zero or less)
// whether the files changed, and reloads them if so. Failures are logged
// (see [Log]) and keep the value in force; invalid files are parsed again
// once they change again. Run returns nil when ctx is done.
func (v *Value[S, T]) Run(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		v.check(ctx)
	}
}

// check reloads the value if the files changed, and logs the outcome.
func (v *Value[S, T]) check(ctx context.Context) {
	v.mu.Lock()
	defer v.mu.Unlock()
	s, err := v.src.Read()
	if err != nil {
		// Perhaps the moment of a replacement: keep the value and look
		// again next time.
		if err.Error() != v.readErr {
			v.readErr = err.Error()
			v.warn(ctx, v.log.ReadFailed, err)
		}
		return
	}
	v.readErr = ""
	if v.parsed && v.src.Same(v.state, s) {
		return
	}
	if err := v.parse(s); err != nil {
		v.warn(ctx, v.log.Invalid, err)
		return
	}
	var attrs []any
	if v.log.ReloadedAttrs != nil {
		attrs = v.log.ReloadedAttrs(v.value.Load())
	}
	v.log.Logger.InfoContext(ctx, v.log.Reloaded, slices.Concat(v.log.Attrs, attrs)...)
}

func (v *Value[S, T]) warn(ctx context.Context, msg string, err error) {
	v.log.Logger.WarnContext(ctx, msg, slices.Concat(v.log.Attrs, []any{"error", err})...)
}
