package gitfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Git tree entry modes, as stored in tree objects.
const (
	modeTypeMask = 0o170000
	modeDir      = 0o040000
	modeRegular  = 0o100000
	modeSymlink  = 0o120000
	modeGitlink  = 0o160000
)

// entry is one entry of a decoded tree.
type entry struct {
	name string
	mode filemode.FileMode
	hash plumbing.Hash
}

func (e *entry) isDir() bool     { return e.mode&modeTypeMask == modeDir }
func (e *entry) isSymlink() bool { return e.mode&modeTypeMask == modeSymlink }
func (e *entry) isGitlink() bool { return e.mode&modeTypeMask == modeGitlink }

// isFile reports whether the entry is a blob: a regular file or a symbolic link.
func (e *entry) isFile() bool {
	t := e.mode & modeTypeMask
	return t == modeRegular || t == modeSymlink
}

// visible reports whether the entry is shown by the file systems: gitlinks
// (submodules) and entries whose names are not valid path elements are kept
// in the tree but hidden.
func (e *entry) visible() bool {
	return !e.isGitlink() && validName(e.name)
}

// fsMode maps a tree entry mode to a file mode.
func fsMode(m filemode.FileMode) fs.FileMode {
	switch m & modeTypeMask {
	case modeDir:
		return fs.ModeDir | 0o755
	case modeSymlink:
		return fs.ModeSymlink | 0o777
	case modeGitlink:
		return fs.ModeDir | 0o755
	}
	if m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// validName reports whether name can be an element of an fs.ValidPath.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// tree is a decoded tree object. It is immutable once built and shared by
// every reader through the TreeCache.
type tree struct {
	// entries are sorted by name in byte order, as fs.ReadDir wants them.
	entries []entry
	// gitOrder is true when entries are also in Git's tree order, in which
	// directories sort as if their names ended in a slash.
	gitOrder bool
}

// find returns the index of the entry called name.
func (t *tree) find(name string) (int, bool) {
	return slices.BinarySearchFunc(t.entries, name, func(e entry, name string) int {
		return strings.Compare(e.name, name)
	})
}

// lookup returns the entry called name.
func (t *tree) lookup(name string) (*entry, bool) {
	i, ok := t.find(name)
	if !ok {
		return nil, false
	}
	return &t.entries[i], true
}

var errMalformedTree = errors.New("malformed tree object")

// scanTree finds the entry called name in the content of a tree object
// without decoding the others. Names are unique in a well-formed tree; in
// another, the first is found, as parseTree's lookup finds it.
func scanTree(data []byte, name string) (entry, bool, error) {
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp <= 0 {
			return entry{}, false, errMalformedTree
		}
		mode, err := strconv.ParseUint(string(data[:sp]), 8, 32)
		if err != nil {
			return entry{}, false, errMalformedTree
		}
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul < 0 || len(data) < nul+1+len(plumbing.ZeroHash) {
			return entry{}, false, errMalformedTree
		}
		if string(data[:nul]) == name {
			e := entry{name: name, mode: filemode.FileMode(mode)}
			copy(e.hash[:], data[nul+1:])
			return e, true, nil
		}
		data = data[nul+1+len(plumbing.ZeroHash):]
	}
	return entry{}, false, nil
}

// parseTree decodes the content of a tree object.
func parseTree(data []byte) (*tree, error) {
	// One string holds every name; entries slice into it.
	s := string(data)
	entries := make([]entry, 0, len(s)/40+1)
	for len(s) > 0 {
		sp := strings.IndexByte(s, ' ')
		if sp <= 0 {
			return nil, errMalformedTree
		}
		mode, err := strconv.ParseUint(s[:sp], 8, 32)
		if err != nil {
			return nil, errMalformedTree
		}
		s = s[sp+1:]
		nul := strings.IndexByte(s, 0)
		if nul < 0 || len(s) < nul+1+len(plumbing.ZeroHash) {
			return nil, errMalformedTree
		}
		e := entry{name: s[:nul], mode: filemode.FileMode(mode)}
		copy(e.hash[:], s[nul+1:])
		entries = append(entries, e)
		s = s[nul+1+len(plumbing.ZeroHash):]
	}
	return newTree(entries), nil
}

// newTree makes a tree of entries, sorting them by name if needed. It takes
// ownership of entries.
func newTree(entries []entry) *tree {
	t := &tree{entries: entries, gitOrder: true}
	byName := true
	for i := 1; i < len(entries); i++ {
		a, b := &entries[i-1], &entries[i]
		if a.name >= b.name {
			byName = false
		}
		if gitCompare(a, b) >= 0 {
			t.gitOrder = false
		}
	}
	if !byName {
		slices.SortStableFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
		t.gitOrder = slices.IsSortedFunc(entries, func(a, b entry) int { return gitCompare(&a, &b) })
	}
	return t
}

// gitCompare orders entries as Git does in tree objects: by name, with the
// name of a directory compared as if it ended in "/".
func gitCompare(a, b *entry) int {
	n := min(len(a.name), len(b.name))
	if c := strings.Compare(a.name[:n], b.name[:n]); c != 0 {
		return c
	}
	ca, cb := gitOrderByte(a, n), gitOrderByte(b, n)
	switch {
	case ca < cb:
		return -1
	case ca > cb:
		return 1
	}
	return 0
}

func gitOrderByte(e *entry, i int) int {
	if i < len(e.name) {
		return int(e.name[i])
	}
	if e.isDir() {
		return '/'
	}
	return 0
}

// encode serialises the tree in Git's format.
func (t *tree) encode() []byte {
	entries := t.entries
	if !t.gitOrder {
		entries = slices.Clone(entries)
		slices.SortStableFunc(entries, func(a, b entry) int { return gitCompare(&a, &b) })
	}
	size := 0
	for i := range entries {
		size += 6 + 1 + len(entries[i].name) + 1 + len(plumbing.ZeroHash)
	}
	buf := make([]byte, 0, size)
	for i := range entries {
		e := &entries[i]
		switch e.mode {
		case 0o100644:
			buf = append(buf, "100644 "...)
		case 0o040000:
			buf = append(buf, "40000 "...)
		default:
			buf = strconv.AppendUint(buf, uint64(e.mode), 8)
			buf = append(buf, ' ')
		}
		buf = append(buf, e.name...)
		buf = append(buf, 0)
		buf = append(buf, e.hash[:]...)
	}
	return buf
}

// parseCommitTree returns the tree of a commit object.
func parseCommitTree(data []byte) (plumbing.Hash, error) {
	line, _, _ := bytes.Cut(data, []byte{'\n'})
	hex, ok := bytes.CutPrefix(line, []byte("tree "))
	if !ok {
		return plumbing.ZeroHash, errors.New("malformed commit object: no tree")
	}
	return parseHex(hex)
}

// parseTagTarget returns the object a tag object points to and its type.
func parseTagTarget(data []byte) (plumbing.Hash, plumbing.ObjectType, error) {
	var (
		target plumbing.Hash
		typ    plumbing.ObjectType
		err    error
		haveID bool
	)
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		if len(line) == 0 {
			break // end of headers
		}
		if v, ok := bytes.CutPrefix(line, []byte("object ")); ok {
			if target, err = parseHex(v); err != nil {
				return plumbing.ZeroHash, 0, err
			}
			haveID = true
		} else if v, ok := bytes.CutPrefix(line, []byte("type ")); ok {
			if typ, err = plumbing.ParseObjectType(string(v)); err != nil {
				return plumbing.ZeroHash, 0, err
			}
		}
	}
	if !haveID || typ == plumbing.InvalidObject {
		return plumbing.ZeroHash, 0, errors.New("malformed tag object")
	}
	return target, typ, nil
}

// parseHex parses a full hexadecimal object id.
func parseHex[T string | []byte](b T) (plumbing.Hash, error) {
	var h plumbing.Hash
	if len(b) != 2*len(h) {
		return h, fmt.Errorf("malformed object id %q", b)
	}
	for i := range h {
		hi, ok1 := unhex(b[2*i])
		lo, ok2 := unhex(b[2*i+1])
		if !ok1 || !ok2 {
			return plumbing.ZeroHash, fmt.Errorf("malformed object id %q", b)
		}
		h[i] = hi<<4 | lo
	}
	return h, nil
}

// ParseHash parses a full hexadecimal object id, in lower or upper case.
func ParseHash(s string) (plumbing.Hash, bool) {
	h, err := parseHex(s)
	return h, err == nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
