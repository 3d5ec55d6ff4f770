package main

import (
	"fmt"
	"io/fs"

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

// plain reads the file of typ in namespace as a plain file: data is nil
// for a missing file, o nil for a file that is not plain.
func plain(fsys fs.FS, typ controller.Type, namespace string) (p string, data []byte, o *outline, err error) {
	if p, err = filePath(typ, namespace); err != nil {
		return "", nil, nil, err
	}
	if data, err = readFile(fsys, p); err != nil || data == nil {
		return p, nil, nil, err
	}
	o, err = outlineOf(data, p)
	if err == errNotPlain {
		return p, data, nil, nil
	}
	return p, data, o, err
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

// edit returns the part of a plain file that holds the entry called name,
// parsed, for a put or delete of it; or, when there is no such entry, the
// part that holds the last entry, after which a new one goes. The part runs
// from the end of the entry before (or the start of the file) to the name
// of the entry after (or the end of the file).
func (o *outline) edit(path, kind, namespace, name string) (part *file, from, to int, err error) {
	at, ok := o.find(name)
	if !ok {
		at = len(o.entries) - 1
	}
	to = len(o.data)
	if at > 0 {
		from = o.entries[at-1].end
	}
	if at+1 < len(o.entries) {
		to = o.entries[at+1].start
	}
	if part, err = parseAt(path, kind, namespace, o.data[from:to], o.line(from)); err != nil {
		return nil, 0, 0, err
	}
	part.before, part.after = at > 0, at+1 < len(o.entries)
	return part, from, to, nil
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
