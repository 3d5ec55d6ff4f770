package main

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// A get needs one entry, so it does not outline the file: an outline costs
// a string and a place in a sorted index for every entry, and a look at
// every line, which took a module 36 of a get's 52 ms in a file of 10,000
// entries of 700 bytes (BenchmarkFlagfile in controller/wasm). seek reads
// the lines of the entry it seeks and the line of every entry's name, and
// skips the indented lines between, eight bytes at a time: Go's
// WebAssembly has no vector instructions, and bytes.IndexByte compares a
// byte at a time.

// seek returns where the entry called name is in data, a file read whole,
// and whether there is one. It returns errNotPlain when the file is not
// plain (see scan.go) or when the entry may hold an anchor or an alias,
// which could tie it to another; and an error naming the file and line
// when the name is there twice. Other names twice make a list fail, and
// are left to it.
func seek(data []byte, path, name string) (e span, found bool, err error) {
	t := 0
	// Before the first entry: comments and blank lines only.
	for t < len(data) && (data[t] == ' ' || data[t] == '\n' || data[t] == '\r' || data[t] == '#') {
		next := lineEnd(data, t)
		if data[t] == ' ' && !blank(data[t:next]) && data[t+indent(data[t:next])] != '#' {
			return span{}, false, errNotPlain
		}
		t = next
	}
	for t < len(data) {
		next := lineEnd(data, t)
		switch data[t] {
		case '\n', '\r', '#':
		default:
			key, ok := plainKeyBytes(data[t:next])
			if !ok {
				return span{}, false, errNotPlain
			}
			if string(key) != name {
				break
			}
			if found {
				return span{}, false, fmt.Errorf("%s:%d: malformed: a second entry %q", path, lineAt(data, t), name)
			}
			found = true
			e = span{name: name, start: t, end: next}
			// The entry ends after its last line that is indented and not
			// blank.
			for next < len(data) && (data[next] == ' ' || data[next] == '\n' || data[next] == '\r' || data[next] == '#') {
				end := lineEnd(data, next)
				if data[next] == ' ' && !blank(data[next:end]) {
					e.end = end
				}
				next = end
			}
		}
		t = unindented(data, next)
	}
	if found && hasAnchor(data[e.start:e.end]) {
		return span{}, false, errNotPlain
	}
	return e, found, nil
}

// indent returns how many spaces line starts with.
func indent(line []byte) int {
	i := 0
	for i < len(line) && line[i] == ' ' {
		i++
	}
	return i
}

// blank reports whether line holds only spaces and its line break.
func blank(line []byte) bool {
	i := indent(line)
	return i == len(line) || line[i] == '\n' || line[i] == '\r'
}

// Words of eight bytes, for finding bytes in them: ones has a 1 in each
// byte, highs the high bit of each byte, lows the other bits.
const ones, highs, lows = 0x0101010101010101, 0x8080808080808080, 0x7f7f7f7f7f7f7f7f

// zeros returns the high bit of each byte of x that is zero, and no other.
func zeros(x uint64) uint64 { return ^(((x & lows) + lows) | x) & highs }

// lineEnd returns the offset after the newline that ends the line at
// offset t of data, or len(data).
func lineEnd(data []byte, t int) int {
	i := t
	for ; i+8 <= len(data); i += 8 {
		if m := zeros(binary.LittleEndian.Uint64(data[i:]) ^ ('\n' * ones)); m != 0 {
			return i + bits.TrailingZeros64(m)/8 + 1
		}
	}
	for ; i < len(data); i++ {
		if data[i] == '\n' {
			return i + 1
		}
	}
	return len(data)
}

// unindented returns the offset of the first line, from the line at offset
// t of data on, that does not start with a space, or len(data).
func unindented(data []byte, t int) int {
	if t >= len(data) || data[t] != ' ' {
		return t
	}
	i := t
	for ; i+16 <= len(data); i += 8 {
		x := binary.LittleEndian.Uint64(data[i:]) ^ ('\n' * ones)
		// (x - ones) &^ x has a high bit set in each byte of x that is
		// zero, and may in bytes above one: a cheap test that skips the
		// words without a newline.
		if (x-ones)&^x&highs == 0 {
			continue
		}
		// Newlines followed by a byte that is not a space.
		y := binary.LittleEndian.Uint64(data[i+1:]) ^ (' ' * ones)
		if m := zeros(x) &^ zeros(y); m != 0 {
			return i + bits.TrailingZeros64(m)/8 + 1
		}
	}
	for ; i+1 < len(data); i++ {
		if data[i] == '\n' && data[i+1] != ' ' {
			return i + 1
		}
	}
	return len(data)
}
