package wasm_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/wasm"
)

// gateFS holds every open of a flag file until release is closed, and
// counts the module instances inside an open at once.
type gateFS struct {
	fs.FS
	entered chan string // the namespace of each open, buffered
	release chan struct{}
	inside  atomic.Int64
	most    atomic.Int64
}

func (g *gateFS) Open(name string) (fs.File, error) {
	if strings.HasSuffix(name, ".json") {
		n := g.inside.Add(1)
		defer g.inside.Add(-1)
		for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
		}
		g.entered <- strings.Split(name, "/")[3]
		<-g.release
	}
	return g.FS.Open(name)
}

func TestMemoryBudget(t *testing.T) {
	t.Parallel()
	const limit = 2 // instances of the default memory limit the budget holds
	rt := newRuntime(t, wasm.WithCacheDir(compiledDir), wasm.WithMemoryBudget(limit*wasm.DefaultMemoryLimitPages<<16))
	c := newController(t, rt, "conform", nil)
	files := map[string]string{}
	for i := range 8 {
		ns := fmt.Sprint("ns-", i)
		files[flagFile(ns, "f")] = `{"apiVersion": "flags.cup.dev/v1alpha1", "kind": "Flag", "metadata": {"name": "f"}}`
	}
	tree := &gateFS{FS: newMemFS(t, files).Snapshot(), entered: make(chan string, 16), release: make(chan struct{})}
	var once sync.Once
	open := func() { once.Do(func() { close(tree.release) }) }
	t.Cleanup(open)
	get := func(ctx context.Context, ns string) error {
		_, err := c.Get(ctx, &controller.GetRequest{FS: tree, Type: flagType, Namespace: ns, Name: "f"})
		return err
	}

	// Two calls fill the budget.
	var wg sync.WaitGroup
	for i := range limit {
		wg.Go(func() {
			if err := get(t.Context(), fmt.Sprint("ns-", i)); err != nil {
				t.Errorf("Get: %v", err)
			}
		})
	}
	for range limit {
		<-tree.entered
	}
	// A third waits for room, and gives up when its deadline passes,
	// without an instance.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	third := make(chan error, 1)
	go func() { third <- get(ctx, "ns-7") }()
	select {
	case ns := <-tree.entered:
		t.Errorf("a call in %s ran while the budget of %d instances was full", ns, limit)
		open()
		<-third
	case err := <-third:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for room for 16 MiB of memory") {
			t.Errorf("Get waiting for memory past its deadline = %v, want DeadlineExceeded", err)
		}
	}
	open()
	wg.Wait()

	// Many calls at once: never more instances than the budget holds, and
	// every call is served in turn.
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() { errs <- get(t.Context(), fmt.Sprint("ns-", i)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Get: %v", err)
		}
	}
	if got := tree.most.Load(); got > limit {
		t.Errorf("%d instances ran at once, more than the budget of %d", got, limit)
	}
}

func TestMemoryBudgetRefusesLargerLimits(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, wasm.WithCacheDir(compiledDir), wasm.WithMemoryBudget(32<<20))
	for _, tc := range []struct {
		pages uint32
		ok    bool
	}{
		{512, true}, // exactly the budget
		{513, false},
	} {
		t.Run(fmt.Sprint(tc.pages), func(t *testing.T) {
			t.Parallel()
			c, err := wasm.New(t.Context(), rt, "empty", modules["empty"], &wasm.Spec{Path: "empty.wasm", MemoryLimitPages: tc.pages})
			if tc.ok {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				_ = c.Close(context.Background())
				return
			}
			if err == nil || !strings.Contains(err.Error(), "--wasm-memory-bytes") || !strings.Contains(err.Error(), "512 pages (32 MiB)") {
				t.Fatalf("New with a limit over the budget = %v, want an error naming the budget", err)
			}
		})
	}
}
