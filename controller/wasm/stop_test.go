package wasm_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/wasm"
)

// signalFS is a WriteFS that closes running the first time the module
// reads go.txt, so that a test knows the module is running. The faults
// module's "writeloop" reads it after changing the tree.
type signalFS struct {
	*recorder
	once    sync.Once
	running chan struct{}
}

func newSignalFS(t *testing.T) *signalFS {
	return &signalFS{
		recorder: &recorder{MemFS: newMemFS(t, map[string]string{"go.txt": "go", "keep.txt": "keep"})},
		running:  make(chan struct{}),
	}
}

func (s *signalFS) saw(name string) {
	if name == "go.txt" {
		s.once.Do(func() { close(s.running) })
	}
}

func (s *signalFS) Open(name string) (fs.File, error) {
	s.saw(name)
	return s.recorder.Open(name)
}

func (s *signalFS) Stat(name string) (fs.FileInfo, error) {
	s.saw(name)
	return fs.Stat(s.recorder.MemFS, name)
}

func (s *signalFS) ReadFile(name string) ([]byte, error) {
	s.saw(name)
	return fs.ReadFile(s.recorder.MemFS, name)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// expiringCtx is a context whose deadline passes when expire is called:
// a caller's time limit that fires at a moment the test chooses.
type expiringCtx struct {
	context.Context
	once sync.Once
	done chan struct{}
}

func newExpiringCtx(parent context.Context) *expiringCtx {
	return &expiringCtx{Context: parent, done: make(chan struct{})}
}

func (c *expiringCtx) expire()                     { c.once.Do(func() { close(c.done) }) }
func (c *expiringCtx) Done() <-chan struct{}       { return c.done }
func (c *expiringCtx) Deadline() (time.Time, bool) { return time.Now().Add(time.Hour), true }

func (c *expiringCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestPutStoppedMidway stops a put while the module runs, having written
// to its overlay: by the client going away (its context cancelled), by the
// caller's time limit, and by the controller's own timeout. The call
// returns at once, nothing reaches the tree, the same controller (and
// another one of the same module on the same runtime) keeps serving, and
// no goroutine is left behind. It does not run in parallel, so that
// goleak sees only its own goroutines.
func TestPutStoppedMidway(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c := newController(t, nil, "faults", &wasm.Spec{Path: "faults.wasm", Timeout: time.Hour})
	other := newController(t, nil, "faults", &wasm.Spec{Path: "faults.wasm", Timeout: time.Second})

	tests := []struct {
		name string
		c    *wasm.Controller
		// stop returns the context of the call and a function that stops it
		// (nil: the controller's timeout does).
		stop func(ctx context.Context) (context.Context, func())
		want error
		says string
	}{
		{"client disconnects", c, func(ctx context.Context) (context.Context, func()) {
			ctx, cancel := context.WithCancel(ctx)
			return ctx, cancel
		}, context.Canceled, "stopped by the caller"},
		{"caller's time limit", c, func(ctx context.Context) (context.Context, func()) {
			e := newExpiringCtx(ctx)
			return e, e.expire
		}, context.DeadlineExceeded, "stopped by the caller"},
		{"controller's timeout", other, func(ctx context.Context) (context.Context, func()) {
			return ctx, nil
		}, context.DeadlineExceeded, "stopped after the 1s timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := newSignalFS(t)
			before := fsys.Files()
			ctx, stop := tt.stop(t.Context())
			stopped := make(chan time.Time, 1)
			go func() {
				<-fsys.running
				at := time.Now()
				if stop != nil {
					stop()
				}
				stopped <- at
			}()
			errc := make(chan error, 1)
			go func() {
				errc <- tt.c.Put(ctx, &controller.PutRequest{FS: fsys, Type: flagType, Resource: newFlag("default", "writeloop", "")})
			}()
			var err error
			select {
			case err = <-errc:
			case <-time.After(time.Minute):
				t.Fatal("the put was not stopped after a minute")
			}
			returned := time.Now()
			ran := isClosed(fsys.running)
			fsys.saw("go.txt") // lets the stopping goroutine go if the module never ran
			at := <-stopped
			switch {
			case ran && returned.Sub(at) > 5*time.Second:
				t.Errorf("the put returned %s after it was stopped", returned.Sub(at))
			case !ran && stop != nil:
				t.Fatalf("the put returned before the module ran: %v", err)
			case !ran:
				t.Logf("the timeout fired before the module read go.txt")
			}
			checkSentinel(t, err, tt.want)
			if !strings.Contains(fmt.Sprint(err), tt.says) || !strings.Contains(fmt.Sprint(err), "put flags.cup.dev/v1alpha1 Flag default/writeloop") {
				t.Errorf("Put = %v, want it to name the call and say %q", err, tt.says)
			}
			if ch := fsys.Changes(); len(ch) > 0 {
				t.Errorf("the stopped put changed the tree: %q", ch)
			}
			if !maps.EqualFunc(before, fsys.Files(), slices.Equal) {
				t.Errorf("the stopped put changed the tree")
			}

			// The same module serves the calls that follow, at once.
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					if _, err := tt.c.Get(t.Context(), &controller.GetRequest{FS: newMemFS(t, nil), Type: flagType, Namespace: "default", Name: "ok"}); err != nil {
						t.Errorf("Get after the stopped put: %v", err)
					}
				})
			}
			wg.Go(func() {
				w := &recorder{MemFS: newMemFS(t, nil)}
				if err := tt.c.Put(t.Context(), &controller.PutRequest{FS: w, Type: flagType, Resource: newFlag("default", "touch", "")}); err != nil {
					t.Errorf("Put after the stopped put: %v", err)
				} else if ch := w.Changes(); !slices.Equal(ch, []string{"write touched.txt"}) {
					t.Errorf("Put after the stopped put changed %q, want touched.txt", ch)
				}
			})
			wg.Wait()
		})
	}
}

// TestStopOneOfConcurrentCalls stops one call while others of the same
// module run: they finish normally.
func TestStopOneOfConcurrentCalls(t *testing.T) {
	t.Parallel()
	c := newController(t, nil, "faults", &wasm.Spec{Path: "faults.wasm", Timeout: time.Hour})
	fsys := newSignalFS(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- c.Put(ctx, &controller.PutRequest{FS: fsys, Type: flagType, Resource: newFlag("default", "writeloop", "")})
	}()
	<-fsys.running
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := c.Get(t.Context(), &controller.GetRequest{FS: newMemFS(t, nil), Type: flagType, Namespace: "default", Name: "ok"}); err != nil {
				t.Errorf("Get next to a running put: %v", err)
			}
		})
	}
	wg.Wait()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Put = %v, want it stopped by the caller", err)
	}
	if ch := fsys.Changes(); len(ch) > 0 {
		t.Errorf("the stopped put changed the tree: %q", ch)
	}
}
