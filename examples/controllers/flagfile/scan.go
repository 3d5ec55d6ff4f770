package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
)

// A file of thousands of entries does not fit a module's memory as a YAML
// tree (yaml.v3 takes about 20 bytes of memory a byte of YAML), nor does
// parsing it all fit a call's time, so calls read a plain file, below, as
// lines and parse only the entries they need, one batch at a time: get the
// lines of its entry, list one batch of entries after another, and put and
// delete the entry they change, whose new lines they splice into the file.
// A call holds one copy of the file. Other files are parsed whole.
//
// A plain file is a block mapping at column 0 whose keys are written plainly
// ("name:", with nothing after the colon but {} or a comment; an entry's
// fields on the lines below, indented), with comments and blank lines
// between, and no anchors or aliases, which could tie an entry to another.
// Its lines split into entries without parsing YAML: an entry is the line of
// its name and the indented lines below it.

// An outline is where the entries of a plain file are.
type outline struct {
	data    []byte
	lines   int // of the file before data, when data is a window of it
	entries []span
	byName  []int32 // indexes of entries, sorted by name

	// The line of the file at offset lineOff of data, for line to count
	// on from it: a list asks for the lines of its batches in order.
	lineOff, lineNo int
}

// line returns the number of the line of the file at offset off of data.
func (o *outline) line(off int) int {
	if o.lineNo == 0 || off < o.lineOff {
		o.lineOff, o.lineNo = 0, o.lines+1
	}
	o.lineNo += bytes.Count(o.data[o.lineOff:off], []byte("\n"))
	o.lineOff = off
	return o.lineNo
}

// find returns the index of the entry called name.
func (o *outline) find(name string) (int, bool) {
	i, ok := slices.BinarySearchFunc(o.byName, name, func(e int32, name string) int { return strings.Compare(o.entries[e].name, name) })
	if !ok {
		return -1, false
	}
	return int(o.byName[i]), true
}

// A span is where one entry of a plain file is: start is the offset of the
// line of its name, end the offset after the last line below it that is
// indented and not blank.
type span struct {
	name       string
	start, end int
}

// errNotPlain means a file is not plain.
var errNotPlain = errors.New("not a plain file")

// readFile reads the file at p, with room to grow by a few KiB in place; a
// missing file is nil.
func readFile(fsys fs.FS, p string) ([]byte, error) {
	file, err := fsys.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	size := 0
	if info, err := file.Stat(); err == nil && info.Size() > 0 && info.Size() < 1<<31 {
		size = int(info.Size())
	}
	data := make([]byte, 0, size+4096)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := file.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// outlineOf splits data, the file at path, into entries. It returns
// errNotPlain for a file that is not plain, and an error naming the file and
// line for a name twice.
func outlineOf(data []byte, path string) (*outline, error) { return outlineAt(data, path, 0) }

// outlineAt is outlineOf for data that comes after lines lines of the file.
func outlineAt(data []byte, path string, lines int) (*outline, error) {
	if hasAnchor(data) {
		return nil, errNotPlain
	}
	o := &outline{data: data, lines: lines}
	cur := -1 // the entry being read
	for t := 0; t < len(data); {
		next := len(data)
		if i := bytes.IndexByte(data[t:], '\n'); i >= 0 {
			next = t + i + 1
		}
		switch c := data[t]; c {
		case ' ':
			j := t
			for j < next && data[j] == ' ' {
				j++
			}
			if j == next || data[j] == '\n' || data[j] == '\r' {
				break // blank
			}
			if cur < 0 {
				if data[j] != '#' {
					return nil, errNotPlain // content before the first entry
				}
				break
			}
			o.entries[cur].end = next
		case '\n', '\r', '#':
		default:
			name, ok := plainKey(data[t:next])
			if !ok {
				return nil, errNotPlain
			}
			cur = len(o.entries)
			o.entries = append(o.entries, span{name: name, start: t, end: next})
		}
		t = next
	}
	// A sorted index rather than a map: a tenth of the memory.
	o.byName = make([]int32, len(o.entries))
	for i := range o.byName {
		o.byName[i] = int32(i)
	}
	slices.SortFunc(o.byName, func(a, b int32) int {
		return cmp.Or(strings.Compare(o.entries[a].name, o.entries[b].name), cmp.Compare(a, b))
	})
	for i := 1; i < len(o.byName); i++ {
		if a, b := o.entries[o.byName[i-1]], o.entries[o.byName[i]]; a.name == b.name {
			return nil, fmt.Errorf("%s:%d: malformed: a second entry %q", path, lines+lineAt(data, b.start), b.name)
		}
	}
	return o, nil
}

// lineAt returns the number of the line at offset off of data, counted
// from 1.
func lineAt(data []byte, off int) int { return bytes.Count(data[:off], []byte("\n")) + 1 }

// plainKey returns the name of an entry written plainly on line: "name:",
// and after the colon nothing, a comment or {}. Names that YAML reads as
// something else than their text (null, quoted, tagged) are not plain.
func plainKey(line []byte) (string, bool) {
	key, ok := plainKeyBytes(line)
	return string(key), ok
}

// plainKeyBytes is plainKey without a copy of the name.
func plainKeyBytes(line []byte) ([]byte, bool) {
	c := line[0]
	if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
		return nil, false
	}
	// One pass to the colon: a get reads the name of every entry, and
	// bytes.ContainsAny builds a set of bytes each time.
	colon := 1
	for ; colon < len(line) && line[colon] != ':'; colon++ {
		if c := line[colon]; c == ' ' || c == '\t' || c == '#' || c == '\n' {
			return nil, false
		}
	}
	if colon == len(line) {
		return nil, false
	}
	key, rest := line[:colon], line[colon+1:]
	if string(key) == "null" || string(key) == "Null" || string(key) == "NULL" {
		return nil, false
	}
	if len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '\r' && rest[0] != '\n' {
		return nil, false // "a:b" is a scalar, not a key
	}
	rest = bytes.TrimSpace(rest)
	rest = bytes.TrimSpace(bytes.TrimPrefix(rest, []byte("{}")))
	if len(rest) > 0 && rest[0] != '#' {
		return nil, false
	}
	return key, true
}

// hasAnchor reports whether data may hold an anchor (&a) or an alias (*a):
// an & or * at the start of a value (after a space, a dash, a colon or the
// start of a flow collection) followed by a name. Some that are in quoted
// text or comments are counted too, which only makes the file not plain.
func hasAnchor(data []byte) bool {
	for _, c := range []byte("&*") {
		for i := bytes.IndexByte(data, c); i >= 0; {
			if (i == 0 || bytes.IndexByte([]byte(" \n[{,-:"), data[i-1]) >= 0) &&
				i+1 < len(data) && bytes.IndexByte([]byte(" \t\r\n,]}"), data[i+1]) < 0 {
				return true
			}
			j := bytes.IndexByte(data[i+1:], c)
			if j < 0 {
				break
			}
			i += 1 + j
		}
	}
	return false
}

// windowBytes is about how much of a file a list holds at once.
const windowBytes = 1 << 20

// eachWindow calls fn with the outline of each window of the file at p: a
// run of whole entries, about windowBytes long (longer when one entry is).
// It returns errNotPlain when the file is not plain. Names twice in one
// window are an error; the caller finds those in different windows.
func eachWindow(fsys fs.FS, p string, fn func(o *outline) error) error {
	file, err := fsys.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer file.Close()
	buf := make([]byte, 0, windowBytes)
	lines, eof := 0, false
	for {
		for !eof && len(buf) < cap(buf) {
			n, err := file.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if errors.Is(err, io.EOF) {
				eof = true
			} else if err != nil {
				return err
			}
		}
		// A full window may end inside a line: outline whole lines only.
		end := len(buf)
		if !eof {
			if end = bytes.LastIndexByte(buf, '\n') + 1; end == 0 {
				buf = slices.Grow(buf, cap(buf)) // a line longer than the window
				continue
			}
		}
		o, err := outlineAt(buf[:end], p, lines)
		if err != nil {
			return err
		}
		keep := len(buf)
		if !eof {
			if len(o.entries) < 2 {
				buf = slices.Grow(buf, cap(buf)) // an entry longer than the window
				continue
			}
			// The last entry may go on after the window.
			keep = o.entries[len(o.entries)-1].start
			o.entries = o.entries[:len(o.entries)-1]
			o.byName = nil
		}
		if err := fn(o); err != nil || eof {
			return err
		}
		lines += bytes.Count(buf[:keep], []byte("\n"))
		buf = buf[:copy(buf, buf[keep:])]
	}
}
