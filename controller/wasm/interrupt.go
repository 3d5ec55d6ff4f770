package wasm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A module must stop when its call's timeout or its caller ends it, even
// in a loop that never calls out. wazero's way (WithCloseOnContextDone)
// calls out of the machine code into Go at every loop iteration to ask
// whether the module was closed, which makes loops many times slower (a
// flagfile GET at 10,000 entries: 351 ms with it, 40 ms without). Instead,
// each module is compiled with a check of its own at the head of every
// loop: a counter in a global of its own, which every loopFuel iterations
// calls into Go (a memory.grow of 0 pages, which wazero runs in Go) and
// traps if another global, the stop global, is set. A call sets the stop
// global, exported for it, from another goroutine when its context ends
// (see start).
//
// The call into Go matters as much as the trap: Go cannot preempt a
// goroutine running machine code it did not compile, so a module that
// never called out would hold its thread's P until it ended, and with
// every P so held no timer, and so no timeout, would fire. In Go, at the
// next function's prologue, the scheduler takes the P back when the
// goroutine has run too long.
//
// An instruction that copies or fills memory or a table (memory.copy and
// the like) costs the fuel of one iteration for every 4 KiB it is told to
// move, so that a loop of large copies checks as often as its time asks.
//
// A module this cannot rewrite (one using instructions it does not know,
// such as SIMD, or with a start section, which wazero runs before a call
// could set the stop global) runs with wazero's checks instead.

// loopFuel is how many loop iterations a module runs between two calls
// into Go: tens of microseconds to a millisecond, depending on the loop.
const loopFuel = 1 << 14

// stopExport is the name the stop global is exported under.
const stopExport = "cup.dev/stop"

// errNotInterruptible says why a module was not rewritten.
var errNotInterruptible = errors.New("module not rewritten to be interrupted")

// A section is one section of a module: its id and its content.
type section struct {
	id      byte
	payload []byte
}

// Section ids of the binary format.
const (
	sectionCustom    = 0
	sectionType      = 1
	sectionImport    = 2
	sectionFunction  = 3
	sectionStart     = 8
	sectionData      = 11
	sectionDataCount = 12
	sectionMemory    = 5
	sectionGlobal    = 6
	sectionExport    = 7
	sectionCode      = 10
)

// sectionOrder is the place of each known section among the others;
// custom sections may come anywhere.
var sectionOrder = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}

// loopCheck is the check inserted at the head of each loop, with the
// globals stop and fuel:
//
//	global.get fuel; i32.const 1; i32.sub; global.set fuel
//	global.get fuel; i32.const 0; i32.le_s
//	if
//	  i32.const loopFuel; global.set fuel
//	  i32.const 0; memory.grow 0; drop
//	  global.get stop; if; unreachable; end
//	end
func loopCheck(stop, fuel uint32) []byte {
	get := func(b []byte, g uint32) []byte { return binary.AppendUvarint(append(b, 0x23), uint64(g)) }
	set := func(b []byte, g uint32) []byte { return binary.AppendUvarint(append(b, 0x24), uint64(g)) }
	b := get(nil, fuel)
	b = set(append(b, 0x41, 0x01, 0x6b), fuel)
	b = append(get(b, fuel), 0x41, 0x00, 0x4c, 0x04, 0x40)
	b = set(appendSLEB(append(b, 0x41), loopFuel), fuel)
	b = append(b, 0x41, 0x00, 0x40, 0x00, 0x1a)
	b = append(get(b, stop), 0x04, 0x40, 0x00, 0x0b)
	return append(b, 0x0b)
}

// bulkCharge is the code inserted before an instruction that moves n
// bytes or elements (n on top of the stack), with the scratch local
// scratch:
//
//	local.tee scratch; global.get fuel; local.get scratch
//	i32.const 12; i32.shr_u; i32.sub; global.set fuel
func bulkCharge(fuel, scratch uint32) []byte {
	b := binary.AppendUvarint([]byte{0x22}, uint64(scratch))
	b = binary.AppendUvarint(append(b, 0x23), uint64(fuel))
	b = binary.AppendUvarint(append(b, 0x20), uint64(scratch))
	b = append(b, 0x41, 0x0c, 0x76, 0x6b, 0x24)
	return binary.AppendUvarint(b, uint64(fuel))
}

// appendSLEB appends v as a signed LEB128.
func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// interruptible returns module rewritten to trap at the head of a loop
// (within loopFuel iterations) once its exported global stopExport, a
// mutable i32, is not 0. It returns an error wrapping errNotInterruptible
// for a module it cannot rewrite: malformed (so that wazero, compiling it
// as it is, says what is wrong), with a start section, or using
// instructions it does not know. A module without a memory is given one of
// no pages. Debug sections (.debug_*, DWARF), whose code offsets the
// rewrite would make wrong, are left out. Data segments a few zero bytes
// apart are merged (see data.go).
func interruptible(module []byte) ([]byte, error) {
	if len(module) < 8 || !bytes.Equal(module[:8], []byte("\x00asm\x01\x00\x00\x00")) {
		return nil, fmt.Errorf("%w: not a WebAssembly 1.0 binary", errNotInterruptible)
	}
	var sections []section
	r := reader{b: module[8:]}
	for !r.done() {
		id := r.byte()
		payload := r.bytes(r.u32())
		sections = append(sections, section{id, payload})
	}
	if r.err != nil {
		return nil, r.err
	}
	// The new globals come after those the module imports and defines.
	var (
		rw                                rewriter
		hasGlobals, hasExports, hasMemory bool
		hasDataCount                      bool // memory.init and data.drop may name segments
		emptyMemory                       = -1 // a memory section of no memories
		nCodes                            uint32
		types, funcTypes                  []uint32
		globals                           uint64
	)
	for i, s := range sections {
		var err error
		switch s.id {
		case sectionType:
			types, err = paramCounts(s.payload)
		case sectionImport:
			var g, m uint32
			g, m, err = imported(s.payload)
			globals += uint64(g)
			hasMemory = hasMemory || m > 0
		case sectionFunction:
			funcTypes, err = indexes(s.payload)
		case sectionMemory:
			m := reader{b: s.payload}
			if n := m.u32(); n > 0 {
				hasMemory = true
			} else if m.err == nil && m.done() {
				emptyMemory = i
			}
		case sectionGlobal:
			g := reader{b: s.payload}
			globals += uint64(g.u32())
			err = g.err
			hasGlobals = true
		case sectionExport:
			hasExports = true
		case sectionDataCount:
			hasDataCount = true
		case sectionStart:
			err = fmt.Errorf("%w: it has a start section, which runs before a call could stop it", errNotInterruptible)
		case sectionCode:
			c := reader{b: s.payload}
			nCodes = c.u32()
			err = c.err
		}
		if err != nil {
			return nil, err
		}
	}
	if globals+2 > 1<<32-1 || int64(nCodes) != int64(len(funcTypes)) {
		return nil, fmt.Errorf("%w: %d globals, %d functions and %d bodies", errNotInterruptible, globals, len(funcTypes), nCodes)
	}
	rw.globals = uint32(globals)
	rw.memory = hasMemory
	rw.check = loopCheck(rw.globals, rw.globals+1)
	rw.types, rw.funcTypes = types, funcTypes
	for _, s := range sections {
		if s.id == sectionExport {
			if err := rw.checkExports(s.payload); err != nil {
				return nil, err
			}
		}
		if !hasMemory && (s.id == sectionData || s.id == sectionDataCount) {
			return nil, fmt.Errorf("%w: data without a memory", errNotInterruptible)
		}
	}
	switch {
	case hasMemory:
	case emptyMemory >= 0:
		// One of no pages, for the memory.grow of the check.
		sections[emptyMemory].payload = []byte{1, 0, 0}
	default:
		sections = insertSection(sections, section{sectionMemory, []byte{1, 0, 0}})
	}
	if !hasGlobals {
		sections = insertSection(sections, section{sectionGlobal, []byte{0}})
	}
	if !hasExports {
		sections = insertSection(sections, section{sectionExport, []byte{0}})
	}
	out := make([]byte, 0, len(module)+len(module)/16)
	out = append(out, module[:8]...)
	for _, s := range sections {
		p := s.payload
		var err error
		switch s.id {
		case sectionCustom:
			if name, ok := customName(p); ok && strings.HasPrefix(name, ".debug_") {
				continue
			}
		case sectionGlobal:
			// Mutable i32s: stop, initially 0, and fuel, initially 1
			// (the first loop checks stop at once).
			if p, err = appendToVector(p, []byte{0x7f, 0x01, 0x41, 0x00, 0x0b}); err == nil {
				p, err = appendToVector(p, []byte{0x7f, 0x01, 0x41, 0x01, 0x0b})
			}
		case sectionExport:
			e := binary.AppendUvarint(nil, uint64(len(stopExport)))
			e = append(e, stopExport...)
			e = append(e, 0x03) // a global
			e = binary.AppendUvarint(e, uint64(rw.globals))
			p, err = appendToVector(p, e)
		case sectionCode:
			p, err = rw.code(p)
		case sectionData:
			if !hasDataCount {
				p = coalesceData(p)
			}
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s.id)
		out = binary.AppendUvarint(out, uint64(len(p)))
		out = append(out, p...)
	}
	return out, nil
}

// A rewriter rewrites the code of a module.
type rewriter struct {
	globals   uint32   // the module's own: stop is globals, fuel globals+1
	memory    bool     // whether the module has a memory of its own
	check     []byte   // loopCheck
	types     []uint32 // the parameter count of each type
	funcTypes []uint32 // the type of each function the module defines
}

// insertSection inserts s before the first known section that must follow
// it, or else before the custom sections that end the module: they stay
// last, as a module's name and producers sections are, and wazero, which
// refuses a module ending in some custom sections, refuses it rewritten
// too (FuzzInterruptible).
func insertSection(sections []section, s section) []section {
	at := len(sections)
	for at > 0 && sections[at-1].id == sectionCustom {
		at--
	}
	for i, x := range sections {
		if o, ok := sectionOrder[x.id]; ok && o > sectionOrder[s.id] {
			at = i
			break
		}
	}
	return slices.Insert(sections, at, s)
}

// appendToVector returns vec, a vector's encoding, with one more element,
// elem.
func appendToVector(vec, elem []byte) ([]byte, error) {
	r := reader{b: vec}
	n := r.u32()
	if r.err != nil {
		return nil, r.err
	}
	out := binary.AppendUvarint(make([]byte, 0, len(vec)+len(elem)+5), uint64(n)+1)
	out = append(out, r.b[r.off:]...)
	return append(out, elem...), nil
}

// customName returns the name of a custom section.
func customName(p []byte) (string, bool) {
	r := reader{b: p}
	name := r.bytes(r.u32())
	return string(name), r.err == nil
}

// imported counts the globals and memories of an import section.
func imported(p []byte) (globals, memories uint32, _ error) {
	r := reader{b: p}
	for range r.count() {
		r.bytes(r.u32()) // module
		r.bytes(r.u32()) // name
		switch kind := r.byte(); kind {
		case 0x00: // a function: its type
			r.u32()
		case 0x01: // a table: its reference type and limits
			r.byte()
			r.limits()
		case 0x02: // a memory
			r.limits()
			memories++
		case 0x03: // a global: its value type and mutability
			r.byte()
			r.byte()
			globals++
		default:
			r.fail("an import of kind %#x", kind)
		}
		if r.err != nil {
			break
		}
	}
	return globals, memories, r.err
}

// checkExports checks an export section: none is called stopExport, and
// none names a global the module does not have (which would name stop or
// fuel once they are added).
func (rw *rewriter) checkExports(p []byte) error {
	r := reader{b: p}
	for range r.count() {
		name := string(r.bytes(r.u32()))
		kind, index := r.byte(), r.u32()
		switch {
		case r.err != nil:
			return r.err
		case name == stopExport:
			return fmt.Errorf("%w: it exports %q itself", errNotInterruptible, stopExport)
		case kind == 0x03 && index >= rw.globals:
			return fmt.Errorf("%w: it exports global %d of %d", errNotInterruptible, index, rw.globals)
		}
	}
	return r.err
}

// paramCounts returns the number of parameters of each type of a type
// section.
func paramCounts(p []byte) ([]uint32, error) {
	r := reader{b: p}
	var out []uint32
	for range r.count() {
		if form := r.byte(); form != 0x60 {
			r.fail("a type of form %#x", form)
		}
		n := r.count()
		r.bytes(n)
		r.bytes(r.count())
		if r.err != nil {
			break
		}
		out = append(out, n)
	}
	return out, r.err
}

// indexes reads a vector of indexes.
func indexes(p []byte) ([]uint32, error) {
	r := reader{b: p}
	out := make([]uint32, r.count())
	for i := range out {
		out[i] = r.u32()
	}
	return out, r.err
}

// code returns a code section with rw.check at the head of every loop,
// and fuel charged before every bulk instruction.
func (rw *rewriter) code(p []byte) ([]byte, error) {
	r := reader{b: p}
	n := r.count()
	if r.err != nil {
		return nil, r.err
	}
	out := binary.AppendUvarint(make([]byte, 0, len(p)+len(p)/16), uint64(n))
	var body []byte
	for i := range n {
		code := r.bytes(r.u32())
		if r.err != nil {
			return nil, r.err
		}
		t := rw.funcTypes[i]
		if int64(t) >= int64(len(rw.types)) {
			return nil, fmt.Errorf("%w: function %d of type %d of %d", errNotInterruptible, i, t, len(rw.types))
		}
		var err error
		if body, err = rw.body(body[:0], code, rw.types[t]); err != nil {
			return nil, err
		}
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	if !r.done() {
		return nil, fmt.Errorf("%w: %d bytes after the code section's functions", errNotInterruptible, len(r.b)-r.off)
	}
	return out, nil
}

// body appends to out a function's code, its locals and then its
// instructions, with one more local, an i32 for bulkCharge, rw.check after
// each loop instruction and bulkCharge before each bulk instruction. params
// is the function's number of parameters.
func (rw *rewriter) body(out, code []byte, params uint32) ([]byte, error) {
	r := reader{b: code}
	decls := r.count()
	first := r.off // of the declarations
	locals := uint64(params)
	for range decls {
		locals += uint64(r.u32())
		r.byte()
		if r.err != nil {
			return nil, r.err
		}
	}
	if locals >= 1<<32-1 {
		return nil, fmt.Errorf("%w: %d locals", errNotInterruptible, locals)
	}
	out = binary.AppendUvarint(out, uint64(decls)+1)
	out = append(out, code[first:r.off]...)
	out = append(out, 1, 0x7f)
	bulk := bulkCharge(rw.globals+1, uint32(locals))
	from := r.off // code[from:r.off] is copied next
	for r.off < len(code) {
		at := r.off
		op := code[r.off]
		r.off++
		switch immediates[op] {
		case immNone:
		case immLoop:
			r.blockType()
			out = append(out, code[from:r.off]...)
			out = append(out, rw.check...)
			from = r.off
		case immBlock:
			r.blockType()
		case immIndex:
			i := r.u32()
			switch {
			case (op == 0x23 || op == 0x24) && i >= rw.globals:
				r.fail("global %d of %d", i, rw.globals)
			case (op == 0x3f || op == 0x40) && !rw.memory:
				r.fail("a memory instruction without a memory")
			}
		case immTwoIndexes:
			r.u32()
			r.u32()
		case immBrTable:
			for range r.count() {
				r.u32()
			}
			r.u32()
		case immTypes:
			for range r.count() {
				r.byte()
			}
		case immMemarg:
			if !rw.memory {
				r.fail("a memory instruction without a memory")
			}
			r.memarg()
		case immI32:
			r.sleb(5)
		case immI64:
			r.sleb(10)
		case immF32:
			r.bytes(4)
		case immF64:
			r.bytes(8)
		case immByte:
			r.byte()
		case immPrefixFC:
			sub := r.u32()
			if sub >= 8 && sub <= 11 && !rw.memory {
				r.fail("a memory instruction without a memory")
			}
			// Bulk instructions are charged before they run, with their
			// count on top of the stack.
			charge := func() {
				out = append(out, code[from:at]...)
				out = append(out, bulk...)
				from = at
			}
			switch sub {
			case 0, 1, 2, 3, 4, 5, 6, 7: // saturating truncations
			case 8, 10, 12, 14: // memory.init, memory.copy, table.init, table.copy
				charge()
				r.u32()
				r.u32()
			case 11, 17: // memory.fill, table.fill
				charge()
				r.u32()
			case 9, 13, 15, 16: // data.drop, elem.drop, table.grow, table.size
				r.u32()
			default:
				r.fail("the instruction 0xfc %d", sub)
			}
		default:
			r.fail("the instruction %#x", op)
		}
		if r.err != nil {
			return nil, r.err
		}
	}
	return append(out, code[from:]...), nil
}

// Immediates of instructions, by what follows their opcode.
const (
	immUnknown    = iota // an instruction the rewrite does not know
	immNone              // nothing
	immLoop              // a block type, of a loop
	immBlock             // a block type, of block and if
	immIndex             // an index
	immTwoIndexes        // two indexes
	immBrTable           // a vector of labels and a label
	immTypes             // a vector of value types (select)
	immMemarg            // a memory argument
	immI32               // a signed LEB128 of 32 bits
	immI64               // a signed LEB128 of 64 bits
	immF32               // 4 bytes
	immF64               // 8 bytes
	immByte              // a byte (ref.null's type)
	immPrefixFC          // an instruction of the 0xfc prefix
)

// immediates gives the immediates of each opcode: those of WebAssembly
// 1.0 and of the sign extension, saturating truncation, bulk memory and
// reference types proposals. Exceptions, SIMD, threads and GC are
// unknown, and so are tail calls (return_call): a function that calls
// itself so loops without a loop instruction, or a stack that overflows.
var immediates = func() (t [256]uint8) {
	set := func(kind uint8, ops ...int) {
		for _, op := range ops {
			t[op] = kind
		}
	}
	span := func(from, to int) (ops []int) {
		for op := from; op <= to; op++ {
			ops = append(ops, op)
		}
		return ops
	}
	set(immNone, 0x00, 0x01, 0x05, 0x0b, 0x0f, 0x1a, 0x1b, 0xd1)
	set(immNone, span(0x45, 0xc4)...) // numeric instructions
	set(immLoop, 0x03)
	set(immBlock, 0x02, 0x04)
	set(immIndex, 0x0c, 0x0d, 0x10, 0xd2, 0x3f, 0x40)
	set(immIndex, span(0x20, 0x26)...) // locals, globals, tables
	set(immTwoIndexes, 0x11)           // call_indirect
	set(immBrTable, 0x0e)
	set(immTypes, 0x1c)
	set(immMemarg, span(0x28, 0x3e)...) // loads and stores
	set(immI32, 0x41)
	set(immI64, 0x42)
	set(immF32, 0x43)
	set(immF64, 0x44)
	set(immByte, 0xd0)
	set(immPrefixFC, 0xfc)
	return t
}()

// A reader reads the binary format, and remembers its first error, after
// which it reads zeros.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) done() bool { return r.err != nil || r.off >= len(r.b) }

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at byte %d", errNotInterruptible, fmt.Sprintf(format, args...), r.off)
	}
	r.off = len(r.b)
}

func (r *reader) byte() byte {
	if r.off < len(r.b) {
		r.off++
		return r.b[r.off-1]
	}
	return r.end()
}

// end fails for a read past the end; not inlined, so that byte is.
//
//go:noinline
func (r *reader) end() byte {
	r.fail("unexpected end")
	return 0
}

func (r *reader) bytes(n uint32) []byte {
	if uint64(n) > uint64(len(r.b)-r.off) {
		r.fail("unexpected end")
		return nil
	}
	r.off += int(n)
	return r.b[r.off-int(n) : r.off]
}

// u32 reads an unsigned LEB128 of at most 32 bits.
func (r *reader) u32() uint32 {
	if r.off < len(r.b) && r.b[r.off] < 0x80 {
		r.off++
		return uint32(r.b[r.off-1])
	}
	var v uint64
	for i := 0; i < 5; i++ {
		c := r.byte()
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if v > 1<<32-1 {
				r.fail("an integer out of range")
			}
			return uint32(v)
		}
	}
	r.fail("an integer too long")
	return 0
}

// count reads the length of a vector, each of whose elements takes a byte
// at least.
func (r *reader) count() uint32 {
	n := r.u32()
	if uint64(n) > uint64(len(r.b)-r.off) {
		r.fail("a vector of %d elements in %d bytes", n, len(r.b)-r.off)
		return 0
	}
	return n
}

// sleb skips a signed LEB128 of at most max bytes.
func (r *reader) sleb(max int) {
	for i := r.off; i < len(r.b) && i-r.off < max; i++ {
		if r.b[i]&0x80 == 0 {
			r.off = i + 1
			return
		}
	}
	r.fail("an integer too long, or cut short")
}

// s32 reads a signed LEB128 of at most 32 bits.
func (r *reader) s32() int32 {
	var v int64
	for i := 0; i < 5; i++ {
		c := r.byte()
		v |= int64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if c&0x40 != 0 {
				v -= 1 << (7 * (i + 1)) // the sign, from bit 6 of the last byte
			}
			if v < -1<<31 || v > 1<<31-1 {
				r.fail("an integer out of range")
			}
			return int32(v)
		}
	}
	r.fail("an integer too long")
	return 0
}

// blockType skips a block type: 0x40, a value type or a type index.
func (r *reader) blockType() { r.sleb(5) }

// memarg skips a memory argument: its alignment (whose bit 6 says a
// memory index follows) and offset.
func (r *reader) memarg() {
	if r.u32()&0x40 != 0 {
		r.u32()
	}
	r.sleb(10) // an offset: 64 bits for a 64-bit memory
}

// limits reads the limits of a table or memory, and returns the minimum.
// Limits of 64 bits (memory64, which wazero does not run) fail.
func (r *reader) limits() uint32 {
	flags := r.byte() // bit 0: a maximum follows
	least := r.u32()
	if flags&1 != 0 {
		r.u32()
	}
	return least
}
