package wasm

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// loopModule is a WASI command whose _start counts down from 1,000 in a
// loop, stores the result in memory, and has one global and a memory.
var loopModule = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // types: () -> ()
	0x03, 0x02, 0x01, 0x00, // functions
	0x05, 0x03, 0x01, 0x00, 0x01, // memory: one page
	0x06, 0x07, 0x01, 0x7f, 0x01, 0x41, 0xe8, 0x07, 0x0b, // global 0: mut i32 = 1000
	0x07, 0x0a, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00,
	0x0a, 0x19, 0x01, 0x17, 0x00, // code: no locals
	0x03, 0x40, // loop
	0x23, 0x00, 0x41, 0x01, 0x6b, 0x24, 0x00, // g0 -= 1
	0x23, 0x00, 0x0d, 0x00, // br_if 0 while g0 != 0
	0x0b,                                     // end
	0x41, 0x00, 0x23, 0x00, 0x36, 0x02, 0x00, // i32.store [0] = g0
	0x0b,
}

func TestInterruptible(t *testing.T) {
	out, err := interruptible(loopModule)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	m, err := rt.CompileModule(ctx, out)
	if err != nil {
		t.Fatalf("the rewritten module does not compile: %v", err)
	}
	mod, err := rt.InstantiateModule(ctx, m, wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	if mod.ExportedGlobal(stopExport) == nil {
		t.Errorf("the rewritten module exports no %s", stopExport)
	}
	if _, err := mod.ExportedFunction("_start").Call(ctx); err != nil {
		t.Errorf("the rewritten module's loop: %v", err)
	}
	// The loop ran 1,000 times, through the check's slow path once.
	if v, ok := mod.Memory().ReadUint32Le(0); !ok || v != 0 {
		t.Errorf("the loop counted down to %d, %t; want 0", v, ok)
	}
	mod.Memory().WriteUint32Le(0, 7)
	mod.ExportedGlobal(stopExport).(api.MutableGlobal).Set(1)
	if _, err := mod.ExportedFunction("_start").Call(ctx); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("with stop set, the loop ended with %v, want a trap", err)
	}

	for _, tt := range []struct {
		name   string
		module []byte
		says   string
	}{
		{"not wasm", []byte("\x00asm\x02\x00\x00\x00"), "not a WebAssembly 1.0 binary"},
		{"truncated", loopModule[:len(loopModule)-3], "unexpected end"},
		{"simd", bytes.Replace(loopModule, []byte{0x36, 0x02}, []byte{0xfd, 0x0b}, 1), "the instruction 0xfd"},
		{"own stop export", bytes.Replace(loopModule, []byte("\x07\x0a\x01\x06_start\x00\x00"), []byte("\x07\x10\x01\x0ccup.dev/stop\x03\x00"), 1), "exports \"cup.dev/stop\" itself"},
		{"huge vector", append(loopModule[:8:8], 0x03, 0x05, 0xff, 0xff, 0xff, 0xff, 0x0f), "a vector of"},
		{"more bodies than functions", append(loopModule[:8:8], 0x0a, 0x05, 0xff, 0xff, 0xff, 0xff, 0x0f), "4294967295 bodies"},
		{"global out of range", bytes.Replace(loopModule, []byte{0x24, 0x00}, []byte{0x24, 0x01}, 1), "global 1 of 1"},
		{"start section", bytes.Replace(loopModule, []byte("\x0a\x19"), []byte("\x08\x01\x00\x0a\x19"), 1), "a start section"},
		{"tail call", bytes.Replace(loopModule, []byte{0x23, 0x00, 0x0d, 0x00}, []byte{0x01, 0x01, 0x12, 0x00}, 1), "the instruction 0x12"},
		{"memory instructions without a memory", bytes.Replace(loopModule, []byte{0x05, 0x03, 0x01, 0x00, 0x01}, nil, 1), "a memory instruction without a memory"},
	} {
		_, err := interruptible(tt.module)
		if !errors.Is(err, errNotInterruptible) || !bytes.Contains([]byte(err.Error()), []byte(tt.says)) {
			t.Errorf("%s: %v, want errNotInterruptible saying %q", tt.name, err, tt.says)
		}
	}
}

// TestInterruptibleEmptyMemorySection: a memory section of no memories
// is given the memory of the check, rather than a second memory section.
func TestInterruptibleEmptyMemorySection(t *testing.T) {
	module := []byte{
		0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00,
		0x03, 0x02, 0x01, 0x00,
		0x05, 0x01, 0x00, // no memories
		0x00, 0x03, 0x02, 'n', 'o', // a custom section
		0x0a, 0x07, 0x01, 0x05, 0x00, 0x03, 0x40, 0x0b, 0x0b,
	}
	out, err := interruptible(module)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	if _, err := rt.CompileModule(ctx, out); err != nil {
		t.Errorf("the rewritten module does not compile: %v", err)
	}
	if !bytes.Contains(out, []byte{0x00, 0x03, 0x02, 'n', 'o'}) {
		t.Errorf("the custom section is gone: %x", out)
	}
}

// FuzzInterruptible: the rewrite never panics, a module wazero compiles
// still compiles once rewritten, and one it refuses is refused rewritten.
func FuzzInterruptible(f *testing.F) {
	f.Add(loopModule)
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	f.Fuzz(func(t *testing.T, module []byte) {
		out, err := interruptible(module)
		if err != nil {
			if !errors.Is(err, errNotInterruptible) {
				t.Fatalf("error %v does not wrap errNotInterruptible", err)
			}
			return
		}
		if !plausible(module) {
			return
		}
		m, err := rt.CompileModule(ctx, module)
		m2, err2 := rt.CompileModule(ctx, out)
		switch {
		case err == nil && err2 != nil:
			t.Fatalf("compiles, but not rewritten: %v", err2)
		case err != nil && err2 == nil:
			t.Fatalf("compiles rewritten, but not as it is: %v", err)
		}
		if err == nil {
			m.Close(ctx)
			m2.Close(ctx)
		}
	})
}

// plausible reports whether no section of module says it holds more
// elements than it has bytes: wazero makes room for as many as a section
// says before it reads them, which takes a minute for 2^31.
func plausible(module []byte) bool {
	r := reader{b: module[8:]}
	for !r.done() {
		id := r.byte()
		s := reader{b: r.bytes(r.u32())}
		if id != sectionCustom && id != sectionStart && s.u32() > uint32(len(s.b)) {
			return false
		}
	}
	return true
}
