package main

import (
	"fmt"

	"github.com/cup-dev/cup/sdk/go/controller"
)

// entries parses entries [i, j) of a plain file, all at once.
func (o *outline) parse(path, kind, namespace string, i, j int) ([]*entry, error) {
	from, to := o.entries[i].start, o.entries[j-1].end
	f, err := parseAt(path, kind, namespace, o.data[from:to], o.line(from))
	if err != nil {
		return nil, err
	}
	ok := len(f.entries) == j-i
	for k := 0; ok && k < len(f.entries); k++ {
		ok = f.entries[k].res.Metadata.Name == o.entries[i+k].name
	}
	if !ok {
		return nil, fmt.Errorf("%s:%d: malformed: the lines of entries %q to %q do not hold them alone", path, o.line(from), o.entries[i].name, o.entries[j-1].name)
	}
	return f.entries, nil
}

// batchBytes is about how much YAML a list parses at once: parsing entries
// together spares setting up a parser for each, and the tree of 16 KiB of
// YAML takes about 300 KiB.
const batchBytes = 16 << 10

// each calls yield with the entries of a plain file: those fastEntry reads
// one by one, the others parsed a batch at a time.
func (o *outline) each(path, kind, namespace string, yield func(*controller.Resource) error) error {
	var fast fastParser
	for i := 0; i < len(o.entries); {
		e := o.entries[i]
		if r, ok := fast.entry(kind, namespace, e.name, o.data[e.start:e.end]); ok {
			if err := yield(r); err != nil {
				return err
			}
			i++
			continue
		}
		j := i + 1
		for j < len(o.entries) && o.entries[j].end-o.entries[i].start <= batchBytes {
			j++
		}
		es, err := o.parse(path, kind, namespace, i, j)
		if err != nil {
			return err
		}
		for _, e := range es {
			if err := yield(e.res); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

// A place is the part of a plain file that a put or delete of an entry
// parses and rewrites: bytes [from, to), from the end of the entry before
// (or the start of the file) to the name of the entry after (or the end of
// the file), and whether entries come before and after it. found says
// whether it holds the entry called name; else it holds the last entry,
// after which a new one goes.
type place struct {
	from, to      int
	before, after bool
	found         bool
}

// editPart parses the part of data, a plain file read whole, at pl.
func editPart(data []byte, path, kind, namespace string, pl place) (part *file, from, to int, err error) {
	if part, err = parseAt(path, kind, namespace, data[pl.from:pl.to], lineAt(data, pl.from)); err != nil {
		return nil, 0, 0, err
	}
	part.before, part.after = pl.before, pl.after
	return part, pl.from, pl.to, nil
}

// splice returns data with bytes [from, to) replaced by text, in place when
// there is room.
func splice(data []byte, from, to int, text []byte) []byte {
	size := len(data) - (to - from) + len(text)
	if size > cap(data) {
		out := make([]byte, 0, size)
		out = append(out, data[:from]...)
		out = append(out, text...)
		return append(out, data[to:]...)
	}
	tail := len(data) - to
	data = data[:max(len(data), size)]
	copy(data[from+len(text):], data[to:to+tail])
	copy(data[from:], text)
	return data[:size]
}
