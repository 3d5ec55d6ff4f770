package main

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// A get, put or delete needs one entry, so it does not outline the file:
// an outline costs a string and a place in a sorted index for every entry,
// and a look at every line, which took a module 36 of a get's 52 ms in a
// file of 10,000 entries of 700 bytes (BenchmarkFlagfile in
// controller/wasm). seek and locate read the lines of the entries they
// need and the line of every entry's name, and skip the indented lines
// between, eight bytes at a time: Go's WebAssembly has no vector
// instructions, and bytes.IndexByte compares a byte at a time.

// seek returns where the entry called name is in data, a file read whole,
// and whether there is one. It returns errNotPlain when the file is not
// plain (see scan.go) or when the entry may hold an anchor or an alias,
// which could tie it to another; and an error naming the file and line
// when the name is there twice. Other names twice make a list fail, and
// are left to it.
func seek(data []byte, path, name string) (e span, found bool, err error) {
	m, err := marks(data, path, name)
	if err != nil || m.found < 0 {
		return span{}, false, err
	}
	e = span{name: name, start: m.found, end: entryEnd(data, m.found)}
	if hasAnchor(data[e.start:e.end]) {
		return span{}, false, errNotPlain
	}
	return e, true, nil
}

// locate returns the place of the entry called name in data (see place),
// as the outline of a plain file has it, and whether data holds an entry
// at all, reading the lines seek does. It returns errNotPlain as seek
// does, with the place for the entry: an anchor or alias in the place
// could tie the entry to another that an edit would change.
func locate(data []byte, path, name string) (pl place, any bool, err error) {
	m, err := marks(data, path, name)
	if err != nil || m.last < 0 {
		return place{}, false, err
	}
	before := m.beforeFound
	if m.found < 0 {
		before = m.beforeLast // the place of the last entry
	}
	pl = place{to: len(data), before: before >= 0, found: m.found >= 0}
	if pl.before {
		pl.from = entryEnd(data, before)
	}
	if m.found >= 0 && m.afterFound >= 0 {
		pl.to, pl.after = m.afterFound, true
	}
	if hasAnchor(data[pl.from:pl.to]) {
		return place{}, false, errNotPlain
	}
	return pl, true, nil
}

// entryMarks are the offsets of the lines of entries' names that seek and
// locate need, each -1 for none: the entry called name, the entries just
// before and after it, the last entry and the one before it.
type entryMarks struct {
	found, beforeFound, afterFound int
	last, beforeLast               int
}

// marks reads the line of each entry's name in data, and the lines before
// the first entry, which may only be comments and blank lines; it returns
// errNotPlain when the file is not plain, and an error naming the file and
// line when the name is there twice.
func marks(data []byte, path, name string) (entryMarks, error) {
	m := entryMarks{-1, -1, -1, -1, -1}
	t := 0
	for t < len(data) && !nameLine(data[t]) {
		next := lineEnd(data, t)
		if data[t] == ' ' && !blank(data[t:next]) && data[t+indent(data[t:next])] != '#' {
			return m, errNotPlain // content before the first entry
		}
		t = next
	}
	for t < len(data) {
		next := lineEnd(data, t)
		if nameLine(data[t]) { // else blank or a comment: t is never indented
			key, ok := plainKeyBytes(data[t:next])
			if !ok {
				return m, errNotPlain
			}
			if m.found >= 0 && m.afterFound < 0 {
				m.afterFound = t
			}
			if string(key) == name {
				if m.found >= 0 {
					return m, fmt.Errorf("%s:%d: malformed: a second entry %q", path, lineAt(data, t), name)
				}
				m.found, m.beforeFound = t, m.last
			}
			m.beforeLast, m.last = m.last, t
		}
		t = unindented(data, next)
	}
	return m, nil
}

// entryEnd returns the end of the entry whose name is on the line at
// offset start of data: the offset after the last line below it that is
// indented and not blank, or after the line of its name.
func entryEnd(data []byte, start int) int {
	end := lineEnd(data, start)
	for next := end; next < len(data) && !nameLine(data[next]); {
		e := lineEnd(data, next)
		if data[next] == ' ' && !blank(data[next:e]) {
			end = e
		}
		next = e
	}
	return end
}

// nameLine reports whether a line starting with c may hold an entry's
// name: it is not indented, blank or a comment.
func nameLine(c byte) bool { return c != ' ' && c != '\n' && c != '\r' && c != '#' }

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
