package template

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/cup-dev/cup/controller"
)

// globFiles returns the files (and symbolic links, which reading resolves)
// matching pattern, sorted, as fs.Glob would list them but without
// directories. A missing directory, or a file in its place, gives no matches;
// other errors reading it are returned, where fs.Glob would hide them. When only the last
// element of the pattern has glob syntax, as in every useful list template,
// it reads that one directory and matches names with a precompiled matcher,
// which is several times faster than fs.Glob on large directories.
func globFiles(fsys fs.FS, pattern string) ([]string, error) {
	matches, err := globMatches(fsys, pattern)
	return paths(matches), err
}

// paths returns the matches' paths.
func paths(matches []globbed) []string {
	if matches == nil {
		return nil
	}
	out := make([]string, len(matches))
	for i, m := range matches {
		out[i] = m.path
	}
	return out
}

// globbed is a file globFiles found, and its content's id when its
// directory entry tells it (controller.ContentIDEntry).
type globbed struct {
	path, id string
}

func newMatch(p string, e fs.DirEntry) globbed {
	m := globbed{path: p}
	if ce, ok := e.(controller.ContentIDEntry); ok {
		m.id, _ = ce.ContentID()
	}
	return m
}

func byPath(a, b globbed) int { return strings.Compare(a.path, b.path) }

// globMatches is globFiles with each file's content id, where its entry
// gives it.
func globMatches(fsys fs.FS, pattern string) ([]globbed, error) {
	dir, file := path.Split(pattern)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	if hasMeta(dir) {
		return globSlow(fsys, pattern)
	}
	match := matcher(file)
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if fi, serr := fs.Stat(fsys, dir); serr == nil && !fi.IsDir() {
			return nil, nil // a file where the directory would be: no files in it
		}
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var out []globbed
	for _, e := range entries {
		if !e.IsDir() && match(e.Name()) {
			if dir == "." {
				out = append(out, newMatch(e.Name(), e))
			} else {
				out = append(out, newMatch(dir+"/"+e.Name(), e))
			}
		}
	}
	slices.SortFunc(out, byPath) // ReadDirFS implementations should sort, but need not
	return out, nil
}

// globSlow is globFiles for patterns with glob syntax in directory names,
// such as a sharded layout's "items/default/*/*.json". It walks the pattern
// one element at a time, matching directory entries, and never stats a file
// (fs.Glob plus a Stat per match costs a read of every file's header on a
// Git tree). Symbolic links to directories are not followed.
func globSlow(fsys fs.FS, pattern string) ([]globbed, error) {
	elems := strings.Split(pattern, "/")
	dirs := []string{"."}
	var out []globbed
	for i, elem := range elems {
		last := i == len(elems)-1
		match := matcher(elem)
		var next []string
		for _, d := range dirs {
			join := func(name string) string {
				if d == "." {
					return name
				}
				return d + "/" + name
			}
			if !last && !hasMeta(elem) {
				next = append(next, join(elem)) // the next ReadDir tells whether it exists
				continue
			}
			entries, err := fs.ReadDir(fsys, d)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if fi, serr := fs.Stat(fsys, d); serr == nil && !fi.IsDir() {
					continue // a file where a directory would be
				}
				return nil, fmt.Errorf("listing %s: %w", d, err)
			}
			for _, e := range entries {
				if !match(e.Name()) {
					continue
				}
				switch {
				case last && !e.IsDir():
					out = append(out, newMatch(join(e.Name()), e))
				case !last && e.IsDir():
					next = append(next, join(e.Name()))
				}
			}
		}
		dirs = next
	}
	slices.SortFunc(out, byPath)
	return out, nil
}

func hasMeta(s string) bool {
	return strings.ContainsAny(s, `*?[\`)
}

// matcher returns a function reporting whether a name matches the glob
// pattern elem, which has no slash and is well formed.
func matcher(elem string) func(string) bool {
	if !hasMeta(elem) {
		return func(name string) bool { return name == elem }
	}
	if i := strings.IndexByte(elem, '*'); i >= 0 && !hasMeta(elem[:i]) && !hasMeta(elem[i+1:]) {
		prefix, suffix := elem[:i], elem[i+1:]
		return func(name string) bool {
			return len(name) >= len(prefix)+len(suffix) && strings.HasPrefix(name, prefix) &&
				strings.HasSuffix(name, suffix) && !strings.Contains(name, "/")
		}
	}
	return func(name string) bool {
		ok, _ := path.Match(elem, name)
		return ok
	}
}
