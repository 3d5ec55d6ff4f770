package wasm

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// Go's linker writes a module's data as one segment for each run of bytes
// that are not zero: the flagfile module has 51,362 data segments holding
// 1.3 MB. wazero evaluates each segment's offset, with allocations, and
// copies it, at every instantiation, and a call instantiates its module:
// 3.5 of the 5.5 ms a call of that module cost before it ran
// (BenchmarkFlagfile, a CPU profile: wasm.(*ModuleInstance).applyData).
// The rewrite merges segments fewer than dataGap zero bytes apart, which
// gives that module 36 segments of 2.2 MB: memory starts with the same
// bytes, as a fresh memory holds zeros in the gaps.

// dataGap is the most zero bytes a merged segment holds between two.
const dataGap = 64

// A dataSegment is an active segment of memory 0 at a constant offset.
type dataSegment struct {
	offset uint32
	data   []byte
}

// coalesceData returns the content of a data section with its segments
// merged (see above), or p as it is when it holds a segment that is
// passive, of another memory or at an offset that is not a constant, or
// segments that overlap, whose order would matter, or when the zero bytes
// merged in would outweigh the section.
func coalesceData(p []byte) []byte {
	r := reader{b: p}
	n := r.count()
	segs := make([]dataSegment, 0, n)
	for range n {
		if r.u32() != 0 || r.byte() != 0x41 { // active in memory 0; i32.const
			return p
		}
		offset := r.s32()
		if r.byte() != 0x0b { // end
			return p
		}
		data := r.bytes(r.u32())
		if r.err != nil {
			return p
		}
		segs = append(segs, dataSegment{uint32(offset), data})
	}
	if r.err != nil || r.off != len(r.b) {
		return p
	}
	slices.SortStableFunc(segs, func(a, b dataSegment) int { return cmp.Compare(a.offset, b.offset) })
	// Runs of segments to merge, each from the first of its segments.
	var runs []int
	var zeros uint64 // the gaps the merged segments hold
	for i, s := range segs {
		if i == 0 {
			runs = append(runs, 0)
			continue
		}
		end := uint64(segs[i-1].offset) + uint64(len(segs[i-1].data))
		switch gap := uint64(s.offset) - end; {
		case uint64(s.offset) < end:
			return p
		case gap >= dataGap:
			runs = append(runs, i)
		default:
			zeros += gap
		}
	}
	// A section of empty segments 63 bytes apart would grow thirteenfold:
	// the merge may at most double it.
	if len(runs) == len(segs) || zeros > uint64(len(p)) {
		return p
	}
	out := binary.AppendUvarint(make([]byte, 0, len(p)+len(p)/2), uint64(len(runs)))
	for k, i := range runs {
		j := len(segs)
		if k+1 < len(runs) {
			j = runs[k+1]
		}
		from, to := uint64(segs[i].offset), uint64(segs[j-1].offset)+uint64(len(segs[j-1].data))
		out = append(out, 0x00, 0x41)
		out = appendSLEB(out, int64(int32(segs[i].offset)))
		out = append(out, 0x0b)
		out = binary.AppendUvarint(out, to-from)
		at := from
		for _, s := range segs[i:j] {
			out = append(out, make([]byte, uint64(s.offset)-at)...)
			out = append(out, s.data...)
			at = uint64(s.offset) + uint64(len(s.data))
		}
	}
	return out
}
