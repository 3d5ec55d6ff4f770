package wasm

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// dataModule is a module of one memory page and the data segments segs,
// each written as flags (0: active in memory 0), an i32.const offset and
// the bytes.
func dataModule(segs ...dataSegment) []byte {
	p := binary.AppendUvarint(nil, uint64(len(segs)))
	for _, s := range segs {
		p = append(p, 0x00, 0x41)
		p = appendSLEB(p, int64(int32(s.offset)))
		p = append(p, 0x0b)
		p = binary.AppendUvarint(p, uint64(len(s.data)))
		p = append(p, s.data...)
	}
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, sectionMemory, 0x03, 0x01, 0x00, 0x01)
	m = append(m, sectionData)
	m = binary.AppendUvarint(m, uint64(len(p)))
	return append(m, p...)
}

func TestDataSegmentsAreMerged(t *testing.T) {
	seg := func(offset uint32, data string) dataSegment { return dataSegment{offset, []byte(data)} }
	long := strings.Repeat("x", 40) // for the section to outweigh a gap of 63
	tests := []struct {
		name string
		segs []dataSegment
		want int // segments after the rewrite
	}{
		{"touching", []dataSegment{seg(0, "ab"), seg(2, "cd")}, 1},
		{"a gap of 63", []dataSegment{seg(10, long), seg(113, long)}, 1},
		{"a gap of 64", []dataSegment{seg(10, long), seg(114, long)}, 2},
		{"out of order", []dataSegment{seg(300, "late"), seg(100, "ab"), seg(104, "cd"), seg(200, "x")}, 3},
		{"high offsets", []dataSegment{seg(65000, "ab"), seg(65010, "cd")}, 1},
		{"empty segments", []dataSegment{seg(5, ""), seg(5, "ab"), seg(9, "")}, 1},
		{"overlapping", []dataSegment{seg(0, "abcd"), seg(2, "XY")}, 2},
		{"one", []dataSegment{seg(7, "abc")}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			module := dataModule(tt.segs...)
			out, err := interruptible(module)
			if err != nil {
				t.Fatal(err)
			}
			if n := DataSegments(out); n != tt.want {
				t.Errorf("%d segments, want %d", n, tt.want)
			}
			if !bytes.Equal(InitialMemory(t, out), InitialMemory(t, module)) {
				t.Error("memory differs after the rewrite")
			}
		})
	}
}

// TestDataSegmentsNotMerged: segments whose merging could change what a
// module does are left as they are.
func TestDataSegmentsNotMerged(t *testing.T) {
	plain := dataModule(dataSegment{0, []byte("ab")}, dataSegment{4, []byte("cd")})
	p := plain[bytes.IndexByte(plain, sectionData)+2:] // the data section's content (its size is one byte)
	for _, tt := range []struct{ name, content string }{
		{"passive", "\x02\x01\x02ab\x00\x41\x04\x0b\x02cd"},
		{"at a global's value", "\x02\x00\x23\x00\x0b\x02ab\x00\x41\x04\x0b\x02cd"},
		{"explicit memory", "\x02\x02\x00\x41\x00\x0b\x02ab\x00\x41\x04\x0b\x02cd"},
		{"cut short", "\x02\x00\x41\x00\x0b\x02ab\x00\x41"},
		{"trailing bytes", string(p) + "\x00"},
	} {
		if got := coalesceData([]byte(tt.content)); string(got) != tt.content {
			t.Errorf("%s: rewritten to %x", tt.name, got)
		}
	}
	if got := coalesceData(p); bytes.Equal(got, p) {
		t.Errorf("the plain segments were not merged: %x", got)
	}
	// Empty segments 63 bytes apart: merged, they would hold 13 times the
	// section's bytes.
	var empty []dataSegment
	for i := range 1000 {
		empty = append(empty, dataSegment{uint32(63 * i), nil})
	}
	m := dataModule(empty...)
	if out, err := interruptible(m); err != nil || DataSegments(out) != 1000 {
		t.Errorf("empty segments 63 bytes apart: %d segments after the rewrite (%v), want 1000 as they were", DataSegments(out), err)
	}
}
