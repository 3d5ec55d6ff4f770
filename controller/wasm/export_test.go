package wasm

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// SetMaxWrittenBytes bounds the files a put or delete may hold to n bytes
// until restore is called. Tests that call it must not run in parallel.
func SetMaxWrittenBytes(n int64) (restore func()) {
	old := maxWrittenBytes
	maxWrittenBytes = n
	return func() { maxWrittenBytes = old }
}

// Interruptible is the rewrite every module gets before it is compiled.
func Interruptible(module []byte) ([]byte, error) { return interruptible(module) }

// DataSegments returns how many data segments module has.
func DataSegments(module []byte) int {
	r := reader{b: module[8:]}
	for !r.done() {
		id, p := r.byte(), r.bytes(r.u32())
		if id == sectionData {
			s := reader{b: p}
			return int(s.u32())
		}
	}
	return 0
}

// InitialMemory instantiates module, without running it, beside WASI's
// functions (which Go's modules import), and returns its memory.
func InitialMemory(t testing.TB, module []byte) []byte {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	mod, err := rt.InstantiateWithConfig(ctx, module, wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	b, ok := mod.Memory().Read(0, mod.Memory().Size())
	if !ok {
		t.Fatal("memory not readable")
	}
	return bytes.Clone(b)
}
