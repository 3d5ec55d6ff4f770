package wasm_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/wasm"
	"github.com/cup-dev/cup/internal/testlog"
)

// spinModule is a WASI command whose _start loops for ever, and has no
// memory: loop; br 0; end.
var spinModule = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // types: () -> ()
	0x03, 0x02, 0x01, 0x00, // functions: one of type 0
	0x07, 0x0a, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00, // export "_start"
	0x0a, 0x09, 0x01, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b, // code
}

// simdSpinModule is spinModule with a SIMD instruction before its loop
// (v128.const 0; drop), which the rewrite that makes modules
// interruptible does not know.
var simdSpinModule = func() []byte {
	b := append([]byte(nil), spinModule[:len(spinModule)-11]...)
	b = append(b, 0x0a, 0x1c, 0x01, 0x1a, 0x00, 0xfd, 0x0c)
	b = append(b, make([]byte, 16)...)
	return append(b, 0x1a, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b)
}()

// bulkSpinModule loops for ever copying 32 MiB within its 1,024 pages:
// loop; memory.copy 0 32Mi 32Mi; br 0; end.
var bulkSpinModule = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00,
	0x03, 0x02, 0x01, 0x00,
	0x05, 0x04, 0x01, 0x00, 0x80, 0x08, // memory: 1,024 pages
	0x07, 0x0a, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00,
	0x0a, 0x19, 0x01, 0x17, 0x00, 0x03, 0x40,
	0x41, 0x00, 0x41, 0x80, 0x80, 0x80, 0x10, 0x41, 0x80, 0x80, 0x80, 0x10,
	0xfc, 0x0a, 0x00, 0x00, 0x0c, 0x00, 0x0b, 0x0b,
}

// startSpinModule loops for ever in its start function, which wazero runs
// while it makes the instance; its _start does nothing.
var startSpinModule = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00,
	0x03, 0x03, 0x02, 0x00, 0x00, // functions 0 and 1
	0x07, 0x0a, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x01, // _start: function 1
	0x08, 0x01, 0x00, // start: function 0
	0x0a, 0x0c, 0x02, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b, 0x02, 0x00, 0x0b,
}

// TestSpinningModulesStop: more modules than there are threads for Go
// code, each in a loop that never calls out, all stop at their timeout.
// Go cannot preempt machine code it did not compile, so this needs the
// modules to call into Go now and then: without, every P would spin, and
// no timer would fire. A loop of large copies checks as often as a loop of
// small steps, and a module whose start function loops is run with
// wazero's checks.
func TestSpinningModulesStop(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name          string
		module        []byte
		interruptible bool
	}{
		{"rewritten", spinModule, true},
		{"bulk copies", bulkSpinModule, true},
		{"SIMD: wazero's checks", simdSpinModule, false},
		{"start function: wazero's checks", startSpinModule, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			log := &testlog.Buffer{}
			rt := newRuntime(t, wasm.WithLogger(slog.New(slog.NewTextHandler(log, nil))))
			c, err := wasm.New(t.Context(), rt, "spin", tt.module, &wasm.Spec{Path: "spin.wasm", Timeout: 200 * time.Millisecond, MemoryLimitPages: 1024})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close(context.Background()) })
			if got := !strings.Contains(log.String(), "interruptible=false"); got != tt.interruptible {
				t.Errorf("compiled interruptible: %t, want %t; log:\n%s", got, tt.interruptible, log)
			}
			var wg sync.WaitGroup
			for range goruntime.GOMAXPROCS(0) + 2 {
				wg.Go(func() {
					start := time.Now()
					_, err := c.Get(t.Context(), &controller.GetRequest{FS: newMemFS(t, nil), Type: flagType, Namespace: "default", Name: "x"})
					if took := time.Since(start); took > 10*time.Second {
						t.Errorf("the 200ms timeout stopped the module after %s", took)
					}
					checkSentinel(t, err, context.DeadlineExceeded)
					if !strings.Contains(fmt.Sprint(err), "stopped after the 200ms timeout") {
						t.Errorf("Get = %v, want it stopped after its timeout", err)
					}
				})
			}
			wg.Wait()
		})
	}
}

// TestMemoryLimitFromNoPages: a memory that starts with no pages is held
// to the limit when it grows. The module grows its memory by 300 pages,
// past the default 256, traps if that worked, and else exits 0 (a get
// that writes nothing).
func TestMemoryLimitFromNoPages(t *testing.T) {
	t.Parallel()
	module := []byte{
		0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00,
		0x03, 0x02, 0x01, 0x00,
		0x05, 0x03, 0x01, 0x00, 0x00, // memory: no pages
		0x07, 0x0a, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00,
		// memory.grow 300; i32.const -1; i32.ne; if; unreachable; end
		0x0a, 0x10, 0x01, 0x0e, 0x00, 0x41, 0xac, 0x02, 0x40, 0x00, 0x41, 0x7f, 0x47, 0x04, 0x40, 0x00, 0x0b, 0x0b,
	}
	c, err := wasm.New(t.Context(), newRuntime(t), "grow", module, &wasm.Spec{Path: "grow.wasm"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	_, err = c.Get(t.Context(), &controller.GetRequest{FS: newMemFS(t, nil), Type: flagType, Namespace: "default", Name: "x"})
	if !strings.Contains(fmt.Sprint(err), "the module exited 0 and wrote nothing") {
		t.Errorf("Get = %v, want the module to have found its memory could not grow past its limit", err)
	}
}

// TestRewriteKeepsMemory: every program of the tests starts with the same
// memory once rewritten, its data segments merged (the flagfile module's
// 51,362 into a few dozen), as it does as it is.
func TestRewriteKeepsMemory(t *testing.T) {
	t.Parallel()
	for _, name := range programs {
		out, err := wasm.Interruptible(modules[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if before, after := wasm.DataSegments(modules[name]), wasm.DataSegments(out); name == "flagfile" && (before < 10000 || after > 100) {
			t.Errorf("%s: %d data segments rewritten to %d, want thousands to tens", name, before, after)
		}
		if !bytes.Equal(wasm.InitialMemory(t, out), wasm.InitialMemory(t, modules[name])) {
			t.Errorf("%s: its memory differs once rewritten", name)
		}
	}
}
