package controller

import (
	"bytes"
	"encoding/json"

	"github.com/cup-dev/cup/internal/document"
)

// parseCommon decodes data as ParseResource's encoding/json decoder does,
// for the shape nearly every resource file has: one object whose keys are
// its fields' exact names, each at most once; strings with no escapes and
// no control characters; labels and annotations objects of such strings;
// a spec that is an object or null. For anything else it reports false,
// and encoding/json, the one authority on what is accepted and on the
// words of a refusal, decodes data again. A listing decodes thousands of
// files: this reads each once, where encoding/json scans it and then
// decodes it through reflection. data must be UTF-8. What it takes nests
// at most document.MaxDepth deep, as CheckDepth has it: the resource's
// object is the first level, its spec's the second.
func parseCommon(data []byte) (*Resource, bool) {
	p := scanner{d: data}
	var r Resource
	ok := p.fields([]string{"apiVersion", "kind", "metadata", "spec"}, func(i int) (ok bool) {
		switch i {
		case 0:
			r.APIVersion, ok = p.str()
		case 1:
			r.Kind, ok = p.str()
		case 2:
			ok = p.metadata(&r.Metadata)
		default:
			r.Spec, ok = p.spec()
		}
		return ok
	})
	p.space()
	if !ok || p.i != len(p.d) {
		return nil, false
	}
	return &r, true
}

// scanner reads JSON from d at i.
type scanner struct {
	d []byte
	i int
}

func (p *scanner) space() {
	for p.i < len(p.d) {
		switch p.d[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// eat reports whether c comes next after whitespace, and reads past it.
func (p *scanner) eat(c byte) bool {
	p.space()
	if p.i < len(p.d) && p.d[p.i] == c {
		p.i++
		return true
	}
	return false
}

// raw reads a string that has no escapes and no control characters, and
// returns its bytes, which alias d.
func (p *scanner) raw() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	start := p.i
	for j := start; j < len(p.d); j++ {
		switch c := p.d[j]; {
		case c == '"':
			p.i = j + 1
			return p.d[start:j], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

func (p *scanner) str() (string, bool) {
	b, ok := p.raw()
	return string(b), ok
}

// object reads an object, calling field with each key; field reads the
// value.
func (p *scanner) object(field func(key []byte) bool) bool {
	if !p.eat('{') {
		return false
	}
	if p.eat('}') {
		return true
	}
	for {
		key, ok := p.raw()
		if !ok || !p.eat(':') || !field(key) {
			return false
		}
		if !p.eat(',') {
			return p.eat('}')
		}
	}
}

// fields reads an object whose keys are among names, each at most once,
// calling read with the index of each key's name to read its value.
func (p *scanner) fields(names []string, read func(i int) bool) bool {
	var seen uint64
	return p.object(func(key []byte) bool {
		for i, name := range names {
			if string(key) == name {
				if seen&(1<<i) != 0 {
					return false
				}
				seen |= 1 << i
				return read(i)
			}
		}
		return false
	})
}

func (p *scanner) metadata(m *Metadata) bool {
	return p.fields([]string{"namespace", "name", "labels", "annotations", "resourceVersion"}, func(i int) (ok bool) {
		switch i {
		case 0:
			m.Namespace, ok = p.str()
		case 1:
			m.Name, ok = p.str()
		case 2:
			m.Labels, ok = p.strings()
		case 3:
			m.Annotations, ok = p.strings()
		default:
			m.ResourceVersion, ok = p.str()
		}
		return ok
	})
}

// strings reads an object of strings. Like encoding/json, it keeps the
// last of a repeated key, and makes a map for an empty object.
func (p *scanner) strings() (map[string]string, bool) {
	m := map[string]string{}
	ok := p.object(func(key []byte) bool {
		v, ok := p.str()
		m[string(key)] = v
		return ok
	})
	return m, ok
}

// spec reads an object, valid as json.Valid has it (prefixJSON), into a copy of its
// bytes as they are (a json.RawMessage), or null into nil.
func (p *scanner) spec() (json.RawMessage, bool) {
	p.space()
	rest := p.d[p.i:]
	if bytes.HasPrefix(rest, []byte("null")) {
		p.i += 4
		return nil, true
	}
	if len(rest) == 0 || rest[0] != '{' {
		return nil, false
	}
	n, ok := prefixJSON(rest, document.MaxDepth-1)
	if !ok {
		return nil, false
	}
	p.i += n
	return bytes.Clone(rest[:n]), true
}
